"""Reads the chart's values.yaml and values.schema.json with the standard library alone, for
scripts/chart-values-doc.py and scripts/chart-params-size.py (a provider can run both
without installing anything).

values.yaml is read by a parser of the YAML subset the file is written in: block mappings
(two-space indents), flow sequences and mappings of scalars (`[32GiB]`, `[443, 6443]`, `{}`),
plain and double-quoted scalars, comments. Anything else is refused with its line number.
scripts/chart-check.sh holds this parser to PyYAML's reading of the same file.
"""
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "proofpipe"


class ValuesError(Exception):
    pass


def _strip_comment(line):
    """The line without a trailing `# comment` (outside double quotes)."""
    quoted = False
    for index, char in enumerate(line):
        if char == '"' and (index == 0 or line[index - 1] != "\\"):
            quoted = not quoted
        elif char == "#" and not quoted and (index == 0 or line[index - 1] in " \t"):
            return line[:index].rstrip()
    return line.rstrip()


def _scalar(text, where):
    text = text.strip()
    if text.startswith('"'):
        if not text.endswith('"') or len(text) < 2:
            raise ValuesError(f"{where}: unterminated string {text!r}")
        return json.loads(text)
    if text.startswith("'"):
        if not text.endswith("'") or len(text) < 2:
            raise ValuesError(f"{where}: unterminated string {text!r}")
        return text[1:-1].replace("''", "'")
    if text in ("true", "True"):
        return True
    if text in ("false", "False"):
        return False
    if text in ("null", "~", ""):
        return None
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text)
    if re.fullmatch(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?", text):
        return float(text)
    if text[0] in "[]{}&*!|>%@`" or ": " in text:
        raise ValuesError(f"{where}: not a scalar this reader knows: {text!r}")
    return text


def _split_flow(body, where):
    """The items of a flow collection's body, split at top-level commas."""
    items, current, quoted = [], "", False
    for char in body:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            items.append(current)
            current = ""
            continue
        if char in "[]{}" and not quoted:
            raise ValuesError(f"{where}: nested flow collections are not supported")
        current += char
    if current.strip():
        items.append(current)
    return [item.strip() for item in items]


def _value(text, where):
    text = text.strip()
    if text.startswith("["):
        if not text.endswith("]"):
            raise ValuesError(f"{where}: unterminated flow sequence {text!r}")
        return [_scalar(item, where) for item in _split_flow(text[1:-1], where)]
    if text.startswith("{"):
        if not text.endswith("}"):
            raise ValuesError(f"{where}: unterminated flow mapping {text!r}")
        mapping = {}
        for item in _split_flow(text[1:-1], where):
            key, sep, value = item.partition(":")
            if not sep:
                raise ValuesError(f"{where}: flow mapping item without a colon: {item!r}")
            mapping[_scalar(key, where)] = _scalar(value, where)
        return mapping
    return _scalar(text, where)


def load_values(path=CHART / "values.yaml"):
    """values.yaml as a dict."""
    lines = []
    for number, raw in enumerate(Path(path).read_text().splitlines(), 1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise ValuesError(f"{path}:{number}: a tab in the indent")
        line = _strip_comment(raw)
        if line.strip():
            lines.append((number, len(line) - len(line.lstrip()), line.strip()))
    root = {}
    stack = [(0, root)]  # (indent of the mapping's keys, mapping)
    pending = None  # (indent, mapping, key) of a key whose value is a block below it
    for number, indent, text in lines:
        where = f"{path}:{number}"
        if text.startswith("- ") or text == "-":
            raise ValuesError(f"{where}: block sequences are not supported; write [a, b]")
        match = re.fullmatch(r'("[^"]*"|[A-Za-z0-9_./-]+)\s*:(\s+(.*))?', text)
        if not match:
            raise ValuesError(f"{where}: not a `key: value` line: {text!r}")
        key = _scalar(match.group(1), where)
        if pending is not None:
            parent_indent, parent, parent_key = pending
            if indent > parent_indent:
                child = {}
                parent[parent_key] = child
                stack.append((indent, child))
            else:
                parent[parent_key] = None
            pending = None
        while stack and indent < stack[-1][0]:
            stack.pop()
        if not stack or indent != stack[-1][0]:
            raise ValuesError(f"{where}: indent {indent} matches no enclosing mapping")
        mapping = stack[-1][1]
        if key in mapping:
            raise ValuesError(f"{where}: key {key!r} repeated")
        if match.group(3) is None or match.group(3) == "":
            mapping[key] = None
            pending = (indent, mapping, key)
        else:
            mapping[key] = _value(match.group(3), where)
    return root


def load_schema(path=CHART / "values.schema.json"):
    return json.loads(Path(path).read_text())


def resolve(schema, node):
    """`node` with a `$ref` to the schema's definitions followed (its own keys win), and the
    definition's name, or None."""
    ref = node.get("$ref")
    if not ref:
        return node, None
    name = ref.rsplit("/", 1)[1]
    target = schema["definitions"][name]
    merged, _ = resolve(schema, target)
    return {**merged, **{k: v for k, v in node.items() if k != "$ref"}}, name
