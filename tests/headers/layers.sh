#!/usr/bin/env bash
# The library's layering, from its #include lines: core/ includes only core/; the backends
# (host/, cuda/) include core/ and themselves, never each other, so both accept and size
# exactly what core/ defines; only policy/ and the umbrella headers combine them. Nothing in
# include/ includes a framework (torch, Python, MPI, NCCL).
#   layers.sh INCLUDE_DIR    prints each violation; exits 1 if there is one
set -u
root=$(cd "${1:?usage: layers.sh INCLUDE_DIR}/pipecodec" && pwd)
allowed() {  # layer of the including file, layer of the included file
  case $1 in
    core) [ "$2" = core ] ;;
    host | cuda) [ "$2" = core ] || [ "$2" = "$1" ] ;;
    *) true ;;
  esac
}
bad=0 files=0 includes=0
while IFS= read -r f; do
  files=$((files + 1))
  dir=$(dirname "$f")
  from=${f#"$root"/}
  from=${from%%/*}
  while IFS= read -r inc; do
    includes=$((includes + 1))
    target=$(realpath -m "$dir/$inc")
    case $target in
      "$root"/*) ;;
      *) echo "$f: includes $inc, outside include/pipecodec"; bad=1; continue ;;
    esac
    to=${target#"$root"/}
    to=${to%%/*}
    allowed "$from" "$to" || { echo "$f: a $from/ header includes $inc ($to/)"; bad=1; }
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(torch|Python\.h|pybind11|nanobind|mpi\.h|nccl\.h)' "$f"; then
    echo "$f: includes a framework header"
    bad=1
  fi
done < <(find "$root" -name '*.hpp' -o -name '*.cuh' | sort)
echo "layers: $files headers, $includes project includes checked"
[ "$includes" -gt 0 ] || { echo "layers: no include found (wrong directory?)"; exit 1; }
exit $bad
