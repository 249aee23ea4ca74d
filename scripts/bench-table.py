#!/usr/bin/env python3
"""Prints docs/benchmarks.md's current table from the committed reports in bench-results/.

The rows are listed in bench-results/current.json (the index); every figure is read from its
report here, never typed into the index or the page. docs/benchmarks.md shows this script's
output under `<!-- docs-check: output -->`, so scripts/docs-check.py fails when the page and the
reports disagree. A new report needs only a row in the index; then run this script and paste
its output into the page (or let docs-check show the difference).

A report is one JSON object per run, one after another (`bench --json` writes one line per run;
cargo-bench reports are one object). An index row:

    {
      "what": "what was measured: kind, size, inputs (say 'per proof' or 'per partition' in 'per')",
      "per": "per proof",                     # said once, after the figure
      "reports": ["2026-12-07-....json"],     # files in bench-results/, read in order
      "where": {"/gpu_memory_cap_bytes": null},  # optional: only the runs whose values match
      "each": "/runs",                        # optional: the samples are this list of each run
      "figure": "/pipeline/seconds",          # JSON pointer (RFC 6901) to each sample's number
      "unit": "s",                            # printed after the number ("x" for a ratio)
      "digits": 1,                            # decimals (default 1)
      "card": "NVIDIA H200; 16 cores",        # only for reports without a `machine` record
      "command": "scripts/gpu-post-shape.sh OUT", # only for reports without machine.command
      "headline": "32 GiB WinningPoSt",       # optional: the row is in --headline's table too
      "code": "366d02a (...)"                 # optional: the code state, where the report's
                                              # stamp cannot say it (a build of a dirty tree)
    }

The figure is the median of the samples, with their range and count; the card, the host and the
code state come from the report's `machine` record (GPU name and driver, CPU cores, memory
limit, commit) where it has one; an older report without one shows the index's `card` and
"not recorded" for the code state. The date is the report's file name's.

    scripts/bench-table.py                # prints the table
    scripts/bench-table.py --headline     # the rows with a "headline", shorter (README.md)
    scripts/bench-table.py [--headline] INDEX   # another index (tests)

Plain Python 3, standard library only. Exit 1 when a report or a pointer is missing.
"""
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench-results"
LINK_BASE = "../bench-results/"  # from docs/benchmarks.md
HEADER = ("| figure | what | card, host | code state | date | command | report |\n"
          "|---|---|---|---|---|---|---|")
HEADLINE_HEADER = ("| figure | what | card, host | code state | date |\n"
                   "|---|---|---|---|---|")


class Missing(Exception):
    pass


def records(path):
    """The JSON objects of a report, one after another (JSON lines or one object)."""
    text, decoder, found, i = path.read_text(encoding="utf-8"), json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return found
        value, i = decoder.raw_decode(text, i)
        found.append(value)


def pointer(value, path, where):
    """The value at a JSON pointer (RFC 6901)."""
    if path == "":
        return value
    for token in path.lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        elif isinstance(value, dict) and token in value:
            value = value[token]
        else:
            raise Missing(f"{where}: no {path}")
    return value


def number(value, digits):
    return f"{value:,.{digits}f}"


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def card_of(machine, row, where):
    if not machine:
        if "card" not in row:
            raise Missing(f"{where}: the report has no machine record and the index row no card")
        return row["card"] + " (the dated log's: not in the report)"
    gpus = machine.get("gpus")
    if isinstance(gpus, list) and gpus:
        names = sorted({f"{g.get('name', '?')} (driver {g.get('driver', '?')})" for g in gpus})
        card = (f"{len(gpus)} x " if len(gpus) > 1 else "") + ", ".join(names)
    else:
        card = "no GPU (a CPU benchmark)"
    host = [f"{machine['cpu_cores']} cores" if machine.get("cpu_cores") else None,
            machine.get("cpu_model")]
    limit = machine.get("memory_limit_bytes")
    if limit:
        host.append(f"{limit / 2**30:.0f} GiB limit")
    return "; ".join([card] + [part for part in host if part])


def code_state(machine):
    commit = (machine or {}).get("commit") or ""
    match = re.match(r"^([0-9a-f]{7,40})\b(.*)", commit)
    if not match:
        return "not recorded"
    rest = match.group(2)
    if "uncommitted" in rest:
        return match.group(1)[:7] + " + uncommitted docs edits"
    if rest.startswith("-dirty"):
        return match.group(1)[:7] + " + uncommitted changes"
    return match.group(1)[:7]


def row_of(row, index_path, headline=False):
    where = f"{index_path.name}: {row.get('what', '?')[:40]}"
    samples, machines = [], []
    for name in row["reports"]:
        path = RESULTS / name
        if not path.exists():
            raise Missing(f"{where}: no report bench-results/{name}")
        for number_, record in enumerate(records(path)):
            at = f"bench-results/{name}, run {number_ + 1}"
            if any(pointer(record, key, at) != value for key, value in row.get("where", {}).items()):
                continue
            machines.append(record.get("machine"))
            items = pointer(record, row["each"], at) if "each" in row else [record]
            samples += [float(pointer(item, row["figure"], at)) for item in items]
    if not samples:
        raise Missing(f"{where}: no run of its reports matches {row.get('where')}")
    digits, unit = row.get("digits", 1), row["unit"]
    value = number(statistics.median(samples), digits)
    figure = f"**{value} {unit}**".replace(" x**", "x**")
    if row.get("per"):
        figure += f" {row['per']}"
    if len(samples) > 1:
        spread = f"{number(min(samples), digits)}-{number(max(samples), digits)}"
        figure += f" ({spread}, median of {len(samples)})"
    else:
        figure += " (one run)"
    machine = machines[0]
    command = (machine or {}).get("command") or row.get("command")
    if not command:
        raise Missing(f"{where}: the report has no machine.command and the index row no command")
    dates = sorted({re.match(r"^(\d{4}-\d{2}-\d{2})", name).group(1) for name in row["reports"]})
    links = ", ".join(f"[{name}]({LINK_BASE}{name})" for name in row["reports"])
    if headline:
        return "| " + " | ".join(cell(text) for text in (
            figure, row["headline"], card_of(machine, row, where), row.get("code") or code_state(machine),
            " / ".join(dates))) + " |"
    return "| " + " | ".join(cell(text) for text in (
        figure, row["what"], card_of(machine, row, where), row.get("code") or code_state(machine),
        " / ".join(dates), f"`{command}`", links)) + " |"


def main(argv):
    args = argv[1:]
    headline = "--headline" in args
    args = [arg for arg in args if arg != "--headline"]
    if len(args) > 1 or any(arg.startswith("-") for arg in args):
        print("usage: scripts/bench-table.py [--headline] [INDEX]", file=sys.stderr)
        return 2
    index_path = Path(args[0]) if args else RESULTS / "current.json"
    index = json.loads(index_path.read_text(encoding="utf-8"))
    try:
        rows = [row_of(row, index_path, headline) for row in index["rows"]
                if not headline or row.get("headline")]
    except Missing as missing:
        print(f"bench-table: {missing}", file=sys.stderr)
        return 1
    print(HEADLINE_HEADER if headline else HEADER)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
