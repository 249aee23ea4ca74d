#!/usr/bin/env python3
"""Checks the Markdown docs (README.md, docs/**/*.md and the other *.md files of the repo).

1. Links. Every relative link resolves: the file exists and, for `file.md#anchor` (or
   `#anchor`), a heading of that file has the anchor as GitHub makes it (lowercase;
   punctuation other than '-' and '_' dropped; spaces to '-'; repeats get -1, -2...). Links to
   web addresses are not checked (no network here).

2. Runnable command blocks. A code block (fenced, or indented by four spaces) preceded by the
   line

       <!-- docs-check: run -->

   (blank lines allowed between; GitHub does not render the comment) is run: each command in
   it by `bash -euo pipefail -c COMMAND` from the repository root, with the debug build's
   directory first on PATH (`target/debug`, or `$CARGO_TARGET_DIR/debug`), so that
   `proofpipe-prover ...` is the binary the tests build, each with a timeout of 120 s. A
   command is a line of the block, together with the lines that continue it: a line ending
   in a backslash, or an unfinished `for`/`if`/quote/here-document that `bash -n` reports.
   Blank lines and `#` comment lines are skipped. A non-zero exit or a timeout fails the
   check, naming the command's file:line and its last lines of output. Mark only commands
   that need no GPU, no cluster and no network, and finish in seconds on two cores (the
   `proofpipe-prover plan` examples). A marker that is not followed by a code block is an
   error too.

   Blocks that call `proofpipe-prover` run only when it exists in that directory
   (scripts/test.sh runs this check after the tests, whose build made it); otherwise they are
   skipped and the output says why. `--no-run` skips every block on purpose (links, markers
   and words only).

3. Printed output. A code block or a Markdown table preceded by the line

       <!-- docs-check: output -->

   is what the page says the run block before it (the nearest `<!-- docs-check: run -->`
   block above it in the same file) prints: the run block's standard output, every command's
   in order, must equal the block's text, or the table's lines. Both are compared line by
   line with trailing whitespace stripped and blank lines at the start and the end dropped;
   anything else (a changed figure, a missing row, another spacing inside a line) fails the
   check, naming the page's line and showing the lines that differ. Standard error is not
   compared. A run block has at most one output; an output marker with no run block above
   it, or followed by neither a code block nor a table, is an error. Example:

       <!-- docs-check: run -->

           proofpipe-prover plan --circuit merkle-sha256 --constraints 67108864 ...

       It prints:

       <!-- docs-check: output -->

           circuit                     merkle-sha256 (67108864 constraints, ...
           ...

   A table printed by a command (a script that formats `plan --json`, or
   scripts/bench-table.py) is marked the same way; regenerate the page's text by running the
   command and pasting its output.

4. Words. The user docs (README.md and docs/*.md, not docs/decisions/) must not contain the
   words of DENY: paths outside the repository, the words of the machines and sessions the
   figures were measured in, issue numbers, and names the docs do not define. Each hit names
   the page, the line and what to say instead.

    scripts/docs-check.py               # links, markers and words, then the runnable blocks
    scripts/docs-check.py --no-run      # links, markers and words only
    scripts/docs-check.py --update      # the same, writing what each marked run block prints
                                        # into its page where the page shows something else
    scripts/docs-check.py --self-test   # proves on a temporary page that a changed figure,
                                        # a missing row and a denied word fail the check
                                        # (and that --update writes what was printed)

Exit code 0 when nothing is broken and no command failed, 1 otherwise, 2 for a bad option.
Plain Python 3, standard library only.
"""
import difflib
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {"target", ".git", ".seed-engine", ".chart-tools", ".grpc-tools", ".cuda-toolkit", ".s3-tools", "node_modules"}
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
MARK = re.compile(r"^\s*<!--\s*docs-check:\s*(.*?)\s*-->\s*$")
MARKS = ("run", "output")
TABLE_ROW = re.compile(r"^ {0,3}\|")
TIMEOUT_SECONDS = 120
OUTPUT_LINES = 15
DIFF_LINES = 20
PROVER = "proofpipe-prover"
USAGE = "usage: scripts/docs-check.py [--no-run | --update | --self-test]"

# Words the user docs must not contain: (pattern, what to say instead). Matched
# case-insensitively on every line of README.md and docs/*.md, code blocks included.
DENY = [
    (r"\.\./shared\b", "a path outside the repository: say what it is (a local API server, KUBECONFIG)"),
    (r"/work/", "a path outside the repository: name the path from the repository root"),
    (r"\blent\b", "say which card the figure was measured on"),
    (r"\bdevice time\b", "say what did not run, not why the machine was short"),
    (r"\bsessions?\b", "say which machine and which call, not which session"),
    (r"(?<![\w/.#-])#\d+\b|\bissue \d+", "an issue number: say what the change is"),
    (r"\bthe aim of\b|\bthe [\w.]+ (?:s |MB |MiB )?aim\b", "a target from nowhere: give the figure or where it comes from"),
    (r"\bseed engine\b", "say cuzk, curio's GPU proving engine (filecoin-project/curio, extern/cuzk)"),
    (r"\banchors\.md\b|\bnotes/", "a note outside the repository: give the figure and its source"),
]


def markdown_files(root):
    for path in sorted(root.rglob("*.md")):
        if not any(part in SKIP_DIRS for part in path.relative_to(root).parts):
            yield path


def user_docs(root):
    """The pages the DENY words are checked on: README.md and docs/*.md (not docs/decisions/)."""
    pages = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    return [page for page in pages if page.exists()]


_LINES = {}


def lines_of(path):
    if path not in _LINES:
        _LINES[path] = path.read_text(encoding="utf-8").splitlines()
    return _LINES[path]


def prose_lines(path):
    """The file's lines outside fenced code blocks, with their numbers."""
    fence = None
    for number, line in enumerate(lines_of(path), 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            # A fence closes with at least as many of the same character, and nothing after.
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = None
            continue
        yield number, line


def slug(text):
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_ANCHORS = {}


def anchors(path):
    if path not in _ANCHORS:
        seen, found = {}, set()
        for _, line in prose_lines(path):
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        _ANCHORS[path] = found
    return _ANCHORS[path]


def check_links(root, path, problems):
    checked = 0
    for number, line in prose_lines(path):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto: ...
            checked += 1
            file_part, _, anchor = target.partition("#")
            where = f"{path.relative_to(root)}:{number}"
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                problems.append(f"{where}: {target}: no such file")
                continue
            if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                problems.append(f"{where}: {target}: no heading #{anchor} in {linked.relative_to(root)}")
    return checked


def check_words(root, path, problems):
    for number, line in enumerate(lines_of(path), 1):
        for pattern, instead in DENY:
            match = re.search(pattern, line, re.IGNORECASE)
            if match:
                problems.append(f"{path.relative_to(root)}:{number}: '{match.group(0)}' in a user doc: {instead}")


def code_block_at(lines, start):
    """The code block starting at index `start` (after blank lines): [(line number, text)],
    or None when what follows is not a code block."""
    i = start
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i == len(lines):
        return None
    fence = FENCE.match(lines[i])
    if fence:
        marker, body = fence.group(1), []
        for j in range(i + 1, len(lines)):
            closing = FENCE.match(lines[j])
            if closing and closing.group(1)[0] == marker[0] and len(closing.group(1)) >= len(marker) \
                    and not lines[j].strip().strip(marker[0]):
                return body
            body.append((j + 1, lines[j]))
        return body  # unclosed: the rest of the file, as Markdown renders it
    if lines[i].startswith("    ") or lines[i].startswith("\t"):
        body, j = [], i
        while j < len(lines):
            line = lines[j]
            if line.startswith("    ") or line.startswith("\t"):
                body.append((j + 1, line[4:] if line.startswith("    ") else line[1:]))
            elif not line.strip():
                # A blank line belongs to the block only if the block goes on after it.
                k = j
                while k < len(lines) and not lines[k].strip():
                    k += 1
                if k < len(lines) and (lines[k].startswith("    ") or lines[k].startswith("\t")):
                    body.extend((n + 1, "") for n in range(j, k))
                    j = k
                    continue
                break
            else:
                break
            j += 1
        return body
    return None


def table_at(lines, start):
    """The Markdown table starting at index `start` (after blank lines): [(line number, text)],
    or None when what follows is not a table."""
    i = start
    while i < len(lines) and not lines[i].strip():
        i += 1
    body = []
    while i < len(lines) and TABLE_ROW.match(lines[i]):
        body.append((i + 1, lines[i]))
        i += 1
    return body or None


class Block:
    """A `run` block of a page: its commands and, when marked, the output the page shows."""

    def __init__(self, path, number, body):
        self.path, self.number, self.body = path, number, body
        self.output = None  # (line number of the output marker, [(n, text)])
        self.indent = ""  # the shown block's indent: four spaces for an indented code block


def marked_blocks(root, path, problems):
    """The run blocks of a file, with their outputs attached."""
    lines, blocks = lines_of(path), []
    for number, line in prose_lines(path):
        match = MARK.match(line)
        if not match:
            continue
        mark, where = match.group(1), f"{path.relative_to(root)}:{number}"
        if mark not in MARKS:
            problems.append(f"{where}: unknown marker `<!-- docs-check: {mark} -->` "
                            f"(known: {', '.join(MARKS)})")
            continue
        if mark == "run":
            block = code_block_at(lines, number)  # `number` is the index of the next line
            if not block:
                problems.append(f"{where}: `<!-- docs-check: run -->` is not followed by a code block")
            else:
                blocks.append(Block(path, number, block))
            continue
        shown, kind = code_block_at(lines, number), "code"
        if shown is None:
            shown, kind = table_at(lines, number), "table"
        if shown is None:
            problems.append(f"{where}: `<!-- docs-check: output -->` is followed by neither a "
                            "code block nor a table")
        elif not blocks:
            problems.append(f"{where}: `<!-- docs-check: output -->` has no "
                            "`<!-- docs-check: run -->` block above it")
        elif blocks[-1].output is not None:
            problems.append(f"{where}: the run block marked at line {blocks[-1].number} already has "
                            f"its output at line {blocks[-1].output[0]}")
        else:
            indented = kind == "code" and not FENCE.match(lines[shown[0][0] - 2] if shown else "")
            blocks[-1].output = (number, shown)
            blocks[-1].indent = "    " if indented else ""
    return blocks


def complete(text):
    """Whether bash parses `text` as whole commands (no open loop, quote or here-document)."""
    result = subprocess.run(["bash", "-n", "-c", text], capture_output=True, text=True)
    # An open here-document is only a warning to bash -n.
    return result.returncode == 0 and "here-document" not in result.stderr


def commands(block):
    """The block's commands: [(line number, command text)]."""
    found, pending, first = [], [], None
    for number, text in block:
        if not pending and (not text.strip() or text.lstrip().startswith("#")):
            continue
        if not pending:
            first = number
        pending.append(text)
        if text.rstrip().endswith("\\"):
            continue
        if complete("\n".join(pending)):
            found.append((first, "\n".join(pending)))
            pending = []
    if pending:
        found.append((first, "\n".join(pending)))  # bash will say what is wrong with it
    return found


def run(root, command, env):
    """Runs one command; returns (exit code or None on timeout, stdout, stdout and stderr)."""
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=root, env=env, stdout=subprocess.PIPE, stderr=err, start_new_session=True,
        )
        try:
            out, _ = process.communicate(timeout=TIMEOUT_SECONDS)
            code = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # its own session: the command's children too
            out, _ = process.communicate()
            code = None
        err.seek(0)
        out = out.decode("utf-8", "replace")
        return code, out, out + err.read().decode("utf-8", "replace")


def normalized(lines):
    lines = [line.rstrip() for line in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def compare_output(root, block, printed):
    """None when the page shows what the block printed, else the problem, with a diff."""
    number, shown = block.output
    page = normalized(text for _, text in shown)
    actual = normalized(printed.splitlines())
    if page == actual:
        return None
    # The page's line numbers: the shown lines without the leading blank ones.
    first = next((n for n, text in shown if text.strip()), shown[0][0] if shown else number)
    at = next((i for i, (a, b) in enumerate(zip(page, actual)) if a != b), min(len(page), len(actual)))
    where = f"{block.path.relative_to(root)}:{first + at}"
    diff = list(difflib.unified_diff(page, actual, "the page", "the command's output", n=0, lineterm=""))
    if len(diff) > DIFF_LINES:
        diff = diff[:DIFF_LINES] + [f"... ({len(diff) - DIFF_LINES} more diff lines)"]
    tail = "\n".join(f"    {line}" for line in diff)
    return (f"{where}: the page's output differs from what the run block marked at line "
            f"{block.number} prints (regenerate it: run the block, paste its output):\n{tail}")


def bin_dir():
    target = Path(os.environ.get("CARGO_TARGET_DIR") or "target")
    return (target if target.is_absolute() else ROOT / target) / "debug"


def update(root, replacements, out):
    """Writes what the run blocks printed into their pages, in place of the shown output."""
    by_path = {}
    for block, printed in replacements:
        by_path.setdefault(block.path, []).append((block, printed))
    for path, items in by_path.items():
        lines = path.read_text(encoding="utf-8").split("\n")
        for block, printed in sorted(items, key=lambda item: -item[0].output[0]):
            shown = block.output[1]
            if not shown:
                print(f"docs-check: {path.relative_to(root)}:{block.output[0]}: an empty block "
                      "is not updated: paste the output by hand", file=out)
                continue
            new = [(block.indent + line) if line else "" for line in normalized(printed.splitlines())]
            lines[shown[0][0] - 1:shown[-1][0]] = new
            print(f"docs-check: {path.relative_to(root)}:{shown[0][0]}: updated "
                  f"({len(shown)} lines -> {len(new)})", file=out)
        path.write_text("\n".join(lines), encoding="utf-8")
        _LINES.pop(path, None)
        _ANCHORS.pop(path, None)


def check(root, binaries, no_run=False, out=sys.stdout, err=sys.stderr, rewrite=False):
    """The whole check of the repository at `root`, with `binaries` first on PATH. Returns the
    exit code; reports on `out` and `err`. With `rewrite`, a shown output that differs is
    replaced by what its block printed."""
    problems, markers, checked, blocks = [], [], 0, []
    for path in markdown_files(root):
        checked += check_links(root, path, problems)
        blocks += marked_blocks(root, path, markers)
    words = []
    for path in user_docs(root):
        check_words(root, path, words)
    for problem in problems + markers + words:
        print(f"docs-check: {problem}", file=err)
    outputs = sum(1 for block in blocks if block.output)
    print(f"docs-check: {checked} relative links, {len(problems)} broken", file=out)
    print(f"docs-check: {len(words)} denied words in the user docs", file=out)

    todo = [(block, commands(block.body)) for block in blocks]
    what = f"{len(blocks)} runnable blocks ({outputs} with their output on the page), " \
           f"{sum(len(c) for _, c in todo)} commands"
    if markers:
        what += f" ({len(markers)} marker problems)"
    broken = 1 if problems or markers or words else 0
    if no_run:
        print(f"docs-check: {what}: not run (--no-run)", file=out)
        return broken

    binary = binaries / PROVER
    skipped = []
    if not binary.exists():
        skipped = [(block, c) for block, c in todo if any(PROVER in text for _, text in c)]
        todo = [(block, c) for block, c in todo if not any(PROVER in text for _, text in c)]
        shown = binary.relative_to(root) if binary.is_relative_to(root) else binary
        print(f"docs-check: {len(skipped)} blocks calling {PROVER} skipped: {shown} does not exist "
              "(build it: cargo build -p proofpipe-prover; scripts/test.sh builds it before this check)",
              file=out)

    env = dict(os.environ, PATH=f"{binaries}{os.pathsep}{os.environ.get('PATH', '')}")
    failed = differ = ran = 0
    replacements = []
    for block, block_commands in todo:
        printed, ok = [], True
        for number, command in block_commands:
            ran += 1
            code, stdout, output = run(root, command, env)
            printed.append(stdout)
            if code == 0:
                continue
            failed, ok = failed + 1, False
            why = f"timed out after {TIMEOUT_SECONDS} s" if code is None else f"exit {code}"
            tail = "\n".join(f"    {line}" for line in output.rstrip().splitlines()[-OUTPUT_LINES:])
            print(f"docs-check: {block.path.relative_to(root)}:{number}: {why}: {command}\n{tail}", file=err)
        if ok and block.output:
            problem = compare_output(root, block, "".join(printed))
            if problem and rewrite:
                replacements.append((block, "".join(printed)))
            elif problem:
                differ += 1
                print(f"docs-check: {problem}", file=err)
    if replacements:
        update(root, replacements, out)
    print(f"docs-check: {what}: {ran - failed} commands passed, {failed} failed; "
          f"{differ} shown outputs differ from what their blocks print", file=out)
    return 1 if broken or failed or differ else 0


SELF_TEST_PLAN = """\
#!/usr/bin/env bash
# A stand-in for the prover: prints a plan.
echo "partition_workers           6"
echo "predicted peak              92.8 GiB of 112.0 GiB"
"""

SELF_TEST_PAGE = """\
# A page

<!-- docs-check: run -->

    proofpipe-prover plan --memory-limit 112GiB

It prints:

<!-- docs-check: output -->

    partition_workers           {pw}
    predicted peak              {peak} GiB of 112.0 GiB

A table:

<!-- docs-check: run -->

    printf '| limit | peak |\\n|---|---|\\n'
    printf '| 112 GiB | 92.8 GiB |\\n'

<!-- docs-check: output -->
| limit | peak |
|---|---|
{rows}
"""


def self_test():
    """Writes pages whose shown output is right or wrong in one figure, and checks that the
    check passes the first and fails the others, naming the line."""
    cases = [
        # (name, page fields, docs/ text, expected exit code, what the report must name)
        ("the output as printed", dict(pw="6", peak="92.8", rows="| 112 GiB | 92.8 GiB |   "),
         "", 0, None),
        ("one figure changed in a code block", dict(pw="6", peak="92.9", rows="| 112 GiB | 92.8 GiB |"),
         "", 1, "docs/page.md:12: the page's output differs"),
        ("one figure changed in a table", dict(pw="6", peak="92.8", rows="| 112 GiB | 93.8 GiB |"),
         "", 1, "docs/page.md:24: the page's output differs"),
        ("a row missing", dict(pw="6", peak="92.8", rows=""),
         "", 1, "the page's output differs"),
    ]
    cases.append(("a denied word", dict(pw="6", peak="92.8", rows="| 112 GiB | 92.8 GiB |"),
                  "Measured on the lent H100.\n", 1, "docs/other.md:1: 'lent' in a user doc"))
    # --update: the two changed figures written back, then the page passes.
    cases.append(("--update writes what was printed",
                  dict(pw="6", peak="92.9", rows="| 112 GiB | 93.8 GiB |"), "", 0, None))
    failures = []
    for name, fields, other, expected, named in cases:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "docs").mkdir()
            page = root / "docs" / "page.md"
            page.write_text(SELF_TEST_PAGE.format(**fields), encoding="utf-8")
            if other:
                (root / "docs" / "other.md").write_text(other, encoding="utf-8")
            binaries = root / "bin"
            binaries.mkdir()
            (binaries / PROVER).write_text(SELF_TEST_PLAN, encoding="utf-8")
            (binaries / PROVER).chmod(0o755)
            out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
            rewrite = name.startswith("--update")
            code = check(root, binaries, out=out, err=err, rewrite=rewrite)
            if rewrite:
                # Checked again as written: it must pass, with the printed figures on the page.
                code = check(root, binaries, out=out, err=err) or code
                text = page.read_text(encoding="utf-8")
                if "    predicted peak              92.8 GiB" not in text or "| 112 GiB | 92.8 GiB |" not in text:
                    code = "the page does not show the printed figures"
            out.seek(0)
            err.seek(0)
            report = out.read() + err.read()
            _LINES.clear()
            _ANCHORS.clear()
        if code != expected or (named and named not in report):
            failures.append(f"{name}: exit {code} (expected {expected})"
                            + (f", the report does not name '{named}'" if named else "")
                            + ":\n" + "\n".join(f"    {line}" for line in report.splitlines()))
    for failure in failures:
        print(f"docs-check --self-test: FAILED: {failure}", file=sys.stderr)
    print(f"docs-check --self-test: {len(cases) - len(failures)} of {len(cases)} cases as expected "
          "(a page whose output is as printed passes; a changed figure, a missing row or a denied "
          "word fails, naming the line; --update writes what was printed)")
    return 1 if failures else 0


def main(argv):
    options = argv[1:]
    if len(options) > 1 or any(option not in ("--no-run", "--update", "--self-test") for option in options):
        print(USAGE, file=sys.stderr)
        return 2
    if "--self-test" in options:
        return self_test()
    return check(ROOT, bin_dir(), no_run="--no-run" in options, rewrite="--update" in options)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
