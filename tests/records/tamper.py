"""Tampered copies of an export file (its JSON object), each with the fault ``truco verify``
must name: the check, and where (hand, version, seat)."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from truco_contract import record_file
from truco_match import records


@dataclass(frozen=True)
class Expected:
    """The fault a tampered copy must fail with."""

    check: str
    hand: int | None = None
    version: int | None = None
    seat: int | None = None


Tampered = tuple[dict[str, Any], Expected]


def _middle_hand(data: dict[str, Any]) -> int:
    """A 0-based hand index away from the ends (the second hand when there are few)."""
    n = len(data["hands"])
    assert n >= 2, "the match should have several hands"
    return max(1, n // 2)


def changed_card(data: dict[str, Any]) -> Tampered:
    """Two cards of a revealed deal swapped (the first two of a middle hand)."""
    out = copy.deepcopy(data)
    k = _middle_hand(out)
    cards = out["reveal"]["deals"][k]["cards"]
    cards[0], cards[1] = cards[1], cards[0]
    return out, Expected("deals", hand=k + 1)


def changed_commitment(data: dict[str, Any]) -> Tampered:
    """The commitment a middle hand published when it started replaced by another hash."""
    out = copy.deepcopy(data)
    k = _middle_hand(out)
    hand = out["hands"][k]
    hand["deckCommitment"] = hashlib.sha256(b"another deck").hexdigest()
    return out, Expected("deals", hand=k + 1, version=int(hand["version"]))


def changed_action(data: dict[str, Any]) -> Tampered:
    """A face-up play changed to a card the seat does not hold (one dealt to another seat in
    that hand and not played yet), in the second hand or later when there is one."""
    record = record_file.record_from_json(json.dumps(data))
    replayed = list(records.replay_record(record))
    candidates = []
    for i, step in enumerate(record.steps):
        before = replayed[i].state  # replayed[0] is the creation; replayed[i] precedes steps[i]
        a = step.action
        h = before.hand
        if a is None or a.kind != "play" or a.card is None or a.face_down or h is None or step.seat is None:
            continue
        others = [c for s, cards in enumerate(h.cards) if s != step.seat for c in cards]
        if others:
            candidates.append((h.number >= 2, i, step, h.number, others[0]))
    assert candidates, "the match should have face-up plays"
    _, i, step, hand_number, card = max(candidates, key=lambda c: (c[0], -c[1]))
    out = copy.deepcopy(data)
    out["steps"][i]["action"]["playCard"]["card"] = card
    return out, Expected("replay", hand=hand_number, version=step.version, seat=step.seat)


def swapped_client_seed(data: dict[str, Any]) -> Tampered:
    """The client seeds of the first two seats that gave one swapped in the match's fairness."""
    out = copy.deepcopy(data)
    given = [c for c in out["match"]["fairness"]["clientSeeds"] if "seat" in c]
    assert len(given) >= 2, "two seats should have given client seeds"
    given[0]["seed"], given[1]["seed"] = given[1]["seed"], given[0]["seed"]
    seat = given[0]["seat"]
    join = next(
        s
        for s in out["steps"]
        if "join" in s and s["join"].get("seat", 0) == seat and s["join"].get("clientSeed")
    )
    return out, Expected("client seeds", version=int(join["version"]), seat=seat)


TAMPERINGS = {
    "changed_card": changed_card,
    "changed_commitment": changed_commitment,
    "changed_action": changed_action,
    "swapped_client_seed": swapped_client_seed,
}
