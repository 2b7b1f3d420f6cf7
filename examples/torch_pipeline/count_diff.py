"""Counts the lines pipecodec changes in the torch pipeline: the lines starting with + or - in
`diff -u plain_pipeline.py pipeline.py` (here from difflib), headers excluded. Prints the diff
and the count."""
import difflib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def unified_diff():
    def lines(name):
        with open(os.path.join(HERE, name)) as f:
            return f.readlines()

    return list(difflib.unified_diff(lines("plain_pipeline.py"), lines("pipeline.py"),
                                     "plain_pipeline.py", "pipeline.py"))


def changed_lines(diff):
    return sum(1 for line in diff[2:] if line[:1] in "+-")  # diff[:2] are the ---/+++ headers


if __name__ == "__main__":
    diff = unified_diff()
    sys.stdout.writelines(diff)
    print(f"{changed_lines(diff)} changed lines")
