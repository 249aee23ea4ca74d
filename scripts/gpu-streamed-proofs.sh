#!/usr/bin/env bash
# On the GPU machine: real 2 KiB Filecoin proofs whose bases stream from page-locked host
# memory, each checked by filecoin-proofs-api's verifier. Parameters come from a random setup
# (NOT Filecoin's) and the sectors are sealed here, as scripts/filecoin-testdata.sh makes them.
#
#   scripts/gpu-streamed-proofs.sh OUT_DIR
#
# Each input (a PoRep C2, a WinningPoSt, one WindowPoSt partition as curio sends it, then a
# SnapDeals update: SnapDeals' setup is the slowest, so it comes last) is proved with
# `prove --verify --json --stream-bases` (every query streamed, on the whole card); the PoRep
# also under PROOFPIPE_GPU_MEMORY=$PARTIAL_CAP, where the planner streams some queries and keeps
# the rest (the backend enforcing the cap). At 2 KiB a cap cannot force streaming for the
# others: their bases are smaller than a streamed MSM's buffers, so every cap that fits them
# keeps them resident. The summary's `gpu_placement` says which queries streamed; the script
# fails when a proof does not verify, ran on the CPU, or streamed nothing.
#
# Env: KINDS ("porep post snap"), PARTIAL_CAP (2600MiB: h, l, a and b_g2 streamed; `plan
# --porep-shape 2KiB --gpus 1 --gpu-memory CAP` shows a cap's choice), PROVER
# (device-bin/proofpipe-prover from scripts/cuda-build.sh).
set -uo pipefail
out=${1:?usage: scripts/gpu-streamed-proofs.sh OUT_DIR}
prover=${PROVER:-device-bin/proofpipe-prover}
partial_cap=${PARTIAL_CAP:-2600MiB}
kinds=${KINDS:-porep post snap}
mkdir -p "$out"
source "$(dirname "$0")/gpu-machine.sh" "$out"
work=$(mktemp -d)
export FIL_PROOFS_PARENT_CACHE="$work/parents"
params="$work/params"
status=0

make_data() {
    local started rc
    started=$(date +%s)
    "$prover" --log warn "$@" >> "$out/testdata.txt" 2>&1
    rc=$?
    echo "$1: exit $rc in $(( $(date +%s) - started )) s" | tee -a "$out/testdata.txt"
    return $rc
}

# prove NAME MODE INPUT_FLAG INPUT: MODE `all` (--stream-bases) or a GPU memory cap.
prove() {
    local name=$1 mode=$2 flag=$3 input=$4 rc
    local extra=() env=()
    if [[ $mode == all ]]; then extra=(--stream-bases); else env=("PROOFPIPE_GPU_MEMORY=$mode"); fi
    env "${env[@]}" PROOFPIPE_REQUIRE_GPU=1 "$prover" --log info prove "$flag" "$input" \
        --params-dir "$params" --out "$work/proof-$name-$mode" --verify --json "${extra[@]}" \
        > "$work/prove-$name-$mode.txt" 2> "$work/prove-$name-$mode.log"
    rc=$?
    # One file per proof (the device returns a limited number): the summary, and the log
    # only when something failed.
    tail -1 "$work/prove-$name-$mode.txt" > "$out/prove-$name-$mode.json"
    [[ $rc == 0 ]] || cp "$work/prove-$name-$mode.log" "$out/"
    python3 - "$out/prove-$name-$mode.json" "$name" "$mode" "$rc" <<'EOF' || status=1
import json, sys
path, name, mode, rc = sys.argv[1:]
try:
    s = json.load(open(path))
except Exception as e:
    print(f"{name} ({mode}): exit {rc}, no summary ({e})"); sys.exit(1)
verdict = next((s[k] for k in ("verify_seal", "verified", "verify_empty_sector_update_proof") if k in s), None)
placement = s.get("gpu_placement") or {}
streamed = [q for q, p in placement.items() if p == "streamed"]
print(f"{name} ({mode}): exit {rc}, backend {s.get('backend')}, verified by Filecoin: {verdict}, "
      f"streamed: {','.join(streamed) or 'none'}, {s.get('seconds', 0):.2f} s")
sys.exit(0 if rc == "0" and verdict is True and streamed and s.get("backend") == "cuda" else 1)
EOF
}

for kind in $kinds; do
    case $kind in
    porep)
        make_data porep-testdata --seal-proof 2KiB --params-dir "$params" --work-dir "$work/seal" \
            --out "$work/c1.json" || { status=1; continue; }
        prove porep-2KiB all --porep-c1 "$work/c1.json"
        prove porep-2KiB "$partial_cap" --porep-c1 "$work/c1.json"
        ;;
    post)
        [[ -s "$work/c1.json" ]] || { echo "post needs the porep kind first"; status=1; continue; }
        sector1=(--sector-dir "$work/seal" --porep-c1 "$work/c1.json")
        make_data post-testdata --post-proof StackedDrgWinning2KiBV1 --params-dir "$params" \
            "${sector1[@]}" --out "$work/winning.json" || { status=1; continue; }
        prove winning-post-2KiB all --winning-post-vanilla "$work/winning.json"
        # curio's request: partition 0 of a deadline of three sectors (two sealed here).
        make_data post-testdata --post-proof StackedDrgWindow2KiBV1_2 --params-dir "$params" \
            "${sector1[@]}" --seal-sectors 2 --work-dir "$work/post" --partition-index 0 \
            --out "$work/window-p0.json" || { status=1; continue; }
        prove window-post-2KiB-p0 all --window-post-vanilla "$work/window-p0.json"
        ;;
    snap)
        [[ -s "$work/c1.json" ]] || { echo "snap needs the porep kind first"; status=1; continue; }
        make_data snap-testdata --update-proof 2KiB --params-dir "$params" --sector-dir "$work/seal" \
            --porep-c1 "$work/c1.json" --work-dir "$work/snap" --out "$work/snap.json" \
            || { status=1; continue; }
        prove snap-2KiB all --snap-vanilla "$work/snap.json"
        ;;
    *) echo "unknown kind $kind"; status=1 ;;
    esac
done
"$prover" --version > "$out/version.txt" 2>&1 || true
rm -rf "$work"
exit $status
