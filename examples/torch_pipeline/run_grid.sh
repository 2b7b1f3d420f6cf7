#!/usr/bin/env bash
# The README's table: four rows of the C++ study grid (tools/demo-grids `grid`) at full size
# (4 stages x 1024, 2 epochs), one run at a time, for each seed given (default 1).
# usage: examples/torch_pipeline/run_grid.sh [SEED...]   logs: $OUT (default torch-grid-out)/ROW-sSEED.log
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
out=${OUT:-torch-grid-out}
rows=(
  "none|"
  "quant2-bwd|bwd=quant:bits=2"
  "topk10-fwd|fwd=topk:ratio=0.1,scope=row"
  "topk10-aqsgd|fwd=topk:ratio=0.1,scope=row+aqsgd(store=host,dtype=fp16); warmup=1epoch"
)
mkdir -p "$out"
for seed in "${@:-1}"; do
  for row in "${rows[@]}"; do
    IFS='|' read -r name policy <<<"$row"
    start=$SECONDS
    log="$out/$name-s$seed.log"
    "$python" "$here/pipeline.py" --name "$name" --policy "$policy" --seed "$seed" >"$log" 2>&1
    echo "$(tail -n 1 "$log") [seed $seed, $((SECONDS - start)) s wall]"
  done
done
