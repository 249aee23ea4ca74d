#!/usr/bin/env bash
# On the GPU machine: a 32 GiB PoSt sent while a 32 GiB PoRep proves on the same prover, planned
# as the daemon's urgent lane plans it (ADR 0026): the PoRep's plan first, the PoSt's pipeline in
# what it leaves, or after the PoRep when it does not fit. Timing-only parameters and placeholder
# partitions of the exact shapes (no sectors, no parameter files). What it answers: the PoSt's
# latency, and how much later the PoRep ends because of it, against both alone in the same call.
#
#   scripts/gpu-urgent.sh OUT_DIR winning   # WinningPoSt, 3 runs, each with both baselines
#   scripts/gpu-urgent.sh OUT_DIR window    # a WindowPoSt partition, 3 runs, 1 with baselines
#                                           # (a run takes ~2 min: the call stays under 10)
# The window case needs a host that holds both keys beside the PoRep's pipeline (44 + 57 GiB:
# about 200 GiB); on a 128 GiB one the bench refuses at once and says why (the daemon would
# serve that WindowPoSt only after the PoRep, loading its key in the PoRep's place).
# Env: RUNS (3), AFTER (seconds into the PoRep the PoSt is sent, 20), RESERVE (--urgent-reserve,
# none), PROVER (device-bin/proofpipe-prover from scripts/cuda-build.sh).
set -uo pipefail
out=${1:?usage: scripts/gpu-urgent.sh OUT_DIR winning|window}
which=${2:?usage: scripts/gpu-urgent.sh OUT_DIR winning|window}
prover=${PROVER:-device-bin/proofpipe-prover}
runs=${RUNS:-3}
after=${AFTER:-20}
case $which in
    winning) post=StackedDrgWinning32GiBV1 extra=() ;;
    # Its runs are long; one run makes the baselines, and the warm-up is left out (the first
    # baseline pays the first base uploads, and says so in its report).
    window) post=StackedDrgWindow32GiBV1_2 extra=(--urgent-baselines 1 --no-warmup) ;;
    *) echo "winning or window, not $which" >&2; exit 2 ;;
esac
[[ -n "${RESERVE:-}" ]] && extra+=(--urgent-reserve "$RESERVE")
mkdir -p "$out"
source "$(dirname "$0")/gpu-machine.sh" "$out"

# GPU memory every second beside the run: what the card held, whatever the plans said.
nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader -l 1 > "$out/nvidia-smi-$which.csv" 2>&1 &
smi=$!
started=$(date +%s)
"$prover" bench --porep-shape 32GiB --synthesis matrices --urgent-post-shape "$post" \
    --urgent-after "$after" --runs "$runs" "${extra[@]}" --json \
    > "$out/urgent-$which.txt" 2> "$out/urgent-$which.log"
rc=$?
kill $smi 2>/dev/null
echo "$which: bench exit $rc in $(( $(date +%s) - started )) s"
grep '^{' "$out/urgent-$which.txt" > "$out/urgent-$which.json" || true
sed -n '/^summary/,$p' "$out/urgent-$which.txt"
grep '^run ' "$out/urgent-$which.txt"
[[ $rc == 0 ]] || tail -5 "$out/urgent-$which.log"
"$prover" --version > "$out/version.txt" 2>&1 || true
exit $rc
