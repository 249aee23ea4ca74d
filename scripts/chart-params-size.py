#!/usr/bin/env python3
"""How large the parameter claim (the chart's paramsFetch Job) must be: the files `params fetch`
downloads for the sector sizes and proof kinds, and the R1CS matrices files the Job can record
beside them, plus headroom.

Where the numbers come from:
- Which files: Filecoin's parameters.json (storage-proofs-core's copy, the manifest `params
  fetch` uses: filecoin/src/fetch.rs), the files of each kind at each sector size.
  parameters.json lists names, CIDs and digests, not sizes.
- Their sizes: a `.params` file is bellperson's `Parameters::write`: the verifying key, then
  five point vectors (h, l, a, b_g1, b_g2), each a u32 count and its points uncompressed, 96
  bytes a G1 point and 192 a G2 point, the same sizes as in memory. Those point bytes are the
  proving-key bytes committed per registered proof in model/src/sizing/shapes.rs (counted from
  the circuits by the prover's tests). The verifying key (also the `.vk` file) is 6 points (868
  bytes with its count) and 96 bytes per public input.
- The matrices files: the figures measured and recorded in the docs (a matrices file is the
  matrices as they lie in memory): PoRep 6.5 GiB at 32 and 64 GiB (docs/filecoin.md, "R1CS
  matrices file"; docs/operating.md), SnapDeals 4.0 / 4.2 GiB at 32 / 64 GiB (docs/operating.md,
  "SnapDeals at 32 and 64 GiB"), WindowPoSt 10.1 GiB at 32 GiB (docs/filecoin.md,
  docs/prover-daemon.md), WinningPoSt a few MiB (counted as 64 MiB).
- Headroom: 10%, for the filesystem (ext4 keeps 5% for root, and the Job runs as uid 65532)
  and its metadata; rounded up to a multiple of 16 GiB.

    scripts/chart-params-size.py                          # the chart's default sizes and kinds
    scripts/chart-params-size.py --sector-size 64GiB --kind porep --kind snap
    scripts/chart-params-size.py --without-matrices       # the parameter files alone
    scripts/chart-params-size.py --check                  # fail if values.yaml's default claim is smaller,
                                                          # or its comment or the chart README gives other figures

parameters.json is found through Cargo.lock's storage-proofs-core version in
${CARGO_HOME:-~/.cargo}/registry/src/*/ (`cargo fetch --locked` puts it there), or given with
--manifest. Standard library only. Exit 0, 1 when the check fails or a number is missing, 2 for
a bad option.
"""
import argparse
import json
import math
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chart_values  # noqa: E402

ROOT = chart_values.ROOT
GIB = 1 << 30
MIB = 1 << 20
HEADROOM = 0.10
ROUND_TO_GIB = 16
SIZES = {"2KiB": 2 << 10, "8MiB": 8 << 20, "512MiB": 512 << 20, "32GiB": 32 << 30, "64GiB": 64 << 30}
KINDS = ["porep", "snap", "window-post", "winning-post"]
# The registered proof each kind fetches (filecoin/src/fetch.rs: seal_proof_of_size,
# update_proof_of_size, post_proof_of_size).
PROOF = {
    "porep": "StackedDrg{}V1_1",
    "snap": "StackedDrg{}V1",
    "window-post": "StackedDrgWindow{}V1_2",
    "winning-post": "StackedDrgWinning{}V1",
}
# File-name prefixes of each kind's files in parameters.json. The two PoSt kinds share one
# prefix (fallback PoSt, window and winning at each size), and parameters.json does not say
# which file is which; SnapDeals' is the update without "poseidon" (update_identifier).
PREFIX = {
    "porep": "v28-stacked-proof-of-replication-",
    "snap": "v28-empty-sector-update-merkletree-",
    "window-post": "v28-proof-of-spacetime-fallback-",
    "winning-post": "v28-proof-of-spacetime-fallback-",
}
# Matrices files, in bytes, as the docs record them (see the docstring).
MATRICES = {
    ("porep", "2KiB"): 141 * MIB,
    ("porep", "32GiB"): int(6.5 * GIB),
    ("porep", "64GiB"): int(6.5 * GIB),
    ("snap", "32GiB"): int(4.0 * GIB),
    ("snap", "64GiB"): int(4.2 * GIB),
    ("window-post", "32GiB"): int(10.1 * GIB),
    **{("winning-post", size): 64 * MIB for size in SIZES},
}
VK_FIXED = 3 * 96 + 3 * 192 + 4  # alpha_g1, beta_g1, delta_g1; beta_g2, gamma_g2, delta_g2; ic count
VECTOR_COUNTS = 5 * 4  # the five vectors' u32 counts


def fail(message, code=1):
    print(f"chart-params-size: {message}", file=sys.stderr)
    sys.exit(code)


def find_manifest():
    lock = (ROOT / "Cargo.lock").read_text()
    match = re.search(r'name = "storage-proofs-core"\nversion = "([^"]+)"', lock)
    if not match:
        fail("Cargo.lock names no storage-proofs-core: give --manifest")
    cargo_home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    found = sorted(cargo_home.glob(f"registry/src/*/storage-proofs-core-{match.group(1)}/parameters.json"))
    if not found:
        fail(f"no storage-proofs-core-{match.group(1)}/parameters.json under {cargo_home}/registry/src: "
             "run `cargo fetch --locked`, or give --manifest")
    return found[0]


def proving_key_rows():
    """Registered proof -> (public inputs, proving-key point bytes), from
    model/src/sizing/shapes.rs."""
    text = (ROOT / "model/src/sizing/shapes.rs").read_text()
    rows = re.findall(r'row\(\s*"([^"]+)",\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),?\s*\)', text)
    if len(rows) < 10:
        fail(f"found {len(rows)} rows in model/src/sizing/shapes.rs: the reader no longer matches it")
    return {proof: (int(inputs), int(params)) for proof, _, _, inputs, params in rows}


def parse_quantity(text):
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?", str(text))
    if not match:
        fail(f"cannot read the quantity {text!r}")
    factor = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50,
              "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}[match.group(2)]
    return float(match.group(1)) * factor


def plan(sizes, kinds, matrices, manifest):
    """(lines of the table, parameter bytes, matrices bytes)."""
    rows = proving_key_rows()
    lines = []
    params_total = matrices_total = 0
    for size in sizes:
        for kind in kinds:
            proof = PROOF[kind].format(size)
            if proof not in rows:
                fail(f"{proof}: model/src/sizing/shapes.rs has no counts for it, so its file size is not known here")
            inputs, point_bytes = rows[proof]
            vk = VK_FIXED + 96 * inputs
            files = sorted(name for name, entry in manifest.items()
                           if name.startswith(PREFIX[kind]) and entry["sector_size"] == SIZES[size])
            pairs = 2 if kind in ("window-post", "winning-post") else 1
            if len(files) != 2 * pairs or sum(f.endswith(".params") for f in files) != pairs:
                fail(f"parameters.json lists {files} for {kind} at {size}; expected {pairs} .params and .vk pair(s)")
            params = vk + VECTOR_COUNTS + point_bytes
            params_total += params + vk
            names = [f for f in files if f.endswith(".params")]
            # The PoSt pair: their common prefix once, then each file's circuit hash.
            name = names[0] if pairs == 1 else (
                f"one of {PREFIX[kind]}...-{{{', '.join(n.rsplit('-', 1)[1][:12] + '...' for n in names)}}}")
            lines.append(f"{kind:13} {size:6} {proof:27} .params {params:>15,} B + .vk {vk:>10,} B  {name}")
            if matrices:
                if (kind, size) not in MATRICES:
                    fail(f"no recorded matrices file size for {kind} at {size}: use --without-matrices")
                matrices_total += MATRICES[(kind, size)]
                lines.append(f"{'':13} {'':6} {'matrices (docs)':27} {MATRICES[(kind, size)]:>23,} B")
    return lines, params_total, matrices_total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sector-size", action="append", choices=list(SIZES), dest="sizes")
    parser.add_argument("--kind", action="append", choices=KINDS, dest="kinds")
    parser.add_argument("--without-matrices", action="store_true")
    parser.add_argument("--manifest", type=Path)
    parser.add_argument("--check", action="store_true",
                        help="fail if values.yaml's paramsFetch.createPersistentVolumeClaim.size is below "
                             "what its default sectorSizes and kinds need (matrices included), or its "
                             "comment does not give these figures")
    args = parser.parse_args()
    values = chart_values.load_values()["paramsFetch"]
    if args.check and (args.sizes or args.kinds or args.without_matrices):
        fail("--check takes the chart's defaults: no --sector-size, --kind or --without-matrices", 2)
    sizes = args.sizes or values["sectorSizes"]
    kinds = args.kinds or values["kinds"]
    manifest_path = args.manifest or find_manifest()
    manifest = json.loads(manifest_path.read_text())
    lines, params, matrices = plan(sizes, kinds, not args.without_matrices, manifest)
    total = params + matrices
    required = total * (1 + HEADROOM)
    request = math.ceil(required / GIB / ROUND_TO_GIB) * ROUND_TO_GIB
    print(f"sector sizes {', '.join(sizes)}; kinds {', '.join(kinds)}; files from {manifest_path}")
    print("\n".join(lines))
    print(f"parameter files: {params:,} B = {params / GIB:.1f} GiB ({params / 1e9:.1f} GB)")
    if not args.without_matrices:
        print(f"matrices files:  {matrices:,} B = {matrices / GIB:.1f} GiB")
    print(f"total {total / GIB:.1f} GiB; with {HEADROOM:.0%} headroom {required / GIB:.1f} GiB: "
          f"request {request}Gi")
    if args.check:
        default = values["createPersistentVolumeClaim"]["size"]
        if parse_quantity(default) < required:
            fail(f"charts/proofpipe/values.yaml: paramsFetch.createPersistentVolumeClaim.size {default} is below "
                 f"the {required / GIB:.1f} GiB the defaults need: set it to {request}Gi and update its comment")
        text = (chart_values.CHART / "values.yaml").read_text()
        comment = re.search(r"((?:^ *#.*\n)+) *size: ", text, re.M)
        wanted = [f"{params / GIB:.1f} GiB", f"{matrices / GIB:.1f} GiB", f"{required / GIB:.1f} GiB"]
        missing = [w for w in wanted if not comment or w not in comment.group(1)]
        if missing:
            fail(f"charts/proofpipe/values.yaml: the comment above paramsFetch.createPersistentVolumeClaim.size "
                 f"must give the figures {wanted} (missing {missing}): the files, the matrices, with headroom")
        readme = (chart_values.CHART / "README.md").read_text()
        missing = [w for w in (default, *wanted[:2]) if w not in readme]
        if missing:
            fail(f"charts/proofpipe/README.md must give the default claim {default} and its figures {wanted[:2]} "
                 f"(missing {missing})")
        print(f"ok: the default claim {default} holds them ({required / GIB:.1f} GiB needed)")


if __name__ == "__main__":
    main()
