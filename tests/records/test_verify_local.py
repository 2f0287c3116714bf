"""``truco verify`` (``truco_match.verify``) and the docs verifier (``docs/verify_deals.py``)
on records made in-process through the contract's table: every preset passes both, and each
kind of fault is named by the check that finds it, with the hand, version and seat."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import random
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import truco_engine as te
from tests.helpers.scripts import load_script
from tests.records.local import play_record
from tests.records.tamper import TAMPERINGS, Expected
from truco_contract import record_file
from truco_contract.record_file import verify_json
from truco_match import records
from truco_match.events import ClientSeed, DealSource, MatchStatus
from truco_match.fairness import deck_for_hand
from truco_match.matches import MatchResult
from truco_match.verify import CHECKS, Report, verify

ROOT = Path(__file__).resolve().parents[2]
DOCS_VERIFIER = ROOT / "docs" / "verify_deals.py"

pytestmark = pytest.mark.timeout(60)


def docs_verifier() -> ModuleType:
    return load_script(DOCS_VERIFIER, "verify_deals")


DV = docs_verifier()


def docs_check(data: dict[str, Any]) -> str | None:
    """The docs verifier's fault (``None``: it passes), its printed lines swallowed."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            DV.check(data)
        except (ValueError, KeyError, IndexError) as exc:
            return str(exc)
    return None


def export(record: records.MatchRecord) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(record_file.record_to_json(record))
    return data


def assert_fault(report: Report, expected: Expected) -> None:
    fault = report.fault
    assert fault is not None, "the tampered record verified"
    assert (fault.check, fault.hand, fault.version, fault.seat) == (
        expected.check,
        expected.hand,
        expected.version,
        expected.seat,
    ), str(fault)
    assert [p.check for p in report.passed] == list(CHECKS[: CHECKS.index(expected.check)])


CASES = [(name, te.get_rules(name).players) for name in te.preset_names()] + [
    ("paulista", 2),
    ("argentine", 4),
    ("argentine", 6),
]


@pytest.mark.parametrize(("preset", "players"), CASES)
def test_every_preset_verifies_with_both_verifiers(preset: str, players: int) -> None:
    rules = te.get_rules(preset, players=players)
    for k in range(2):
        seeds = [f"seat {i} seed {k}".encode() for i in range(players)]
        seeds[-1] = b""  # a seat that joins without a seed
        record = play_record(rules, random.Random(k), creator_seed=b"creator", join_seeds=seeds)
        report = verify(record)
        assert report.ok, report.fault
        assert [p.check for p in report.passed] == list(CHECKS)
        assert report.final is not None and report.final.winner == record.match.result.winner_team  # type: ignore[union-attr]
        text = record_file.record_to_json(record)
        assert record_file.record_to_json(record_file.record_from_json(text)) == text  # the file round-trips
        assert verify_json(text).ok
        assert docs_check(json.loads(text)) is None


def test_records_of_clock_moves_verify_a_silent_flor_included() -> None:
    """Matches where the clock makes half the moves verify with both verifiers and round-trip
    as files -- among them timeouts that made no move: at Argentine for four, every hand
    deals the mano's partner a flor, and when the mano calls envido and the partner lets his
    clock run out, the flor is lost and the envido passes to the other side (a ``timeout``
    step; docs/lifecycle.md)."""
    rules = te.get_rules("argentine-4p")
    hands = [["1e", "4b", "7o"], ["2e", "5b", "6c"], ["3c", "5c", "7c"], ["1b", "4o", "6e"]]
    dealt = [hands[i % 4][i // 4] for i in range(12)]  # in play order from the mano
    deck = [*dealt, *(c for c in rules.deck_cards if c not in dealt)]
    kinds: dict[str, int] = {"clock": 0, "timeout": 0}
    for k in range(12):
        record = play_record(
            rules, random.Random(k), source=DealSource.OPERATOR_DECKS, deck_orders=[deck] * 30, timeouts=0.5
        )
        kinds["clock"] += sum(1 for s in record.steps if s.cause is records.StepCause.CLOCK)
        kinds["timeout"] += sum(1 for s in record.steps if s.timeout is not None)
        report = verify(record)
        assert report.ok, report.fault
        text = record_file.record_to_json(record)
        assert record_file.record_from_json(text) == record
        assert verify_json(text).ok
        assert docs_check(json.loads(text)) is None
    assert kinds["clock"] > 100 and kinds["timeout"] > 0, kinds


@pytest.mark.parametrize(("preset", "overrides"), [("paulista", {"clean_deck": True}), ("mineiro", {})])
def test_blind_plays_and_clean_decks_verify(preset: str, overrides: dict[str, Any]) -> None:
    """The iron hand is played blind, by slot: both verifiers follow the seat's hand."""
    rules = te.get_rules(preset, **overrides)
    slots = 0
    for k in range(30):
        record = play_record(rules, random.Random(k))
        slots += sum(1 for s in record.steps if s.action is not None and s.action.slot is not None)
        assert verify(record).ok
        assert docs_check(export(record)) is None
    assert slots > 0, "no iron hand came up: the blind plays were not exercised"


def test_operator_decks_and_seed_are_marked_and_verified() -> None:
    rules = te.get_rules("paulista", players=2)
    rng = random.Random(5)
    decks = [rng.sample(rules.deck_cards, len(rules.deck_cards)) for _ in range(2)]
    record = play_record(rules, random.Random(1), source=DealSource.OPERATOR_DECKS, deck_orders=decks)
    assert record.reveal is not None and len(record.hands) > 2
    assert [d.operator_deck for d in record.reveal.deals[:3]] == [True, True, False]
    assert [list(d.cards) for d in record.reveal.deals[:2]] == decks
    report = verify(record)
    assert report.ok, report.fault
    assert "2 deck orders the operator gave" in report.passed[1].detail
    assert docs_check(export(record)) is None
    # A deal that hides that it was the operator's fails both verifiers.
    data = export(record)
    data["reveal"]["deals"][0]["operatorDeck"] = False
    assert_fault(verify_json(json.dumps(data)), Expected("deals", hand=1))
    assert docs_check(data) is not None

    chosen = play_record(rules, random.Random(2), source=DealSource.OPERATOR_SEED)
    report = verify(chosen)
    assert report.ok and "a seed the operator chose" in report.passed[1].detail


@pytest.fixture(scope="module")
def record() -> records.MatchRecord:
    """A 4-seat match with a creator's seed and three seats' seeds (one seat gives none)."""
    rules = te.get_rules("paulista", players=4)
    seeds = [b"zero", b"one", b"", b"three"]
    for k in range(100):  # the first deal sequence whose match lasts four hands or more
        made = play_record(rules, random.Random(k), creator_seed=b"creator", join_seeds=seeds)
        if len(made.hands) >= 4:
            return made
    raise AssertionError("no match lasted four hands")


@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_tampered_copies_fail_both_verifiers(record: records.MatchRecord, name: str) -> None:
    data, expected = TAMPERINGS[name](export(record))
    assert_fault(verify_json(json.dumps(data)), expected)
    assert docs_check(data) is not None


def _replace_match(record: records.MatchRecord, **changes: Any) -> records.MatchRecord:
    return dataclasses.replace(record, match=dataclasses.replace(record.match, **changes))


def test_each_check_names_its_fault(record: records.MatchRecord) -> None:
    m, reveal = record.match, record.reveal
    assert m.fairness is not None and reveal is not None
    fair = m.fairness

    # record format: a record of a match still on (no reveal)
    active = dataclasses.replace(_replace_match(record, state=MatchStatus.ACTIVE, result=None), reveal=None)
    report = verify(active)
    assert report.fault is not None and report.fault.check == "record format"
    assert "still active" in report.fault.message
    # ... and one whose face-down card is hidden
    i = next(i for i, s in enumerate(record.steps) if s.action is not None and s.action.kind == "play")
    step = record.steps[i]
    hidden = dataclasses.replace(step, action=te.Action("play", None, face_down=True))
    steps = (*record.steps[:i], hidden, *record.steps[i + 1 :])
    assert_fault(
        verify(dataclasses.replace(record, steps=steps)),
        Expected("record format", version=step.version, seat=step.seat),
    )

    # seed commitment
    other = dataclasses.replace(fair, seed_hash=hashlib.sha256(b"x").hexdigest())
    assert_fault(verify(_replace_match(record, fairness=other)), Expected("seed commitment"))

    # client seeds: the seats' seeds listed out of order, a mixed seed that is not theirs
    creator, *seats = fair.client_seeds
    reordered = dataclasses.replace(fair, client_seeds=(creator, seats[1], seats[0], *seats[2:]))
    report = verify(_replace_match(record, fairness=reordered))
    assert_fault(report, Expected("client seeds"))
    assert report.fault is not None and "order" in report.fault.message
    unlisted = dataclasses.replace(fair, client_seeds=(*fair.client_seeds, ClientSeed(seat=2, seed=b"late")))
    assert_fault(
        verify(_replace_match(record, fairness=unlisted)),
        Expected("client seeds", version=_join(record, 2), seat=2),
    )
    mixed = dataclasses.replace(reveal, mixed_seed=hashlib.sha256(b"y").digest())
    assert_fault(verify(dataclasses.replace(record, reveal=mixed)), Expected("client seeds"))

    # deals: a salt that is not the mixed seed's, a reveal's commitment that is not the deck's
    deals = list(reveal.deals)
    deals[2] = dataclasses.replace(deals[2], salt="00" * 32)
    assert_fault(
        verify(dataclasses.replace(record, reveal=dataclasses.replace(reveal, deals=tuple(deals)))),
        Expected("deals", hand=3),
    )
    deals = list(reveal.deals)
    deals[1] = dataclasses.replace(deals[1], commitment="11" * 32)
    assert_fault(
        verify(dataclasses.replace(record, reveal=dataclasses.replace(reveal, deals=tuple(deals)))),
        Expected("deals", hand=2),
    )

    # replay: a match whose last step is missing; a hand dealt by another dealer
    short = dataclasses.replace(record, steps=record.steps[:-1])
    report = verify(short)
    assert_fault(report, Expected("replay"))
    assert report.fault is not None and f"the match is at version {m.version}" in report.fault.message
    hands = list(record.hands)
    hands[1] = dataclasses.replace(hands[1], dealer=(hands[1].dealer + 1) % 4)
    assert_fault(verify(dataclasses.replace(record, hands=tuple(hands))), Expected("replay", hand=2))

    # result
    assert m.result is not None
    wrong = MatchResult(
        winner_team=1 - m.result.winner_team, scores=m.result.scores, games_won=m.result.games_won
    )
    assert_fault(verify(_replace_match(record, result=wrong)), Expected("result"))


def _join(record: records.MatchRecord, seat: int) -> int:
    return next(s.version for s in record.steps if s.join is not None and s.join.seat == seat)


def test_an_illegal_call_passes_the_docs_verifier_but_not_truco_verify(record: records.MatchRecord) -> None:
    """What docs/fairness.md says the short verifier does NOT check: the calls' legality."""
    data = export(record)
    i, step = next((i, s) for i, s in enumerate(data["steps"]) if "callTruco" in s.get("action", {}))
    step["action"] = {"accept": {}}  # accepting when nothing was called
    assert docs_check(data) is None
    report = verify_json(json.dumps(data))
    assert report.fault is not None and report.fault.check == "replay"
    assert report.fault.version == record.steps[i].version and report.fault.seat == record.steps[i].seat


def test_the_docs_shuffle_is_the_servers() -> None:
    rng = random.Random(3)
    for deck in ("french40", "spanish40", "spanish22"):
        cards = DV.full_deck(deck)
        for hand in (1, 2, 37):
            seed = rng.randbytes(32)
            assert DV.shuffle(seed, hand, cards) == deck_for_hand(seed, hand, cards)


def test_the_docs_deck_orders_are_the_engines() -> None:
    from truco_engine.cards import DECKS

    for name, cards in DECKS.items():
        assert tuple(DV.full_deck(name)) == cards


def test_fairness_doc_quotes_the_verifier_exactly() -> None:
    doc = (ROOT / "docs" / "fairness.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    assert DOCS_VERIFIER.read_text(encoding="utf-8") in blocks
