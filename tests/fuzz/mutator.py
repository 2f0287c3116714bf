"""A JSON-aware mutator for atheris: most inputs of the parsers fuzzed here are JSON, and byte
flips alone mostly break the JSON itself, so the parser behind it is never reached.

:func:`mutate` parses the input; when it is JSON it changes one node of the tree (a value
replaced by an edge case or by a value from elsewhere in the tree, a key dropped or added, a
list item doubled or dropped, a string's bytes mutated by libFuzzer), else (and now and then
anyway) it lets libFuzzer mutate the bytes. Coverage still decides which results are kept.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

EDGE_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2, 3, 4, 7, 40, 255, 256, 2**31, -(2**31) - 1, 2**63, 2**64, 10**400,
    0.5, -0.0, 1e308, "", "0", "-1", "s", "٣", "１", "\udcff", "\u0000", "x" * 300, "=" * 4, "!!!!",
    "AAAA", "YWJj", "tc1...", "NaN", "Infinity", "1e999", [], {}, [None], {"": None},
)  # fmt: skip
"""Values a mutation may put anywhere: bounds, wrong types, odd text, empty containers."""


Mutate = Callable[[bytes, int], bytes]


def _nodes(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key) of the tree, depth first."""
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((value, k))
            _nodes(v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((value, i))
            _nodes(v, out)
    return out


def _keys(value: Any, out: set[str]) -> set[str]:
    if isinstance(value, dict):
        out.update(value)
        for v in value.values():
            _keys(v, out)
    elif isinstance(value, list):
        for v in value:
            _keys(v, out)
    return out


def _new_value(
    rng: random.Random, tree: Any, old: Any, nodes: list[tuple[Any, Any]], bytes_mutate: Mutate
) -> Any:
    pick = rng.randrange(6)
    if pick == 0 and nodes:  # splice: a value from elsewhere in the tree
        parent, key = rng.choice(nodes)
        return json.loads(json.dumps(parent[key]))
    if pick == 1 and isinstance(old, str):
        raw = bytes_mutate(old.encode("utf-8", "surrogatepass"), max(8, 2 * len(old)))
        return raw.decode("utf-8", "replace")
    if pick == 2 and isinstance(old, bool | int) and not isinstance(old, bool):
        return old + rng.choice((-1, 1, -old - 1, 2**32, 1 << rng.randrange(70)))
    if pick == 3 and isinstance(old, list | dict) and old:
        return [] if isinstance(old, list) else {}
    return json.loads(json.dumps(rng.choice(EDGE_VALUES)))


def mutate_tree(tree: Any, rng: random.Random, bytes_mutate: Mutate) -> Any:
    """One structural change of a JSON tree (in place where it can; returns the new root)."""
    nodes = _nodes(tree, [])
    if not nodes:
        return _new_value(rng, tree, tree, nodes, bytes_mutate)
    parent, key = rng.choice(nodes)
    op = rng.randrange(10)
    if op == 0 and isinstance(parent, dict):
        del parent[key]
    elif op == 1 and isinstance(parent, dict):
        keys = sorted(_keys(tree, set())) or ["x"]
        parent[rng.choice(keys)] = _new_value(rng, tree, None, nodes, bytes_mutate)
    elif op == 2 and isinstance(parent, list):
        parent.insert(rng.randrange(len(parent) + 1), json.loads(json.dumps(parent[key])))
    elif op == 3 and isinstance(parent, list):
        del parent[key]
    elif op == 4 and isinstance(parent, list) and len(parent) > 1:
        j = rng.randrange(len(parent))
        parent[key], parent[j] = parent[j], parent[key]
    else:
        parent[key] = _new_value(rng, tree, parent[key], nodes, bytes_mutate)
    return tree


def mutate(data: bytes, max_size: int, seed: int, bytes_mutate: Mutate) -> bytes:
    """libFuzzer's custom mutator: a structural change of JSON input, else a byte mutation."""
    rng = random.Random(seed)
    if rng.randrange(8):
        try:
            tree = json.loads(data)
        except (ValueError, RecursionError):
            tree = None
        if tree is not None or data.strip() == b"null":
            for _ in range(1 + rng.randrange(3)):
                tree = mutate_tree(tree, rng, bytes_mutate)
            out = json.dumps(tree, ensure_ascii=rng.randrange(2) == 0).encode("utf-8", "surrogatepass")
            if len(out) <= max_size:
                return out
    return bytes_mutate(data, max_size)
