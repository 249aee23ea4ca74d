#!/usr/bin/env python3
"""Finds import cycles between the files of a Rust crate.

    scripts/import-cycles.py                # every workspace member with a src/
    scripts/import-cycles.py operator       # one crate (its directory, holding src/)

For each crate, a graph of files: `a.rs -> b.rs` when `a.rs` names a path that resolves to
`b.rs`: a `use` of `crate::...`, `super::...`, `self::...` or of a child module declared
with `mod`, and the same paths written in code (`crate::x::y::f()`). A path resolves to the
longest existing file among its prefixes: `crate::a::b::c` to the first that exists of
src/a/b/c.rs, src/a/b/c/mod.rs, src/a/b.rs, src/a/b/mod.rs, src/a.rs, src/a/mod.rs, else
the crate root (src/lib.rs, or src/main.rs for the binary's own files). `super::` starts
from the parent module (`super::X` in src/a/b.rs is src/a/mod.rs or src/a.rs), `self::`
from the file's own module.

Not edges: a parent's `mod child;` (declaring a child is not importing it), and a
re-export of one of its own descendants (`pub use child::Thing;`, any `pub(...)`). A
parent that *uses* its child (`use child::f;`) while the child uses `super::X` is a cycle.
Comments and string literals are skipped, as is test code: files named tests.rs or under a
tests/ folder, and items (inline `mod tests { ... }` included) under `#[cfg(test)]`.

Prints each strongly connected component of more than one file with the imports that tie
it, and exits 1 if there is any; 0 otherwise, 2 for a bad argument.
Plain Python 3.11, standard library only.
"""
import glob
import signal
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
USAGE = "usage: scripts/import-cycles.py [CRATE_DIR ...]"


# ---------------------------------------------------------------- tokens

def tokens(text):
    """(kind, value, line) for identifiers ('id'), '::' and single punctuation ('p'),
    with comments, string and char literals and lifetimes left out."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += text[i] == "\n"
                    i += 1
        elif c in "rb" and _raw_string_at(text, i):
            i, line = _skip_raw_string(text, i, line)
        elif c == '"' or (c == "b" and text.startswith('b"', i)):
            i = i + 1 if c == '"' else i + 2
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 1
                line += i < n and text[i] == "\n"
                i += 1
            i += 1
        elif c == "'" or (c == "b" and text.startswith("b'", i)):
            j = i + 1 if c == "'" else i + 2
            if j < n and text[j] == "\\":  # an escaped char literal
                j += 1
                while j < n and text[j] != "'":
                    j += 1
                i = j + 1
            elif j + 1 < n and text[j + 1] == "'":  # a char literal
                i = j + 2
            else:  # a lifetime or label: its name is skipped as an identifier below
                i = j
                while i < n and (text[i].isalnum() or text[i] == "_"):
                    i += 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word.startswith("r#"):
                word = word[2:]
            out.append(("id", word, line))
            i = j
        elif c.isdigit():
            while i < n and (text[i].isalnum() or text[i] in "_."):
                i += 1
        elif text.startswith("::", i):
            out.append(("p", "::", line))
            i += 2
        else:
            out.append(("p", c, line))
            i += 1
    return out


def _raw_string_at(text, i):
    j = i + 1 if text[i] == "r" else (i + 2 if text.startswith("br", i) else -1)
    if j < 0:
        return False
    while j < len(text) and text[j] == "#":
        j += 1
    return j < len(text) and text[j] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))


def _skip_raw_string(text, i, line):
    j = i + 1 if text[i] == "r" else i + 2
    hashes = 0
    while text[j] == "#":
        hashes, j = hashes + 1, j + 1
    end = '"' + "#" * hashes
    k = text.find(end, j + 1)
    k = len(text) if k < 0 else k
    return k + len(end), line + text.count("\n", i, k)


# ---------------------------------------------------------------- one file

class FileScan:
    """What one file declares and names: child modules (`mod x;`, outside test code) and
    the paths it names, each as (module path it is named from, segments, line, is a
    re-export)."""

    def __init__(self, toks, module):
        self.toks = toks
        self.child_files = []  # (inline module path, name) of `mod name;`
        self.paths = []  # (scope, [segments], line, pub_use)
        self._children = {}  # scope -> set of child module names
        self._aliases = {}  # scope -> {name bound by a `use` of this crate: its path}
        self._scan(tuple(module))

    def _scan(self, module):
        toks, i, n = self.toks, 0, len(self.toks)
        scopes = [(module, -1)]  # (module path, brace depth its `}` closes)
        depth = 0
        pending_test = False
        # Child modules first, so that a bare `child::x` before `mod child;` resolves too.
        self._collect_children(module)
        while i < n:
            kind, value, line = toks[i]
            scope = scopes[-1][0]
            if value == "#" and i + 1 < n and toks[i + 1][1] in "[!":
                start = i + 1 if toks[i + 1][1] == "[" else i + 2
                end = self._matching(start)
                attr = [t[1] for t in toks[start + 1 : end]]
                if attr[:1] == ["cfg"] and "test" in attr and "not" not in attr:
                    pending_test = True
                i = end + 1
                continue
            if pending_test:
                pending_test = False
                i = self._skip_item(i)
                continue
            if value == "{":
                depth += 1
            elif value == "}":
                depth -= 1
                if len(scopes) > 1 and scopes[-1][1] == depth:
                    scopes.pop()
            elif kind == "id" and value == "mod" and i + 2 < n and toks[i + 1][0] == "id":
                name, after = toks[i + 1][1], toks[i + 2][1]
                if after == ";":
                    self.child_files.append((scope, name))
                    i += 3
                    continue
                if after == "{":
                    scopes.append((scope + (name,), depth))
                    depth += 1
                    i += 3
                    continue
            elif kind == "id" and value == "use" and not self._after_path_sep(i):
                visibility = self._visibility_before(i)
                end = self._find(i, ";")
                for segments, binding in self._use_tree(i + 1, end):
                    if self._internal(scope, segments[0]):
                        self.paths.append((scope, segments, line, visibility))
                        if binding is not None:
                            self._aliases.setdefault(scope, {})[binding] = segments
                i = end + 1
                continue
            elif kind == "id" and not self._after_path_sep(i) and i + 1 < n and toks[i + 1][1] == "::":
                alias = self._aliases.get(scope, {}).get(value)
                if alias is not None or self._internal(scope, value):
                    segments, i = self._code_path(i)
                    if alias is not None:  # `use crate::job;` then `job::reconcile::run`
                        segments = alias + segments[1:]
                    self.paths.append((scope, segments, line, False))
                    continue
            i += 1

    def _collect_children(self, module):
        # A first pass: the names of child modules, per inline scope.
        toks, scopes, depth, i, pending_test = self.toks, [(module, -1)], 0, 0, False
        while i < len(toks):
            value = toks[i][1]
            if value == "#" and i + 1 < len(toks) and toks[i + 1][1] in "[!":
                start = i + 1 if toks[i + 1][1] == "[" else i + 2
                end = self._matching(start)
                attr = [t[1] for t in toks[start + 1 : end]]
                pending_test = pending_test or (attr[:1] == ["cfg"] and "test" in attr and "not" not in attr)
                i = end + 1
                continue
            if pending_test:
                pending_test = False
                i = self._skip_item(i)
                continue
            if value == "{":
                depth += 1
            elif value == "}":
                depth -= 1
                if len(scopes) > 1 and scopes[-1][1] == depth:
                    scopes.pop()
            elif value == "mod" and toks[i][0] == "id" and i + 2 < len(toks) and toks[i + 1][0] == "id":
                self._children.setdefault(scopes[-1][0], set()).add(toks[i + 1][1])
                if toks[i + 2][1] == "{":
                    scopes.append((scopes[-1][0] + (toks[i + 1][1],), depth))
                    depth += 1
                    i += 3
                    continue
            i += 1

    def _internal(self, scope, head):
        return head in ("crate", "super", "self") or head in self._children.get(scope, ())

    def _after_path_sep(self, i):
        return i > 0 and self.toks[i - 1][1] == "::"

    def _visibility_before(self, i):
        # `pub use`, `pub(crate) use`, `pub(in a::b) use`.
        j = i - 1
        if j >= 0 and self.toks[j][1] == ")":
            while j >= 0 and self.toks[j][1] != "(":
                j -= 1
            j -= 1
        return j >= 0 and self.toks[j][1] == "pub"

    def _matching(self, open_index):
        pairs = {"[": "]", "(": ")", "{": "}"}
        open_, close = self.toks[open_index][1], pairs[self.toks[open_index][1]]
        depth = 0
        for j in range(open_index, len(self.toks)):
            if self.toks[j][1] == open_:
                depth += 1
            elif self.toks[j][1] == close:
                depth -= 1
                if depth == 0:
                    return j
        return len(self.toks) - 1

    def _find(self, i, value):
        while i < len(self.toks) and self.toks[i][1] != value:
            i += 1
        return i

    def _skip_item(self, i):
        """The index after the item starting at `i`: through its `;` or its `{ ... }` body,
        whichever comes first outside brackets."""
        toks = self.toks
        while i < len(toks):
            value = toks[i][1]
            if value == "#" and i + 1 < len(toks) and toks[i + 1][1] == "[":
                i = self._matching(i + 1) + 1
            elif value in "([":
                i = self._matching(i) + 1
            elif value == "{":
                return self._matching(i) + 1
            elif value == ";":
                return i + 1
            else:
                i += 1
        return i

    def _use_tree(self, i, end):
        """Every full path of the use tree in toks[i:end], as segment lists."""
        paths = []

        def tree(i, prefix):
            segments, binding = list(prefix), None
            while i < end:
                kind, value, _ = self.toks[i]
                if value == "::":
                    i += 1
                elif value == "{":
                    close = self._matching(i)
                    j = i + 1
                    while j < close:
                        j = tree(j, segments)
                        if j < close and self.toks[j][1] == ",":
                            j += 1
                    return close + 1
                elif value == "*":
                    if segments:
                        paths.append((segments, None))
                    return i + 1
                elif value in (",", "}"):
                    break
                elif kind == "id" and value == "as":
                    binding = self.toks[i + 1][1] if i + 1 < end else None
                    i += 2
                    continue
                elif kind == "id":
                    if value != "self" or not segments:
                        segments.append(value)
                    i += 1
                else:
                    i += 1
            if segments:
                name = binding or segments[-1]
                paths.append((segments, None if name in ("_", "crate", "super", "self") else name))
            return i

        tree(i, [])
        return paths

    def _code_path(self, i):
        segments = []
        while i < len(self.toks) and self.toks[i][0] == "id":
            segments.append(self.toks[i][1])
            if i + 1 < len(self.toks) and self.toks[i + 1][1] == "::" and i + 2 < len(self.toks) and self.toks[i + 2][0] == "id":
                i += 2
            else:
                i += 1
                break
        return segments, i


# ---------------------------------------------------------------- one crate

def is_test_file(rel):
    return rel.name == "tests.rs" or "tests" in rel.parts[:-1]


def module_of(rel):
    """The module path of src/<rel>: a/b.rs -> (a, b), a/mod.rs -> (a,), lib.rs -> ()."""
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def child_file(src, rel, inline, name):
    """Where `mod name;` of src/<rel>, inside inline modules `inline`, lives."""
    if rel.name in ("mod.rs", "lib.rs", "main.rs") or rel.parent.name == "bin" and rel.parent.parent == Path("."):
        base = rel.parent
    else:
        base = rel.with_suffix("")
    base = base.joinpath(*inline)
    for candidate in (base / f"{name}.rs", base / name / "mod.rs"):
        if (src / candidate).is_file():
            return candidate
    return None


def crate_graph(crate):
    src = crate / "src"
    files = {}
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(src)
        if not is_test_file(rel):
            files[rel] = path.read_text(encoding="utf-8", errors="replace")
    roots = [r for r in (Path("lib.rs"), Path("main.rs")) if r in files]
    roots += sorted(r for r in files if r.parts[0] == "bin" and len(r.parts) == 2)
    lib_root = Path("lib.rs") if Path("lib.rs") in files else (roots[0] if roots else None)

    # Which crate root each file belongs to, by the `mod` declarations from each root; a
    # file no root declares is taken as the library's.
    root_of, scans, pending = {}, {}, [(r, r, ()) for r in roots]
    while pending:
        rel, root, module = pending.pop()
        if rel in root_of:
            continue
        root_of[rel] = root
        scans[rel] = FileScan(tokens(files[rel]), module)
        for inline, name in scans[rel].child_files:
            child = child_file(src, rel, inline[len(module):], name)
            if child is not None and child in files:
                pending.append((child, root, inline + (name,)))
    for rel in files:
        if rel not in root_of:
            root_of[rel] = lib_root
            scans[rel] = FileScan(tokens(files[rel]), module_of(rel))

    # module path -> file, per root.
    by_module = {}
    for rel, root in root_of.items():
        by_module[(root, module_of(rel) if rel not in roots else ())] = rel

    def resolve(root, full):
        for k in range(len(full), -1, -1):
            found = by_module.get((root, tuple(full[:k])))
            if found is not None:
                return found
        return root

    edges = {rel: {} for rel in files}
    for rel, scan in scans.items():
        root = root_of[rel]
        own = module_of(rel) if rel not in roots else ()
        for scope, segments, line, pub_use in scan.paths:
            written = "::".join(segments)
            head, rest = segments[0], segments[1:]
            if head == "crate":
                full = rest
            elif head in ("super", "self"):
                base = list(scope)
                while segments and segments[0] in ("super", "self"):
                    if segments[0] == "super" and base:
                        base.pop()
                    segments = segments[1:]
                full = base + segments
            else:  # a child module of the scope
                full = list(scope) + segments
            target = resolve(root, full)
            if target == rel or target not in files:
                continue
            target_module = module_of(target) if target not in roots else ()
            if pub_use and target_module[: len(own)] == own and len(target_module) > len(own):
                continue  # a re-export of its own descendant
            edges[rel].setdefault(target, (line, written))
    return edges


def strongly_connected(edges):
    index, low, on_stack, stack, result, counter = {}, {}, set(), [], [], [0]
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter[0]
                    counter[0] += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(edges[succ])))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(sorted(component))
    return result


def workspace_crates():
    manifest = tomllib.loads((ROOT / "Cargo.toml").read_text())
    crates = []
    for member in manifest.get("workspace", {}).get("members", []):
        for path in sorted(glob.glob(str(ROOT / member))):
            if (Path(path) / "src").is_dir():
                crates.append(Path(path))
    return crates


def main(args):
    if any(arg.startswith("-") for arg in args):
        print(USAGE, file=sys.stderr)
        return 2
    crates = [Path(arg).resolve() for arg in args] or workspace_crates()
    failed = False
    for crate in crates:
        if not (crate / "src").is_dir():
            print(f"{crate}: no src/ folder\n{USAGE}", file=sys.stderr)
            return 2
        name = crate.relative_to(ROOT) if crate.is_relative_to(ROOT) else crate
        edges = crate_graph(crate)
        cycles = [c for c in strongly_connected(edges) if len(c) > 1]
        imports = sum(len(targets) for targets in edges.values())
        if not cycles:
            print(f"{name}: no import cycles ({len(edges)} files, {imports} imports between them)")
            continue
        failed = True
        print(f"{name}: {len(cycles)} import cycle(s) ({len(edges)} files, {imports} imports between them)")
        for number, component in enumerate(sorted(cycles, key=len, reverse=True), 1):
            members = set(component)
            print(f"  cycle {number}, {len(component)} files: {', '.join(f'src/{f}' for f in component)}")
            for source in component:
                for target, (line, path) in sorted(edges[source].items()):
                    if target in members:
                        print(f"    src/{source}:{line} -> src/{target}  ({path})")
    return 1 if failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    sys.exit(main(sys.argv[1:]))
