#!/usr/bin/env bash
# On the GPU machine: a PoRep sector sealed there (parameters from a random setup: NOT
# Filecoin's), then proved RUNS times on the CUDA backend and RUNS times on the CPU backend,
# each proof checked with verify_seal and compared with stock seal_commit_phase2 on the same
# C1 output in the same process. Summaries (one JSON object per run) go to OUT_DIR.
#   usage: scripts/gpu-porep.sh OUT_DIR [SIZE=2KiB] [RUNS=3]
#   (device-bin/proofpipe-prover from scripts/cuda-build.sh)
set -euo pipefail
out=${1:?usage: scripts/gpu-porep.sh OUT_DIR [SIZE] [RUNS]}
size=${2:-2KiB}
runs=${3:-3}
bin=${PROOFPIPE_PROVER:-device-bin/proofpipe-prover}
work=$(mktemp -d)
export FIL_PROOFS_PARENT_CACHE="$work/parents"
mkdir -p "$out"
start=$(date +%s)
"$bin" --log warn porep-testdata --seal-proof "$size" --params-dir "$work/params" \
  --work-dir "$work/seal" --out "$work/c1.json" > "$out/testdata-$size.txt"
echo "test data made in $(( $(date +%s) - start )) s" >> "$out/testdata-$size.txt"
for backend in cuda cpu; do
  for run in $(seq 1 "$runs"); do
    if [ "$backend" = cpu ]; then export PROOFPIPE_BACKEND=cpu; else unset PROOFPIPE_BACKEND; fi
    "$bin" --log warn prove --porep-c1 "$work/c1.json" --params-dir "$work/params" \
      --out "$work/proof-$backend-$run" --verify --compare-stock --json \
      | tail -1 > "$out/prove-$size-$backend-$run.json"
  done
done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.csv" || true
nproc > "$out/cores.txt"
rm -rf "$work"
