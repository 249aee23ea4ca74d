#!/usr/bin/env python3
"""Checks that every relative link in the Markdown docs resolves: the file exists and, for
`file.md#anchor` (or `#anchor`), that a heading of that file has the anchor as GitHub makes it
(lowercase; punctuation other than '-' and '_' dropped; spaces to '-'; repeats get -1, -2...).
Links to web addresses are not checked (no network here).

    scripts/docs-check.py            # README.md, docs/**/*.md, and the other *.md files of the repo
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {"target", ".git", ".chart-tools", ".grpc-tools", ".cuda-toolkit", "node_modules"}
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_files():
    for path in sorted(ROOT.rglob("*.md")):
        if not any(part in SKIP_DIRS for part in path.relative_to(ROOT).parts):
            yield path


def prose_lines(path):
    """The file's lines outside fenced code blocks, with their numbers."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
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


def main():
    problems, checked = [], 0
    for path in markdown_files():
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
    for problem in problems:
        print(f"docs-check: {problem}", file=sys.stderr)
    print(f"docs-check: {checked} relative links, {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
