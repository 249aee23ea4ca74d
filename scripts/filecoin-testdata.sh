#!/usr/bin/env bash
# Makes the Filecoin test data once and prints its directory: 2 KiB PoRep parameters from a
# random setup (NOT Filecoin's: tests only; ~1 GB, ~3 min on 2 cores) and a 2 KiB sector sealed
# with filecoin-proofs-api, as lotus-bench's commit-2 file (c1-2KiB.json); then 2 KiB SnapDeals
# (EmptySectorUpdate) parameters from a random setup, that sector snap-updated with new data
# (snap-2KiB.json) and a second sector sealed and snap-updated (snap-2KiB-other.json): the
# commitments and vanilla partition proofs curio sends for a SnapDeals proof; then 2 KiB
# WindowPoSt and WinningPoSt parameters from a random setup, two more sectors sealed, and the
# vanilla sector proofs curio sends for a WindowPoSt of the three (window-post-2KiB.json: 2
# partitions of 2 sectors; window-post-2KiB-v1.json under the V1 proof) and WinningPoSts of
# sectors 1 and 2 (winning-post-2KiB.json, winning-post-2KiB-other.json). Kept until removed;
# the PoRep part is rebuilt whole when the C1 file (written last) is missing, the SnapDeals
# part when snap.version (written last) is missing or differs from SNAP_VERSION, the PoSt part
# likewise with post.version and POST_VERSION.
#   usage: scripts/filecoin-testdata.sh [DIR]   (default $PROOFPIPE_FILECOIN_TESTDATA, else target/filecoin-testdata)
set -euo pipefail
cd "$(dirname "$0")/.."
# Bump when the SnapDeals test data changes, so that kept directories make it again.
SNAP_VERSION=1
# Bump when the PoSt test data changes.
POST_VERSION=1
dir="${1:-${PROOFPIPE_FILECOIN_TESTDATA:-target/filecoin-testdata}}"
# The prover: PROOFPIPE_PROVER_BIN when set (scripts/test.sh builds it first, so that the data
# is made while the tests compile), else through cargo run.
prover() {
  if [ -n "${PROOFPIPE_PROVER_BIN:-}" ]; then
    "$PROOFPIPE_PROVER_BIN" "$@"
  else
    cargo run --locked -q -p proofpipe-prover -- "$@"
  fi
}
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if [ ! -s "$dir/c1-2KiB.json" ]; then
  # A run cut short may have left a partial parameter file under its final name.
  rm -rf "$dir/params" "$dir/seal" "$dir/parents" "$dir/snap.version" "$dir/post.version"
  start=$(date +%s)
  FIL_PROOFS_PARENT_CACHE="$dir/parents" prover \
    porep-testdata --seal-proof 2KiB --params-dir "$dir/params" --work-dir "$dir/seal" \
    --out "$dir/c1-2KiB.json" --log warn >&2
  echo "filecoin test data made in $(( $(date +%s) - start )) s: $dir" >&2
fi
if [ "$(cat "$dir/snap.version" 2>/dev/null)" != "$SNAP_VERSION" ]; then
  rm -rf "$dir/snap" "$dir/snap-other" "$dir/snap-2KiB.json" "$dir/snap-2KiB-other.json" \
    "$dir"/params/v28-empty-sector-update-*
  start=$(date +%s)
  snap() { FIL_PROOFS_PARENT_CACHE="$dir/parents" prover \
    snap-testdata --update-proof 2KiB --params-dir "$dir/params" --log warn "$@" >&2; }
  # The PoRep test sector, updated.
  snap --sector-dir "$dir/seal" --porep-c1 "$dir/c1-2KiB.json" --work-dir "$dir/snap" \
    --out "$dir/snap-2KiB.json"
  # Another sector (number 2, other data and ticket), sealed and updated: its vanilla proofs
  # must not prove the first one's update.
  snap --work-dir "$dir/snap-other" --sector-number 2 --seed 1 --out "$dir/snap-2KiB-other.json"
  echo "$SNAP_VERSION" > "$dir/snap.version"
  echo "filecoin SnapDeals test data made in $(( $(date +%s) - start )) s: $dir" >&2
fi
if [ "$(cat "$dir/post.version" 2>/dev/null)" != "$POST_VERSION" ]; then
  rm -rf "$dir/post" "$dir"/window-post-2KiB*.json "$dir"/winning-post-2KiB*.json \
    "$dir"/params/v28-proof-of-spacetime-fallback-*
  start=$(date +%s)
  post() { FIL_PROOFS_PARENT_CACHE="$dir/parents" prover \
    post-testdata --params-dir "$dir/params" --log warn "$@" >&2; }
  sector1=(--sector-dir "$dir/seal" --porep-c1 "$dir/c1-2KiB.json")
  sector2=(--sector-dir "$dir/post/sector-2" --porep-c1 "$dir/post/sector-2/c1.json")
  sector3=(--sector-dir "$dir/post/sector-3" --porep-c1 "$dir/post/sector-3/c1.json")
  # WindowPoSt (V1_2, what curio proves today) of the PoRep test sector and sectors 2 and 3,
  # sealed here: at 2 sectors per 2 KiB partition, 2 partitions.
  post --post-proof StackedDrgWindow2KiBV1_2 "${sector1[@]}" --seal-sectors 2 \
    --work-dir "$dir/post" --out "$dir/window-post-2KiB.json"
  # The same sectors under V1, whose challenges depend on a sector's place in the set.
  post --post-proof StackedDrgWindow2KiBV1 "${sector1[@]}" "${sector2[@]}" "${sector3[@]}" \
    --seed 1 --out "$dir/window-post-2KiB-v1.json"
  # WinningPoSt of the PoRep test sector, and of sector 2.
  post --post-proof StackedDrgWinning2KiBV1 "${sector1[@]}" --out "$dir/winning-post-2KiB.json"
  post --post-proof StackedDrgWinning2KiBV1 "${sector2[@]}" --seed 2 \
    --out "$dir/winning-post-2KiB-other.json"
  echo "$POST_VERSION" > "$dir/post.version"
  echo "filecoin PoSt test data made in $(( $(date +%s) - start )) s: $dir" >&2
fi
echo "$dir"
