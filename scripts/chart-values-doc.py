#!/usr/bin/env python3
"""Prints the values reference of charts/proofpipe: one Markdown table row per key of
values.schema.json, with its type, its default from values.yaml and its description from the
schema. charts/proofpipe/README.md holds the table between the lines

    <!-- values-reference: begin -->
    <!-- values-reference: end -->

    scripts/chart-values-doc.py                                      # print the table
    scripts/chart-values-doc.py --write charts/proofpipe/README.md   # put it in the README
    scripts/chart-values-doc.py --check charts/proofpipe/README.md   # fail if the README's differs

Rows: every key, objects written inline in the schema (`gateway`, `gateway.auth.token`) opened
into their keys; a key whose schema is a shared definition (`resources.limits`, `tolerations`)
is one row. Every row must have a description of its own in the schema, and every key of
values.yaml a row: either missing fails. Standard library only. Exit 0, 1 on a problem or a
difference, 2 for a bad option.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chart_values  # noqa: E402

BEGIN = "<!-- values-reference: begin -->"
END = "<!-- values-reference: end -->"
USAGE = "usage: scripts/chart-values-doc.py [--check FILE | --write FILE]"
# How a shared definition of values.schema.json is named in the Type column.
DEFINITION_NAMES = {
    "quantity": "quantity",
    "duration": "duration",
    "port": "port",
    "poolName": "ProverPool name",
    "stringMap": "map of string",
    "resourceList": "ResourceList (cpu, memory, ephemeral-storage)",
    "envVar": "EnvVar",
    "envFromSource": "EnvFromSource",
    "networkPolicyPeer": "NetworkPolicyPeer",
    "labelSelector": "LabelSelector",
}


def fail(message):
    print(f"chart-values-doc: {message}", file=sys.stderr)
    sys.exit(1)


def type_of(schema, node):
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        return DEFINITION_NAMES.get(name, name)
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" if v != "" else '`""`' for v in node["enum"])
    kind = node.get("type")
    if kind == "array":
        items = node.get("items", {})
        inner = type_of(schema, items)
        return f"list of {inner}" if not inner.startswith("one of") else f"list, each {inner}"
    if kind == "object" and "properties" not in node:
        extra = node.get("additionalProperties")
        return f"map of {type_of(schema, extra)}" if isinstance(extra, dict) else "object"
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind:
        return kind
    if "anyOf" in node:
        return " or ".join(type_of(schema, option) for option in node["anyOf"])
    return "any"


MISSING = object()


def default_of(values, path):
    node = values
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def rows(schema, values):
    """(dotted key, type, default, description) of every row; fails on a row without a
    description."""
    out, undocumented = [], []

    def walk(node, path):
        for key, child in node.get("properties", {}).items():
            here = path + [key]
            if "properties" in child and "$ref" not in child:
                walk(child, here)
                continue
            description = child.get("description")
            if not description:
                undocumented.append(".".join(here))
            default = default_of(values, here)
            out.append((".".join(here), type_of(schema, child),
                        "unset" if default is MISSING else f"`{json.dumps(default)}`", description or ""))

    walk(schema, [])
    if undocumented:
        fail(f"values.schema.json: no description for {', '.join(undocumented)}")
    return out


def covered(schema, values, path=()):
    """Fails on a key of values.yaml that has no row (the schema closes every object, so helm
    would refuse it too)."""
    node = schema
    for part in path:
        node, _ = chart_values.resolve(schema, node)
        node = node.get("properties", {}).get(part)
        if node is None:
            fail(f"values.yaml key {'.'.join(path)} is not in values.schema.json")
    node, _ = chart_values.resolve(schema, node)
    if isinstance(values, dict) and "properties" in node:
        for key, value in values.items():
            covered(schema, value, path + (key,))


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def table():
    schema = chart_values.load_schema()
    values = chart_values.load_values()
    covered(schema, values)
    lines = ["| Key | Type | Default | Description |", "|---|---|---|---|"]
    for key, kind, default, description in rows(schema, values):
        lines.append(f"| `{key}` | {cell(kind)} | {cell(default)} | {cell(description)} |")
    return "\n".join(lines) + "\n"


def section(text, path):
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        fail(f"{path}: needs one line {BEGIN} and, after it, one line {END}")
    start = text.index(BEGIN) + len(BEGIN) + 1
    return start, text.index(END)


def main(argv):
    if not argv:
        sys.stdout.write(table())
        return 0
    if len(argv) != 2 or argv[0] not in ("--check", "--write"):
        print(USAGE, file=sys.stderr)
        return 2
    path = Path(argv[1])
    text = path.read_text()
    start, end = section(text, path)
    wanted = table()
    if argv[0] == "--write":
        path.write_text(text[:start] + wanted + text[end:])
        print(f"chart-values-doc: wrote the values reference into {path}")
        return 0
    if text[start:end] != wanted:
        fail(f"{path}: the values reference differs from values.schema.json and values.yaml: "
             f"run scripts/chart-values-doc.py --write {path}")
    print(f"chart-values-doc: {path}'s values reference is generated from the schema and values.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
