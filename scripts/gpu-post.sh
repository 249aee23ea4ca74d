#!/usr/bin/env bash
# On the GPU machine: SECTORS sectors sealed there and PoSt parameters from a random setup (NOT
# Filecoin's), then a whole WindowPoSt of them, its partition 0 alone (curio's request) and a
# WinningPoSt of the first, each proved RUNS times on the CUDA backend and RUNS times on the CPU
# backend, checked with verify_window_post / verify_winning_post and compared with
# filecoin-proofs-api's own prover on the same input in the same process. Summaries (one JSON
# object per run) go to OUT_DIR.
#   usage: scripts/gpu-post.sh OUT_DIR [SIZE=2KiB] [RUNS=3] [SECTORS=3]
#   (device-bin/proofpipe-prover from scripts/cuda-build.sh; at 2 KiB to 512 MiB a WindowPoSt
#   partition has 2 sectors, so 3 sectors make 2 partitions)
set -euo pipefail
out=${1:?usage: scripts/gpu-post.sh OUT_DIR [SIZE] [RUNS] [SECTORS]}
size=${2:-2KiB}
runs=${3:-3}
sectors=${4:-3}
bin=${PROOFPIPE_PROVER:-device-bin/proofpipe-prover}
work=$(mktemp -d)
export FIL_PROOFS_PARENT_CACHE="$work/parents"
mkdir -p "$out"
start=$(date +%s)
"$bin" --log warn post-testdata --post-proof "StackedDrgWindow${size}V1_2" --params-dir "$work/params" \
  --seal-sectors "$sectors" --work-dir "$work/post" --out "$work/window.json" > "$out/testdata-$size.txt"
"$bin" --log warn post-testdata --post-proof "StackedDrgWinning${size}V1" --params-dir "$work/params" \
  --sector-dir "$work/post/sector-1" --porep-c1 "$work/post/sector-1/c1.json" \
  --out "$work/winning.json" >> "$out/testdata-$size.txt"
echo "test data made in $(( $(date +%s) - start )) s" >> "$out/testdata-$size.txt"
# curio's request for partition 0 of the same sectors: its sectors' vanilla proofs and
# partition_index 0.
all=()
for n in $(seq 1 "$sectors"); do
  all+=(--sector-dir "$work/post/sector-$n" --porep-c1 "$work/post/sector-$n/c1.json")
done
"$bin" --log warn post-testdata --post-proof "StackedDrgWindow${size}V1_2" --params-dir "$work/params" \
  "${all[@]}" --partition-index 0 --out "$work/window-p0.json" >> "$out/testdata-$size.txt"
for backend in cuda cpu; do
  for run in $(seq 1 "$runs"); do
    if [ "$backend" = cpu ]; then export PROOFPIPE_BACKEND=cpu; else unset PROOFPIPE_BACKEND; fi
    for input in window window-p0 winning; do
      kind=window; [ "$input" = winning ] && kind=winning
      "$bin" --log warn prove "--$kind-post-vanilla" "$work/$input.json" --params-dir "$work/params" \
        --out "$work/proof-$input-$backend-$run" --verify --compare-stock --json \
        | tail -1 > "$out/prove-$size-$input-$backend-$run.json"
    done
  done
done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.csv" || true
nproc > "$out/cores.txt"
rm -rf "$work"
