"""Counts the lines pipecodec changes in a torch program: the lines starting with + or - in
`diff -u plain_pipeline.py pipeline.py` (here from difflib; or of two files given as
arguments), headers excluded. Prints the diff and the count."""
import difflib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def unified_diff(plain=os.path.join(HERE, "plain_pipeline.py"), coded=os.path.join(HERE, "pipeline.py")):
    def lines(path):
        with open(path) as f:
            return f.readlines()

    return list(difflib.unified_diff(lines(plain), lines(coded), os.path.basename(plain), os.path.basename(coded)))


def changed_lines(diff):
    return sum(1 for line in diff[2:] if line[:1] in "+-")  # diff[:2] are the ---/+++ headers


if __name__ == "__main__":
    diff = unified_diff(*sys.argv[1:3])
    sys.stdout.writelines(diff)
    print(f"{changed_lines(diff)} changed lines")
