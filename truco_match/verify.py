"""Check a finished match's record end to end (``truco verify``).

:func:`verify` runs six checks in order and stops at the first fault, which it names
precisely (the hand, the step's version, the seat):

1. **record format** — a ``truco-match-record/1`` record of a match that is over (so it
   holds the seed and every card), its hands numbered from 1, one revealed deal per hand.
2. **seed commitment** — ``sha256(reveal.seed)`` is the ``seed_hash`` published when the
   match was created; the deal source agrees with the operator's deck orders.
3. **client seeds** — each join step's seed is the fairness entry of that seat, the entries
   are in the order the seeds were given (the creator's first), and
   ``mix(seed, client seeds)`` is the revealed mixed seed.
4. **deals** — each hand's deck is the shuffle of the mixed seed (or, marked as such, the
   operator's deck order), its salt is the mixed seed's, and ``sha256(salt:deck)`` is both
   the commitment published when the hand started and the one in the reveal.
5. **replay** — every step through the rules (:func:`truco_match.records.replay_record`):
   every action legal, every version reproduced up to the match's version, every hand's
   dealer and commitment as recorded, the same reveal at the end.
6. **result** — the replayed score and winner are the match's result (none when it was
   cancelled or aborted).

``docs/fairness.md`` specifies the scheme; ``docs/verify_deals.py`` checks checks 2–4 with
SHA-256 alone (not the rules).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import truco_engine as te
from truco_match.events import DealSource, MatchRevealed, MatchStatus
from truco_match.fairness import deck_for_hand, mix, salt_for_hand, seed_hash
from truco_match.records import (
    FORMAT,
    MatchRecord,
    RecordedHand,
    RecordStep,
    Replayed,
    hands_of,
    replay_record,
)

FORMAT_CHECK = "record format"
SEED_CHECK = "seed commitment"
CLIENT_SEEDS_CHECK = "client seeds"
DEALS_CHECK = "deals"
REPLAY_CHECK = "replay"
RESULT_CHECK = "result"
CHECKS = (FORMAT_CHECK, SEED_CHECK, CLIENT_SEEDS_CHECK, DEALS_CHECK, REPLAY_CHECK, RESULT_CHECK)
"""The checks, in the order they run."""


@dataclass(frozen=True, slots=True)
class Passed:
    """A check that passed, with what it established."""

    check: str
    detail: str

    def __str__(self) -> str:
        return f"{self.check}: {self.detail}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """The first thing that does not hold: which check, where, and what."""

    check: str
    message: str
    hand: int | None = None
    """Hand number (1-based over the match)."""
    version: int | None = None
    """The version concerned: a step's (the match's version after it), or a hand's (that of
    its ``hand_started`` event)."""
    seat: int | None = None

    @property
    def where(self) -> str:
        """``hand 3, version 57, seat 1`` (the parts that are known)."""
        parts = []
        if self.hand is not None:
            parts.append(f"hand {self.hand}")
        if self.version is not None:
            parts.append(f"version {self.version}")
        if self.seat is not None:
            parts.append(f"seat {self.seat}")
        return ", ".join(parts)

    def __str__(self) -> str:
        where = self.where
        return f"{self.check}: {where}: {self.message}" if where else f"{self.check}: {self.message}"


@dataclass(frozen=True, slots=True)
class Report:
    """What :func:`verify` found: every check passed, in order, and the fault, if any."""

    passed: tuple[Passed, ...]
    fault: Fault | None
    match_id: str = ""
    final: te.MatchState | None = field(default=None, compare=False)
    """The replayed final state (when the replay passed)."""

    @property
    def ok(self) -> bool:
        return self.fault is None

    def summary(self) -> str:
        """One line: what was verified, or the fault."""
        name = f"match {self.match_id}" if self.match_id else "record"
        if self.fault is not None:
            return f"{name}: FAILED {self.fault}"
        return f"{name}: verified ({', '.join(p.check for p in self.passed)})"


class _Failed(Exception):
    def __init__(self, fault: Fault) -> None:
        super().__init__(str(fault))
        self.fault = fault


def _fail(check: str, message: str, **where: int | None) -> _Failed:
    return _Failed(Fault(check=check, message=message, **where))


@dataclass(slots=True)
class _Context:
    record: MatchRecord
    reveal: MatchRevealed = field(init=False)
    last: Replayed | None = None


def _short(data: bytes | str, n: int = 16) -> str:
    text = data.hex() if isinstance(data, bytes) else data
    return text if len(text) <= n else text[:n] + "…"


# ------------------------------------------------------------------------- the checks
def _format(ctx: _Context) -> str:
    r = ctx.record
    m = r.match
    if r.format != FORMAT:
        raise _fail(FORMAT_CHECK, f"format is {r.format!r}, expected {FORMAT!r}")
    if m.state is MatchStatus.ACTIVE or r.reveal is None:
        what = "is still active" if m.state is MatchStatus.ACTIVE else f"is {m.state} but the record"
        raise _fail(
            FORMAT_CHECK,
            f"the match {what} has no reveal: a record fetched during the match has no seed and hides "
            "cards; fetch it again once the match is over",
        )
    ctx.reveal = r.reveal
    if m.fairness is None:
        raise _fail(FORMAT_CHECK, "the match has no fairness (seed hash, client seeds)")
    for i, h in enumerate(r.hands, 1):
        if h.hand_number != i:
            raise _fail(FORMAT_CHECK, f"hand {h.hand_number} is listed in position {i}", hand=i)
    if len(r.reveal.deals) != len(r.hands):
        raise _fail(FORMAT_CHECK, f"the reveal has {len(r.reveal.deals)} deals for {len(r.hands)} hands")
    for st in r.steps:
        a = st.action
        if a is not None and a.kind in ("play", "discard") and a.card is None and a.slot is None:
            raise _fail(
                FORMAT_CHECK,
                f"the card of this {a.kind} is hidden (the record was fetched during the match)",
                version=st.version,
                seat=st.seat,
            )
    return f"{FORMAT}, match {m.state}, {len(r.steps)} steps, {len(r.hands)} hands, version {m.version}"


def _seed(ctx: _Context) -> str:
    fair = ctx.record.match.fairness
    assert fair is not None
    got = seed_hash(ctx.reveal.seed)
    if got != fair.seed_hash:
        raise _fail(
            SEED_CHECK,
            f"sha256 of the revealed seed is {got}, but the hash published at creation is {fair.seed_hash}",
        )
    decks = fair.operator_decks
    if (fair.deal_source is DealSource.OPERATOR_DECKS) != (decks > 0):
        raise _fail(SEED_CHECK, f"the deal source is {fair.deal_source} with {decks} operator deck orders")
    source = {
        DealSource.SERVER_SEED: "the server's secret seed",
        DealSource.OPERATOR_SEED: "a seed the operator chose (marked as such from the creation)",
        DealSource.OPERATOR_DECKS: f"{decks} deck orders the operator gave (marked as such), then the seed",
    }[fair.deal_source]
    return f"sha256(seed) = {_short(got)} as published at creation; deals from {source}"


def _client_seeds(ctx: _Context) -> str:
    r = ctx.record
    fair = r.match.fairness
    assert fair is not None
    given = fair.client_seeds
    if any(c.seat is None for c in given[1:]):
        raise _fail(CLIENT_SEEDS_CHECK, "the creator's client seed is listed after a seat's")
    listed = {c.seat: c.seed for c in given if c.seat is not None}
    if len(listed) != sum(c.seat is not None for c in given):
        raise _fail(CLIENT_SEEDS_CHECK, "a seat is listed with two client seeds")
    joins = [st for st in r.steps if st.join is not None]
    order: list[int] = []
    for st in joins:
        assert st.join is not None
        seat, seed = st.join.seat, st.join.client_seed
        if st.seat is not None and st.seat != seat:
            raise _fail(CLIENT_SEEDS_CHECK, f"the step is seat {st.seat}'s", version=st.version, seat=seat)
        if listed.get(seat, b"") != seed:
            want = listed.get(seat)
            raise _fail(
                CLIENT_SEEDS_CHECK,
                f"joined with client seed {_short(seed, 32) or 'none'}, but the match's fairness lists "
                f"{_short(want, 32) if want is not None else 'none'} for it",
                version=st.version,
                seat=seat,
            )
        if seed:
            order.append(seat)
    for seat in listed:
        if seat not in order:
            raise _fail(CLIENT_SEEDS_CHECK, "listed with a client seed but never joined with one", seat=seat)
    in_fairness = [c.seat for c in given if c.seat is not None]
    if in_fairness != order:
        raise _fail(
            CLIENT_SEEDS_CHECK,
            f"the fairness lists the seats' seeds in the order {in_fairness}, but they joined in the "
            f"order {order} (the seeds are mixed in the order given)",
        )
    mixed = mix(ctx.reveal.seed, [c.seed for c in given])
    if mixed != ctx.reveal.mixed_seed:
        raise _fail(
            CLIENT_SEEDS_CHECK,
            f"mix(seed, client seeds) is {_short(mixed)}, but the reveal's mixed seed is "
            f"{_short(ctx.reveal.mixed_seed)}",
        )
    who = (["the creator's"] if given and given[0].seat is None else []) + [f"seat {s}'s" for s in order]
    seeds = f"{len(given)} client seeds ({', '.join(who)}), as given" if given else "no client seeds"
    return f"{seeds}; mix(seed, client seeds) = {_short(mixed)}, the revealed mixed seed"


def _deals(ctx: _Context) -> str:
    r = ctx.record
    fair = r.match.fairness
    assert fair is not None
    cards = r.match.rules.deck_cards
    mixed = ctx.reveal.mixed_seed
    for k, (hand, deal) in enumerate(zip(r.hands, ctx.reveal.deals, strict=True), 1):
        operator = k <= fair.operator_decks
        if deal.operator_deck != operator:
            said = "marks it as" if deal.operator_deck else "does not mark it as"
            raise _fail(
                DEALS_CHECK,
                f"the reveal {said} an operator's deck order; the match has {fair.operator_decks} of them",
                hand=k,
            )
        if operator:
            if sorted(deal.cards) != sorted(cards):
                raise _fail(DEALS_CHECK, "the operator's deck order is not a permutation of the deck", hand=k)
            deck = list(deal.cards)
        else:
            deck = deck_for_hand(mixed, k, cards)
            if list(deal.cards) != deck:
                raise _fail(DEALS_CHECK, _deck_difference(deal.cards, deck), hand=k)
        salt = salt_for_hand(mixed, k)
        if deal.salt != salt:
            raise _fail(DEALS_CHECK, f"the revealed salt is {deal.salt}, the mixed seed's is {salt}", hand=k)
        commitment = te.deck_commitment(deck, salt)
        if deal.commitment != commitment:
            raise _fail(
                DEALS_CHECK,
                f"the reveal's commitment is {deal.commitment}, sha256(salt:deck) is {commitment}",
                hand=k,
            )
        if hand.deck_commitment != commitment:
            raise _fail(
                DEALS_CHECK,
                f"the commitment published when the hand started is {hand.deck_commitment}, "
                f"but sha256(salt:deck) is {commitment}",
                hand=k,
                version=hand.version,
            )
    ops = f" ({fair.operator_decks} from the operator's deck orders)" if fair.operator_decks else ""
    return (
        f"{len(r.hands)} hands{ops}: each deck is the shuffle of the mixed seed, each salt and "
        "sha256(salt:deck) match the commitment published when the hand started and the reveal"
    )


def _deck_difference(revealed: Sequence[str], expected: Sequence[str]) -> str:
    if len(revealed) != len(expected):
        return f"the revealed deck has {len(revealed)} cards, the rule set's deck {len(expected)}"
    i = next(i for i, (a, b) in enumerate(zip(revealed, expected, strict=True)) if a != b)
    return (
        f"the revealed deck is not the shuffle of the mixed seed: card {i} is {revealed[i]}, "
        f"the shuffle gives {expected[i]}"
    )


def _describe(step: RecordStep) -> str:
    if step.action is not None:
        return step.action.text()
    for name, what in (
        ("join", "join"),
        ("add_time", "add time"),
        ("adjudicate", "adjudication"),
        ("cancel", "cancellation"),
        ("abort", "abort"),
        ("forfeit", "forfeit"),
        ("reissue_credential", "credential re-issue"),
        ("timeout", "timeout without a move"),
        ("remind", "turn reminder"),
        ("take_over", "bot takeover"),
    ):
        if getattr(step, name) is not None:
            return what
    return "empty step"


def _replay(ctx: _Context) -> str:
    r = ctx.record
    steps = r.steps
    done = 0
    hands: list[RecordedHand] = []
    try:
        for x in replay_record(r):
            done += 1
            ctx.last = x
            hands.extend(hands_of(x.entries, x.first_version))
    except te.RecordError as exc:
        cause = exc.__cause__ if isinstance(exc.__cause__, te.TrucoError) else exc
        if done == 0:
            raise _fail(REPLAY_CHECK, f"the match cannot be set up: {cause}") from None
        step = steps[done - 1]
        assert ctx.last is not None
        h = ctx.last.state.hand
        message = str(cause).removeprefix(f"version {step.version}: ")
        raise _fail(
            REPLAY_CHECK,
            f"{_describe(step)}: {message}",
            hand=h.number if h is not None else None,
            version=step.version,
            seat=step.seat,
        ) from None
    except te.TrucoError as exc:  # the rules or the seats do not make a match
        raise _fail(REPLAY_CHECK, f"the match cannot be set up: {exc}") from None
    last = ctx.last
    assert last is not None
    version = last.first_version + len(last.entries) - 1
    if version != r.match.version:
        raise _fail(
            REPLAY_CHECK,
            f"the steps end at version {version}, but the match is at version {r.match.version}",
        )
    for k, (got, recorded) in enumerate(zip(hands, r.hands, strict=False), 1):
        if got != recorded:
            raise _fail(
                REPLAY_CHECK,
                f"the replay deals it at version {got.version} by dealer {got.dealer} "
                f"(game {got.game_number}), "
                f"the record says version {recorded.version} by dealer {recorded.dealer} "
                f"(game {recorded.game_number})",
                hand=k,
            )
    if len(hands) != len(r.hands):
        raise _fail(REPLAY_CHECK, f"the replay deals {len(hands)} hands, the record lists {len(r.hands)}")
    end = last.entries[-1] if last.entries else None
    if end != ctx.reveal:
        raise _fail(REPLAY_CHECK, "the replay does not end with the record's reveal")
    return (
        f"{len(steps)} steps through the rules: every action legal, versions 1..{version} reproduced, "
        "every hand's dealer and commitment as recorded"
    )


def _result(ctx: _Context) -> str:
    r = ctx.record
    assert ctx.last is not None
    state = ctx.last.state
    status = r.match.state
    last_step = r.steps[-1] if r.steps else None
    expected = MatchStatus.FINISHED
    if last_step is not None and last_step.cancel is not None:
        expected = MatchStatus.CANCELLED
    elif last_step is not None and last_step.abort is not None:
        expected = MatchStatus.ABORTED
    if status is not expected:
        raise _fail(RESULT_CHECK, f"the match is {status}, but its steps make it {expected}")
    result = r.match.result
    if status is not MatchStatus.FINISHED:
        if result is not None:
            raise _fail(RESULT_CHECK, f"the match is {status} but has a result")
        return f"{status}: no result"
    got = (state.winner, tuple(state.scores), tuple(state.games))
    if result is None:
        raise _fail(RESULT_CHECK, "the match is finished but has no result")
    want = (result.winner_team, result.scores, result.games_won)
    if got != want:
        raise _fail(
            RESULT_CHECK,
            f"the replay ends with team {got[0]} winning, scores {list(got[1])}, games {list(got[2])}; "
            f"the match's result is team {want[0]}, scores {list(want[1])}, games {list(want[2])}",
        )
    scores = f"scores {list(state.scores)}, games {list(state.games)}"
    return f"team {state.winner} won, {scores}, as the match's result says"


_RUN: tuple[tuple[str, Callable[[_Context], str]], ...] = (
    (FORMAT_CHECK, _format),
    (SEED_CHECK, _seed),
    (CLIENT_SEEDS_CHECK, _client_seeds),
    (DEALS_CHECK, _deals),
    (REPLAY_CHECK, _replay),
    (RESULT_CHECK, _result),
)


def verify(record: MatchRecord) -> Report:
    """Every check in order, up to the first fault (module docstring)."""
    ctx = _Context(record)
    passed: list[Passed] = []
    for name, check in _RUN:
        try:
            detail = check(ctx)
        except _Failed as failed:
            return Report(tuple(passed), failed.fault, record.match.match_id)
        except (ArithmeticError, AssertionError, LookupError, TypeError, ValueError) as exc:
            # a record from a file may be anything: what cannot be checked fails the check
            fault = Fault(check=name, message=f"the record cannot be checked: {exc or type(exc).__name__}")
            return Report(tuple(passed), fault, record.match.match_id)
        passed.append(Passed(name, detail))
    return Report(tuple(passed), None, record.match.match_id, ctx.last.state if ctx.last else None)
