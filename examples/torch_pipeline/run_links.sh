#!/usr/bin/env bash
# The PyTorch pipeline over shaped links (docs/LINKS.md): tools/links puts each stage in its own
# network namespace and starts it with mpirun (a launcher only here: the stages talk through
# torch.distributed's gloo over TCP, bound to each namespace's link interface, and meet at
# stage 0's link address). Runs the plain runtime and pipecodec's with POLICY at RATE and
# prints each run's summary line (training seconds, accuracy, bytes per step) and ledger.
#   examples/torch_pipeline/run_links.sh PYTHON [RATE] [POLICY] [-- driver options]
# PYTHON: an interpreter with torch, numpy and pipecodec installed (e.g. tools/test-python's
# build/pyvenv/bin/python). Default RATE 200mbit, POLICY the best of docs/LINKS.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${1:?usage: run_links.sh PYTHON [RATE] [POLICY] [-- driver options]}
rate=${2:-200mbit} policy=${3:-fwd=quant:bits=2; bwd=quant:bits=2}
shift $(($# < 3 ? $# : 3))
[ "${1:-}" = -- ] && shift
# Stage 0's address on link 0 (tools/links: link K is 10.231.(K+1).0/24, .1 on its left stage).
init=tcp://10.231.1.1:29500
opts=(--init-method "$init" --hidden 1024 --batch 128 --train 12800 --test 2000 --epochs 1 "$@")
for run in plain compressed; do
  script=$here/plain_pipeline.py args=(--name "$run")
  [ "$run" = compressed ] && script=$here/pipeline.py args=(--name "$run" --policy "$policy")
  echo "run_links: $run at $rate"
  OPENBLAS_NUM_THREADS=1 "$root/tools/links" run --stages 4 --rate "$rate" --timeout 1200 \
    --mpi-arg -x --mpi-arg GLOO_SOCKET_IFNAME=pcmpi -- "$python" "$script" "${opts[@]}" "${args[@]}"
done
