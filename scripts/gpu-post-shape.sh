#!/usr/bin/env bash
# On the GPU machine: the real 32 GiB PoSt circuits (filecoin-proofs 19.1's FallbackPoStCircuit:
# the WinningPoSt, and one WindowPoSt partition as curio sends it) through the pipeline, with
# timing-only parameters of their committed counts and placeholder vanilla proofs of their exact
# shape (filecoin/src/post/shape.rs): no sectors and no parameter files needed. No proof
# verifies; timing only. What it answers: how long a WinningPoSt takes once its parameters are
# resident (the seed engine: 0.8 s), and a WindowPoSt partition.
#
#   scripts/gpu-post-shape.sh OUT_DIR        # device-bin/proofpipe-prover from scripts/cuda-build.sh
#
# For each proof of PROOFS: its plan (plan-*.txt), then one bench call of RUNS timed runs after a
# one-partition warm-up (the warm-up pays the first base uploads; each timed run is one partition,
# synthesis included: what a request waits for with the parameters resident), with its JSON
# reports (one line per run, .json), text (.txt) and log (.log).
#
# Env: PROOFS ("StackedDrgWinning32GiBV1 StackedDrgWindow32GiBV1_2"), RUNS (3), PROVER.
set -uo pipefail
out=${1:?usage: scripts/gpu-post-shape.sh OUT_DIR}
prover=${PROVER:-device-bin/proofpipe-prover}
proofs=${PROOFS:-StackedDrgWinning32GiBV1 StackedDrgWindow32GiBV1_2}
runs=${RUNS:-3}
mkdir -p "$out"
source "$(dirname "$0")/gpu-machine.sh" "$out"

status=0
for proof in $proofs; do
    "$prover" plan --post-shape "$proof" --gpus 1 > "$out/plan-$proof.txt" 2>&1 \
        || echo "plan for $proof failed: $(tail -1 "$out/plan-$proof.txt")"
    started=$(date +%s)
    "$prover" bench --post-shape "$proof" --runs "$runs" --json \
        > "$out/bench-$proof.txt" 2> "$out/bench-$proof.log"
    rc=$?
    echo "$proof: bench exit $rc in $(( $(date +%s) - started )) s"
    # Each run's report is the last line of its block: the lines that are JSON objects.
    grep '^{' "$out/bench-$proof.txt" > "$out/bench-$proof.json" || true
    [[ $rc == 0 ]] || { status=1; tail -3 "$out/bench-$proof.log"; }
done

# The table: each proof's seconds per request (one partition, parameters resident), median and
# spread of the timed runs, and the stages' share of it.
python3 - "$out" > "$out/summary.txt" <<'EOF' || echo "(no python3: see the .txt files)" > "$out/summary.txt"
import glob, json, os, statistics, sys
print("| proof | constraints | runs | seconds per partition: median (min-max) | synthesis busy | GPU stage busy | peak RSS GiB | predicted GiB |")
print("|---|---|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "bench-*.json"))):
    runs = [json.loads(line) for line in open(path) if line.strip()]
    if not runs:
        continue
    secs = [r["pipeline"]["seconds_per_proof"] for r in runs]
    busy = lambda stage: statistics.median(r["pipeline"]["busy"].get(stage, 0) for r in runs)
    peak = max(r["pipeline"].get("peak_rss_bytes") or 0 for r in runs)
    print("| %s | %d | %d | %.3f (%.3f-%.3f) | %.0f%% | %.0f%% | %.1f | %.1f |" % (
        runs[0]["post_shape"]["post_proof"], runs[0]["constraints"], len(runs),
        statistics.median(secs), min(secs), max(secs), 100 * busy("synthesis"), 100 * busy("gpu"),
        peak / 2**30, runs[0]["plan"]["predicted_peak_bytes"] / 2**30))
print("\nseed engine (cuzk, ../shared/notes/anchors.md): WinningPoSt 0.8 s total")
EOF
cat "$out/summary.txt"
"$prover" --version > "$out/version.txt" 2>&1 || true
exit $status
