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

   The blocks run only when `proofpipe-prover` exists in that directory (scripts/test.sh runs
   this check after the tests, whose build made it); otherwise they are skipped and the
   output says why. `--no-run` skips them on purpose (links and markers only).

    scripts/docs-check.py            # links, then the runnable blocks
    scripts/docs-check.py --no-run   # links (and the markers' blocks) only

Exit code 0 when nothing is broken and no command failed, 1 otherwise, 2 for a bad option.
Plain Python 3, standard library only.
"""
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {"target", ".git", ".chart-tools", ".grpc-tools", ".cuda-toolkit", "node_modules"}
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
RUN_MARK = re.compile(r"^\s*<!--\s*docs-check:\s*run\s*-->\s*$")
TIMEOUT_SECONDS = 120
OUTPUT_LINES = 15
USAGE = "usage: scripts/docs-check.py [--no-run]"


def markdown_files():
    for path in sorted(ROOT.rglob("*.md")):
        if not any(part in SKIP_DIRS for part in path.relative_to(ROOT).parts):
            yield path


def lines_of(path, cache={}):
    if path not in cache:
        cache[path] = path.read_text(encoding="utf-8").splitlines()
    return cache[path]


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


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        for _, line in prose_lines(path):
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def check_links(path, problems):
    checked = 0
    for number, line in prose_lines(path):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto: ...
            checked += 1
            file_part, _, anchor = target.partition("#")
            where = f"{path.relative_to(ROOT)}:{number}"
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                problems.append(f"{where}: {target}: no such file")
                continue
            if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                problems.append(f"{where}: {target}: no heading #{anchor} in {linked.relative_to(ROOT)}")
    return checked


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


def runnable_blocks(path, problems):
    """The marked blocks of a file: [(line number of the block's first line, [(n, text)])]."""
    lines, blocks = lines_of(path), []
    for number, line in prose_lines(path):
        if RUN_MARK.match(line):
            block = code_block_at(lines, number)  # `number` is the index of the next line
            where = f"{path.relative_to(ROOT)}:{number}"
            if not block:
                problems.append(f"{where}: `<!-- docs-check: run -->` is not followed by a code block")
            else:
                blocks.append((number, block))
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


def run(command, env):
    """Runs one command; returns (exit code or None on timeout, output)."""
    process = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, errors="replace", start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=TIMEOUT_SECONDS)
        return process.returncode, output
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its own session: the command's children too
        output, _ = process.communicate()
        return None, output


def bin_dir():
    target = Path(os.environ.get("CARGO_TARGET_DIR") or "target")
    return (target if target.is_absolute() else ROOT / target) / "debug"


def main(argv):
    options = argv[1:]
    if any(option not in ("--no-run",) for option in options):
        print(USAGE, file=sys.stderr)
        return 2
    no_run = "--no-run" in options

    problems, markers, checked, blocks = [], [], 0, []
    for path in markdown_files():
        checked += check_links(path, problems)
        blocks += [(path, number, block) for number, block in runnable_blocks(path, markers)]
    for problem in problems + markers:
        print(f"docs-check: {problem}", file=sys.stderr)
    print(f"docs-check: {checked} relative links, {len(problems)} broken")

    todo = [(path, number, command) for path, _, block in blocks for number, command in commands(block)]
    what = f"{len(blocks)} runnable blocks, {len(todo)} commands"
    if markers:
        what += f" ({len(markers)} run markers without a code block)"
    broken = 1 if problems or markers else 0
    binary = bin_dir() / "proofpipe-prover"
    if no_run:
        print(f"docs-check: {what}: not run (--no-run)")
        return broken
    if not binary.exists():
        shown = binary.relative_to(ROOT) if binary.is_relative_to(ROOT) else binary
        print(f"docs-check: {what}: skipped, {shown} does not exist "
              "(build it: cargo build -p proofpipe-prover; scripts/test.sh builds it before this check)")
        return broken

    env = dict(os.environ, PATH=f"{bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}")
    failed = 0
    for path, number, command in todo:
        where = f"{path.relative_to(ROOT)}:{number}"
        code, output = run(command, env)
        if code == 0:
            continue
        failed += 1
        why = f"timed out after {TIMEOUT_SECONDS} s" if code is None else f"exit {code}"
        tail = "\n".join(f"    {line}" for line in output.rstrip().splitlines()[-OUTPUT_LINES:])
        print(f"docs-check: {where}: {why}: {command}\n{tail}", file=sys.stderr)
    print(f"docs-check: {what}: {len(todo) - failed} passed, {failed} failed")
    return 1 if broken or failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
