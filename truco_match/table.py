"""A match's log as a pure function of its setup, its steps and their times.

The server commits what these functions return (one atomic commit per call); the SDK's local
runner plays the same functions in-process, so a match looks the same to a bot locally and
online, event for event and version for version; a record replays through them to the same
log. Dealing is the chance step: every deal that falls due after a step is made here, from
the seed mixed with the client seeds (:mod:`truco_match.fairness`).

Every step takes the current engine state and lifecycle state and returns a :class:`Step`
(new states and the log entries). Times are milliseconds since the match's creation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import truco_engine as te
from truco_match.events import (
    CardList,
    ClientSeed,
    CredentialReissued,
    DealSource,
    Fairness,
    HandCardsShown,
    LogEntry,
    MatchAborted,
    MatchAdjudicated,
    MatchCancelled,
    MatchCreated,
    MatchForfeited,
    MatchResigned,
    MatchRevealed,
    RevealedDeal,
    SeatInfo,
    SeatJoined,
    SeatKind,
    SeatReclaimed,
    SeatTakenOver,
    TimeAdded,
    TimeoutCause,
    TurnReminder,
    TurnTimedOut,
)
from truco_match.fairness import deck_for_hand, mix, salt_for_hand, seed_hash
from truco_match.lifecycle import Life, Lifecycle
from truco_match.timeout import default_move

RESIGN = "resign"
"""The action kind a seat resigns with (never among the engine's legal actions)."""


class ServerSeatError(te.TrucoError):
    """A seat the server's bot plays (created so) cannot be played with its credential."""

    def __init__(self, seat: int, level: int) -> None:
        super().__init__(f"seat {seat} is played by the server's bot (level {level})")
        self.seat = seat


@dataclass(frozen=True, slots=True)
class Dealing:
    """Where each hand's deck order comes from: the explicit deck orders first (hand 1 is
    ``deck_orders[0]``), then the shuffle of the (mixed) seed (docs/fairness.md)."""

    seed: bytes
    deck_orders: tuple[tuple[str, ...], ...] = ()

    def deck(self, hand: int, rules: te.RuleSet) -> list[str]:
        """The deck order of hand ``hand`` (1-based)."""
        if hand <= len(self.deck_orders):
            return list(self.deck_orders[hand - 1])
        return deck_for_hand(self.seed, hand, rules.deck_cards)

    def salt(self, hand: int) -> str:
        """The commitment salt of hand ``hand``."""
        return salt_for_hand(self.seed, hand)


@dataclass(frozen=True, slots=True)
class Setup:
    """What is fixed when a match is created."""

    rules: te.RuleSet
    seed: bytes
    """The server's seed (or the creator's: ``source``)."""
    deck_orders: tuple[tuple[str, ...], ...] = ()
    source: DealSource = DealSource.SERVER_SEED
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    first_dealer: int | None = None
    bots: tuple[int, ...] = ()
    """Per seat: the level of the server's bot that plays it (0: a player); empty: none."""

    def bot_level(self, life: Life, seat: int) -> int:
        """The level of the server's bot playing ``seat`` now (a bot seat, or a seat it took
        over); 0: the seat's player."""
        return (self.bots[seat] if self.bots else 0) or life.taken_over(seat)

    def dealing(self, life: Life) -> Dealing:
        """The dealing of the match: the seed mixed with the client seeds given so far."""
        seeds = [bytes.fromhex(h) for _, h in life.client_seeds]
        return Dealing(mix(self.seed, seeds), self.deck_orders)

    def fairness(self, life: Life) -> Fairness:
        return Fairness(
            deal_source=self.source,
            seed_hash=seed_hash(self.seed),
            operator_decks=len(self.deck_orders),
            client_seeds=tuple(ClientSeed(seat=s, seed=bytes.fromhex(h)) for s, h in life.client_seeds),
        )


@dataclass(slots=True)
class Step:
    """What one step did: the new states and the log entries, in order."""

    state: te.MatchState
    life: Life
    entries: list[LogEntry]
    clock_ms: int = 0
    """Milliseconds the acting seat's clock ran for this decision (0 without a clock)."""
    at: int | None = None
    """When it was decided (ms since the match's creation): the time its record step and
    events must carry, since the states after it were computed with it (a decision's deadline
    starts there); a replay at any later time would time the next decision from later.
    ``None``: the step does not depend on the time (it is stamped when committed)."""


def seats_of(
    rules: te.RuleSet,
    names: Sequence[tuple[str, SeatKind]] = (),
    player_ids: Sequence[str] = (),
    levels: Sequence[int] = (),
) -> tuple[SeatInfo, ...]:
    """The public seats of a new match: display names (default ``seat N``), kinds, the
    operator's player ids (default none) and the levels of the seats the server's bot plays
    (such a seat is a ``BOT``)."""
    teams = te.seat_teams(te.new_match(rules))
    out = []
    for i in range(rules.players):
        level = levels[i] if i < len(levels) else 0
        kind = names[i][1] if i < len(names) else SeatKind.HUMAN
        name = (names[i][0] if i < len(names) else "") or f"seat {i}"
        out.append(
            SeatInfo(
                seat=i,
                team=teams[i],
                display_name=name,
                kind=SeatKind.BOT if level else kind,
                player_id=player_ids[i] if i < len(player_ids) else "",
                bot_level=level,
            )
        )
    return tuple(out)


def bots_of(seats: Sequence[SeatInfo]) -> tuple[int, ...]:
    """:attr:`Setup.bots` of a match with these seats."""
    levels = tuple(s.bot_level for s in seats)
    return levels if any(levels) else ()


# ------------------------------------------------------------------------- steps
def start(setup: Setup, seats: Sequence[SeatInfo], creator_seed: bytes = b"", now: int = 0) -> Step:
    """A new match: ``match_created`` and, unless the seats must join first, the first deal."""
    rules = setup.rules
    lc = setup.lifecycle
    bots = setup.bots or (0,) * rules.players
    life = Life(joined=[not lc.join_window or bool(b) for b in bots], last_activity=now)
    if creator_seed:
        life.client_seeds.append((None, creator_seed.hex()))
    tc = lc.time_control
    if tc is not None:
        life.expiries = [0] * rules.players
        if tc.bank:
            life.bank = [tc.bank] * rules.players
    state = te.new_match(rules, setup.first_dealer)
    entries: list[LogEntry] = [
        MatchCreated(
            preset=rules.name, players=rules.players, seats=tuple(seats), fairness=setup.fairness(life)
        )
    ]
    if all(life.joined):  # no join window, or only the server's bots to join
        state = _begin(setup, state, life, entries, now)
    return Step(state, life, entries, at=now)


def join(setup: Setup, state: te.MatchState, life: Life, seat: int, client_seed: bytes, now: int) -> Step:
    """``seat`` joins (with its client seed, possibly empty); the first hand is dealt once
    every seat has. Joining again takes the seat back from a bot that took it over
    (``seat_reclaimed``), and otherwise changes nothing (an empty step)."""
    life = life.copy()
    if life.joined[seat]:
        entries: list[LogEntry] = []
        if life.taken_over(seat):
            life.takeovers[seat] = 0
            entries.append(SeatReclaimed(seat=seat))
        return Step(state, life, entries, at=now)
    life.joined[seat] = True
    life.last_activity = now
    if client_seed:
        life.client_seeds.append((seat, client_seed.hex()))
    entries = [SeatJoined(seat=seat, client_seed=client_seed)]
    if all(life.joined):
        state = _begin(setup, state, life, entries, now)
    return Step(state, life, entries, at=now)


def act(
    setup: Setup,
    state: te.MatchState,
    life: Life,
    seat: int,
    action: te.Action,
    now: int,
    *,
    by_server: bool = False,
) -> Step:
    """``seat``'s action (a resignation included), the deals it makes due, and the reveal
    when it ends the match. ``by_server``: the server made it (its bot playing the seat, or
    the seat's default move); otherwise the seat's credential did, which takes the seat back
    from a bot that took it over (``seat_reclaimed`` first) and is refused for a bot seat
    (:class:`ServerSeatError`).
    Raises the engine's errors (:class:`truco_engine.TrucoError`) without a change."""
    life = life.copy()
    lead: list[LogEntry] = []
    if not by_server:
        if setup.bots and setup.bots[seat]:
            raise ServerSeatError(seat, setup.bots[seat])
        if life.taken_over(seat):
            life.takeovers[seat] = 0
            lead.append(SeatReclaimed(seat=seat))
    if action.kind == RESIGN:
        if te.is_over(state):
            raise te.MatchOverError()
        team = te.seat_teams(state)[seat]
        return _conclude(
            setup, state, life, [*lead, MatchResigned(seat=seat, team=team)], _rival(state, team), now
        )
    new_state, events = te.apply(state, seat, action)
    life.last_activity = now
    ran = life.stop(setup.lifecycle.time_control, now, by=seat)
    entries: list[LogEntry] = [*lead, *events]
    new_state = _after(setup, new_state, life, entries, now)
    return Step(new_state, life, entries, ran, at=now)


def take_over(setup: Setup, state: te.MatchState, life: Life, seat: int) -> Step:
    """The server's bot takes ``seat`` over (its player was away for the disconnect grace and
    the match lets a bot take an away seat over): it plays the seat from now on."""
    level = setup.lifecycle.takeover_level
    life = life.copy()
    if not life.takeovers:
        life.takeovers = [0] * setup.rules.players
    life.takeovers[seat] = level
    return Step(state, life, [SeatTakenOver(seat=seat, bot_level=level)])


def think_time(setup: Setup, state: te.MatchState, life: Life) -> int:
    """How long the server's bot thinks over the awaited decision (ms): between 0.6 and 1.4
    times the match's ``bot_think`` (the same for the same decision: derived from the
    decision's counter and seat), half that for a forced move."""
    seat = life.awaited
    base = setup.lifecycle.bot_think
    digest = hashlib.sha256(b"%d:%d" % (life.decision, -1 if seat is None else seat)).digest()
    think = base * (0.6 + 0.8 * int.from_bytes(digest[:4], "big") / 2**32)
    if seat is not None and len(te.legal_actions(state, seat)) == 1:
        think /= 2
    return max(1, round(think))


def expire(setup: Setup, state: te.MatchState, life: Life, cause: TimeoutCause, now: int) -> Step | None:
    """The awaited seat's time is up (``CLOCK``: its deadline has passed) or it is away
    (``DISCONNECTED``: the caller checked that it has been for the grace): its default move
    (:func:`truco_match.timeout.default_move`), or the forfeit after too many expiries.
    ``None`` when nothing is due (the decision was already made, or the deadline is not
    reached): a late or repeated call is harmless."""
    awaited = te.to_act(state)
    if te.is_over(state) or not awaited or not life.started:
        return None
    seat = awaited[0]
    tc = setup.lifecycle.time_control
    if cause is TimeoutCause.CLOCK:
        end = life.deadline()
        if tc is None or end is None or life.decision != state.actions or life.awaited != seat or now < end:
            return None
    life = life.copy()
    if life.expiries:
        life.expiries[seat] += 1
    count = life.expiries[seat] if life.expiries else 1
    if tc is not None and tc.forfeit_after and count >= tc.forfeit_after:
        team = te.seat_teams(state)[seat]
        timed: list[LogEntry] = [
            TurnTimedOut(seat=seat, cause=cause, action=None, expiries=count),
            MatchForfeited(seat=seat, team=team, expiries=count),
        ]
        return _conclude(setup, state, life, timed, _rival(state, team), now)
    move = default_move(state, seat)
    if move.action is None:  # its flor lost, the decision went to another seat
        life.last_activity = now
        life.stop(tc, now)
        step = Step(_after(setup, move.state, life, [], now), life, [], at=now)
    else:
        step = act(setup, move.state, life, seat, move.action, now, by_server=True)
    step.entries.insert(0, TurnTimedOut(seat=seat, cause=cause, action=move.action, expiries=count))
    return step


def remind(setup: Setup, state: te.MatchState, life: Life, now: int) -> Step | None:
    """The reminder of the awaited seat that its time runs out soon, once per decision
    (``TimeControl.remind_before``); ``None`` when none is due at ``now`` (not yet, already
    sent, the time is already up, or the server's bot plays the seat)."""
    at = life.reminder_due(setup.lifecycle.time_control)
    end = life.deadline()
    seat = life.awaited
    if at is None or end is None or seat is None or not at <= now < end or te.is_over(state):
        return None
    if setup.bot_level(life, seat):
        return None
    life = life.copy()
    life.reminded = life.decision
    return Step(state, life, [TurnReminder(seat=seat, remaining=end - now)], at=now)


def add_time(setup: Setup, state: te.MatchState, life: Life, seat: int | None, ms: int) -> Step:
    """The creator gives ``seat`` (``None``: every seat) ``ms`` more: on the decision being
    timed and in the bank."""
    life = life.copy()
    seats = range(setup.rules.players) if seat is None else (seat,)
    for x in seats:
        if life.bank:
            life.bank[x] += ms
        elif life.awaited == x and life.timed:
            life.allowance += ms
    return Step(state, life, [TimeAdded(seat=seat, added=ms)])


def reissue(setup: Setup, state: te.MatchState, life: Life, seat: int | None, now: int) -> Step:
    """The creator re-issues the credential of ``seat`` (``None``: the spectators'): its
    generation goes up by one, issued ``now``; the previous credential is refused from here on."""
    if seat is not None and not 0 <= seat < setup.rules.players:
        raise te.TrucoError(f"seat {seat} is not a seat; seats are 0..{setup.rules.players - 1}")
    life = life.copy()
    if not life.credentials:
        life.credentials = [[0, 0] for _ in range(setup.rules.players + 1)]
    slot = life.credentials[setup.rules.players if seat is None else seat]
    slot[0], slot[1] = slot[0] + 1, now
    return Step(state, life, [CredentialReissued(seat=seat)], at=now)


def adjudicate(
    setup: Setup, state: te.MatchState, life: Life, winner_team: int, reason: str, now: int
) -> Step:
    """The creator awards the match to ``winner_team``."""
    if not 0 <= winner_team < setup.rules.sides:
        raise te.TrucoError(f"winner_team {winner_team} is not a team; teams are 0..{setup.rules.sides - 1}")
    awarded: list[LogEntry] = [MatchAdjudicated(winner_team=winner_team, reason=reason)]
    return _conclude(setup, state, life.copy(), awarded, winner_team, now)


def abort(setup: Setup, state: te.MatchState, life: Life, reason: str) -> Step:
    """The server ends the match without a result (``not_joined`` or ``idle``)."""
    missing = tuple(i for i, j in enumerate(life.joined) if not j) if reason == "not_joined" else ()
    life = life.copy()
    life.stop(None, 0)
    return Step(state, life, [MatchAborted(reason=reason, seats=missing), reveal(setup, state, life)])


def cancel(setup: Setup, state: te.MatchState, life: Life, reason: str) -> Step:
    """The creator's cancellation and the reveal."""
    life = life.copy()
    life.stop(None, 0)
    return Step(state, life, [MatchCancelled(reason=reason), reveal(setup, state, life)])


def reveal(setup: Setup, state: te.MatchState, life: Life) -> MatchRevealed:
    """The seed and every deal so far, so anyone can check the commitments published when
    each hand started."""
    dealing = setup.dealing(life)
    deals = []
    for k in range(1, state.hands + 1):
        deck = dealing.deck(k, state.rules)
        salt = dealing.salt(k)
        deals.append(
            RevealedDeal(
                cards=tuple(deck),
                salt=salt,
                commitment=te.deck_commitment(deck, salt),
                operator_deck=k <= len(setup.deck_orders),
            )
        )
    return MatchRevealed(seed=setup.seed, deals=tuple(deals), mixed_seed=dealing.seed)


def due(setup: Setup, state: te.MatchState, life: Life) -> int | None:
    """When the match next needs the server (ms since creation), or ``None``: the end of the
    join window, the deadline of the timed decision, the idle timeout, the decision of the
    server's bot when it plays the awaited seat (:func:`think_time`), else the disconnect
    check of the awaited seat (the caller checks its presence then)."""
    if te.is_over(state):
        return None
    lc = setup.lifecycle
    times: list[int] = []
    if not life.started:
        if lc.join_window:
            times.append(lc.join_window)
    else:
        end = life.deadline()
        if end is not None:
            times.append(end)
        bot_seat = life.awaited is not None and setup.bot_level(life, life.awaited)
        reminder = life.reminder_due(lc.time_control)
        if reminder is not None and not bot_seat:
            times.append(reminder)
        if bot_seat:
            times.append(life.since + think_time(setup, state, life))
        elif lc.disconnect_grace and life.awaited is not None:
            times.append(life.since + lc.disconnect_grace)
    if lc.idle_timeout and lc.time_control is None:
        times.append(life.last_activity + lc.idle_timeout)
    return min(times) if times else None


# ----------------------------------------------------------------------- helpers
def _begin(
    setup: Setup, state: te.MatchState, life: Life, entries: list[LogEntry], now: int
) -> te.MatchState:
    life.started = True
    return _after(setup, state, life, entries, now)


def _after(
    setup: Setup, state: te.MatchState, life: Life, entries: list[LogEntry], now: int
) -> te.MatchState:
    """Deal what is due, show the finished hands to spectators, reveal at the end, and time
    the next decision."""
    show = setup.lifecycle.show_hands
    dealt = False
    while te.needs_deal(state):  # the mixed seed only when a hand is dealt: most steps deal none
        if show and state.hand is not None:
            entries.append(_shown(state))
        dealing = setup.dealing(life)
        k = state.hands + 1
        state, events = te.deal(state, dealing.deck(k, state.rules), dealing.salt(k))
        entries.extend(events)
        dealt = True
    if te.is_over(state):
        if show and state.hand is not None:
            entries.append(_shown(state))
        life.stop(None, now)
        entries.append(reveal(setup, state, life))
        return state
    awaited = te.to_act(state)
    if awaited and (life.decision != state.actions or life.awaited != awaited[0]):
        life.wait_for(setup.lifecycle.time_control, awaited[0], state.actions, now, first_of_hand=dealt)
    return state


def _shown(state: te.MatchState) -> HandCardsShown:
    h = state.hand
    assert h is not None
    return HandCardsShown(hand_number=h.number, hands=tuple(CardList(cards=tuple(c)) for c in h.dealt))


def _rival(state: te.MatchState, team: int) -> int:
    """Who wins when ``team`` gives the match up: the other team, or (each for himself) the
    best score among the others, the lowest seat on a tie."""
    others = [t for t in range(state.rules.sides) if t != team]
    return max(others, key=lambda t: (state.scores[t], state.games[t], -t))


def _conclude(
    setup: Setup, state: te.MatchState, life: Life, lead: list[LogEntry], winner: int, now: int
) -> Step:
    new_state, events = te.conclude(state, winner)
    life.stop(None, now)
    life.last_activity = now
    entries = [*lead, *events]
    if setup.lifecycle.show_hands and new_state.hand is not None:
        entries.append(_shown(new_state))
    entries.append(reveal(setup, new_state, life))
    return Step(new_state, life, entries, at=now)
