#!/usr/bin/env bash
# Makes the Filecoin test data once and prints its directory: 2 KiB PoRep parameters from a
# random setup (NOT Filecoin's: tests only; ~1 GB, ~10 min on 2 cores) and a 2 KiB sector sealed
# with filecoin-proofs-api, as lotus-bench's commit-2 file (c1-2KiB.json). Kept until removed;
# rebuilt whole when the C1 file (written last) is missing.
#   usage: scripts/filecoin-testdata.sh [DIR]   (default $PROOFPIPE_FILECOIN_TESTDATA, else target/filecoin-testdata)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-${PROOFPIPE_FILECOIN_TESTDATA:-target/filecoin-testdata}}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if [ ! -s "$dir/c1-2KiB.json" ]; then
  # A run cut short may have left a partial parameter file under its final name.
  rm -rf "$dir/params" "$dir/seal" "$dir/parents"
  start=$(date +%s)
  FIL_PROOFS_PARENT_CACHE="$dir/parents" cargo run --locked -q -p proofpipe-prover -- \
    porep-testdata --seal-proof 2KiB --params-dir "$dir/params" --work-dir "$dir/seal" \
    --out "$dir/c1-2KiB.json" --log warn >&2
  echo "filecoin test data made in $(( $(date +%s) - start )) s: $dir" >&2
fi
echo "$dir"
