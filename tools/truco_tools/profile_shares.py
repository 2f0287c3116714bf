"""Where a profile's time goes, by the layer of the code that ran: the self time of every
sample (its innermost Python frame) grouped by the file that frame is in.

Reads py-spy's raw output (``py-spy record -f raw``: one line per distinct stack, frames
innermost last, separated by ``;``, then the sample count), as in docs/benchmarks.md::

    py-spy record -f raw --full-filenames -o harness.raw -- \\
        .venv/bin/python benchmarks/service_path.py --rounds 1
    python -m truco_tools.profile_shares harness.raw
    python -m truco_tools.profile_shares worker.raw --top 15      # and the 15 busiest functions
    python -m truco_tools.profile_shares half.raw --rate 200 --per 16214 \
        --against saturated.raw --against-per 27060 --top 15     # us per move, side by side

With ``--per N`` (what the window did: moves, actions) and ``--rate`` (py-spy's ``-r``) each
layer is also printed as microseconds of samples per unit; with ``--against`` another
profile's, each layer and function with both figures and their difference, the largest
difference first: where one load's cost per move goes beyond another's.

A frame's layer is decided by its file's path (the first rule that matches, in the order of
``LAYERS``); native frames (``--native``) that are not Python count as ``native``. The shares
are of all the samples in the file, idle ones included when the recording kept them
(``--idle``); leave them out with ``--skip-idle``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

LAYERS: tuple[tuple[str, str], ...] = (
    ("engine", "/truco_engine/"),
    ("store", "/truco_server/stores/"),
    ("server", "/truco_server/"),
    ("contract", "/truco_contract/"),
    ("protobuf", "/google/protobuf/"),
    ("grpc", "/grpc/"),
    ("redis-py", "/redis/"),
    ("asyncio", "/asyncio/"),
    ("structlog", "/structlog/"),
    ("prometheus", "/prometheus_client/"),
)
"""(layer, path fragment), the first match wins: the store before the rest of the server."""

IDLE = re.compile(r"(^|\.)(select|poll|epoll_wait|wait|acquire|sleep)$")
"""Innermost functions of a thread waiting rather than working (for ``--skip-idle``), by the
last part of their qualified name (``EpollSelector.select``, ``Condition.wait``)."""

FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def layer_of(file: str) -> str:
    """The layer of a frame in ``file`` (a path as py-spy prints it)."""
    path = "/" + file.lstrip("/")
    for layer, fragment in LAYERS:
        if fragment in path:
            return layer
    if file.endswith(".py") or file.startswith("<"):  # <string>, <frozen importlib._bootstrap>
        return "python, other (stdlib, dataclasses, third party)"
    return "native"


def parse(lines: Iterable[str]) -> list[tuple[list[str], int]]:
    """The (frames, samples) of each line of a raw profile; malformed lines are an error."""
    stacks: list[tuple[list[str], int]] = []
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, sep, count = line.rpartition(" ")
        if not sep or not count.isdigit():
            raise ValueError(f"line {number}: not `frame;frame;... count`: {line[:80]!r}")
        stacks.append((stack.split(";"), int(count)))
    return stacks


def shares(
    stacks: list[tuple[list[str], int]], skip_idle: bool = False
) -> tuple[Counter[str], Counter[str], int]:
    """Samples per layer and per innermost function (``function (file)``), and the total."""
    layers: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    total = 0
    for frames, count in stacks:
        leaf = frames[-1]
        match = FRAME.match(leaf)
        function, file = (match["function"], match["file"]) if match else (leaf, "")
        if skip_idle and IDLE.search(function):
            continue
        layers[layer_of(file)] += count
        functions[f"{function} ({file})"] += count
        total += count
    return layers, functions, total


def _load(path: Path, skip_idle: bool) -> tuple[Counter[str], Counter[str], int]:
    with path.open(encoding="utf-8") as f:
        layers, functions, total = shares(parse(f), skip_idle=skip_idle)
    if not total:
        raise ValueError("no samples")
    return layers, functions, total


def _side_by_side(
    this: Counter[str], other: Counter[str], scale: float, other_scale: float, top: int
) -> list[str]:
    """Lines ``this other difference name`` (us per unit), the largest difference first."""
    rows = [(this[k] * scale, other[k] * other_scale, k) for k in set(this) | set(other)]
    rows.sort(key=lambda r: (r[1] - r[0], r[2]))
    return [f"  {a:8.1f} {b:8.1f} {a - b:+8.1f}  {name}" for a, b, name in rows[:top]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m truco_tools.profile_shares",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("profile", type=Path, help="py-spy raw output (record -f raw)")
    parser.add_argument("--top", type=int, default=0, help="also print the N busiest functions")
    parser.add_argument("--skip-idle", action="store_true", help="leave waiting frames out")
    parser.add_argument(
        "--rate", type=float, default=100.0, help="samples per second of the recording (py-spy -r)"
    )
    parser.add_argument(
        "--per", type=float, default=0.0, help="units (moves, actions) in the profile's window"
    )
    parser.add_argument("--against", type=Path, help="another raw profile, printed beside this one")
    parser.add_argument("--against-per", type=float, default=0.0, help="units in the other profile's window")
    args = parser.parse_args(argv)
    if args.against is not None and not (args.per > 0 and args.against_per > 0):
        parser.error("--against needs --per and --against-per (a cost per unit compares; shares do not)")
    if args.per < 0 or args.rate <= 0:
        parser.error("--per must not be negative and --rate must be above zero")
    loaded = []
    for path in (args.profile, args.against):
        if path is None:
            continue
        try:
            loaded.append(_load(path, args.skip_idle))
        except (OSError, ValueError) as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            return 2
    layers, functions, total = loaded[0]
    scale = 1e6 / args.rate / args.per if args.per else 0.0
    if args.against is not None:
        o_layers, o_functions, o_total = loaded[1]
        o_scale = 1e6 / args.rate / args.against_per
        print(f"us per unit: {args.profile} {total * scale:.1f}, {args.against} {o_total * o_scale:.1f}")
        print("by layer (this, other, difference):")
        print("\n".join(_side_by_side(layers, o_layers, scale, o_scale, len(layers) + len(o_layers))))
        if args.top:
            print(f"by function, the {args.top} largest differences:")
            print("\n".join(_side_by_side(functions, o_functions, scale, o_scale, args.top)))
        return 0
    print(f"samples: {total}" + (f" ({total * scale:.1f} us per unit)" if scale else ""))
    for layer, n in layers.most_common():
        print(f"{layer}: {100 * n / total:.1f} %" + (f"  {n * scale:.1f} us" if scale else ""))
    if args.top:
        print(f"busiest functions (self time), top {args.top}:")
        for function, n in functions.most_common(args.top):
            print(f"  {100 * n / total:5.1f} %  {function}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
