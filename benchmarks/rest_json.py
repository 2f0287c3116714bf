"""The REST face's JSON writing, timed: protobuf's printer against ``json_mapping.message_to_dict``.

    python benchmarks/rest_json.py                 # a random paulista match, both seats
    python benchmarks/rest_json.py --case argentine-6p --repeat 20

Every stream message a REST client gets is a protobuf message written as JSON: the
object (``json_format.MessageToDict`` with whole numbers as integers, before; the plan-driven
writer of ``truco_contract.json_mapping``, now), then its text (``json.dumps``, before;
orjson, now). This plays one random match, builds the ``StreamObservationsResponse`` of
every version for every seat (as the stream sends them), checks that both ways give the
same JSON, and prints the mean time per message of each step, old and new, alternating
``--repeat`` times in one process.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format

import truco_engine as te
from truco_contract import codec
from truco_contract.json_mapping import message_to_dict, whole_numbers
from truco_contract.pb import match_service_pb2
from truco_match import table
from truco_match.events import EventView, MatchStatus, redact
from truco_match.views import view
from truco_server.transports.rest.app import _dumps as _new_text  # what the REST face writes with


def _messages(case: str, seed: int) -> list[match_service_pb2.StreamObservationsResponse]:
    rules = te.get_rules(case)
    rng = random.Random(seed)
    setup = table.Setup(rules=rules, seed=rng.randbytes(32))
    step = table.start(setup, table.seats_of(rules), b"entropy", 0)
    state, life, entries = step.state, step.life, step.entries
    out = []
    version = 0
    while True:
        first, version = version + 1, version + len(entries)
        status = MatchStatus.FINISHED if te.is_over(state) else MatchStatus.ACTIVE
        for seat in range(rules.players):
            msg = match_service_pb2.StreamObservationsResponse()
            msg.update.version = version
            for v, e in enumerate(entries, first):
                msg.update.events.append(codec.event_to_proto(EventView(v, redact(e, seat), time=1.7e9 + v)))
            sv = view(state, seat, version, status, life, 1.7e9, 1.7e9 + version)
            msg.update.observation.CopyFrom(codec.observation_to_proto(sv, rules))
            out.append(msg)
        if te.is_over(state):
            return out
        seat = te.to_act(state)[0]
        step = table.act(setup, state, life, seat, rng.choice(te.legal_actions(state, seat)), version * 500)
        state, life, entries = step.state, step.life, step.entries


def _old_object(msg: Any) -> Any:
    return whole_numbers(json_format.MessageToDict(msg, always_print_fields_with_no_presence=True))


def _old_text(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _time(fn: Callable[[Any], Any], items: list[Any]) -> float:
    start = time.perf_counter()
    for item in items:
        fn(item)
    return (time.perf_counter() - start) / len(items) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--case", default="paulista-2p", help="preset and players (default paulista-2p)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=10, help="alternations (default 10)")
    args = parser.parse_args(argv)
    messages = _messages(args.case, args.seed)
    objects = [message_to_dict(m) for m in messages]
    for m, obj in zip(messages, objects, strict=True):
        if obj != _old_object(m) or json.loads(_new_text(obj)) != json.loads(_old_text(obj)):
            print(f"the two writers differ on a message of version {m.update.version}", file=sys.stderr)
            return 1
    size = statistics.mean(len(_new_text(o).encode()) for o in objects)
    print(f"# {len(messages)} stream messages of one {args.case} match, {size:.0f} bytes of JSON on average")
    times: dict[str, list[float]] = {k: [] for k in ("object old", "object new", "text old", "text new")}
    for _ in range(args.repeat):
        times["object old"].append(_time(_old_object, messages))
        times["object new"].append(_time(message_to_dict, messages))
        times["text old"].append(_time(_old_text, objects))
        times["text new"].append(_time(_new_text, objects))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"object (MessageToDict -> message_to_dict): {med['object old']:.1f} -> {med['object new']:.1f} us "
          f"per message (x{med['object new'] / med['object old']:.2f})")  # fmt: skip
    print(f"text (json.dumps -> orjson): {med['text old']:.1f} -> {med['text new']:.1f} us "
          f"per message (x{med['text new'] / med['text old']:.2f})")  # fmt: skip
    old, new = med["object old"] + med["text old"], med["object new"] + med["text new"]
    print(f"both: {old:.1f} -> {new:.1f} us per message (x{new / old:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
