"""Play bots against each other in-process with the local rules engine (no server).

The bots get the same :class:`~truco_kit.observation.Observation` type they get over the
network, so a bot runs unchanged here and against a server::

    from truco_client.local import run_local   # or truco_kit.local
    result = run_local([MyBot, RandomBot], "argentine", n_matches=1000)
    print(result.summary())

Matches are played in pairs over the same deals with the bots' seats swapped (duplicate
deals), which removes most of the luck of the cards from a comparison.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import truco_engine as te
from truco_kit.bot import Bot
from truco_kit.observation import Event, HandTracker, Observation
from truco_match import table
from truco_match.events import DealSource, EventView, LogEntry, MatchStatus, SeatKind, redact
from truco_match.views import view

BotFactory = Callable[[], Bot] | type[Bot]


class IllegalBotAction(RuntimeError):
    """A bot returned an action that is not among its legal actions."""


@dataclass
class MatchOutcome:
    """Result of one local match."""

    winner_bot: int | None
    """Index (into the bot list) of the winning bot; ``None`` when nobody won."""
    winner_team: int | None
    scores: tuple[int, ...]
    actions: int
    hands: int
    team_bot: tuple[int, ...]
    """Which bot index played each team."""


@dataclass
class LocalResults:
    """Aggregate of :func:`run_local`."""

    bot_names: list[str]
    matches: int = 0
    wins: list[int] = field(default_factory=list)
    hands: int = 0
    actions: int = 0
    illegal: int = 0
    seconds: float = 0.0
    outcomes: list[MatchOutcome] = field(default_factory=list)

    def win_rate(self, bot: int = 0) -> float:
        return self.wins[bot] / self.matches if self.matches else 0.0

    def summary(self) -> str:
        parts = [
            f"{n}: {w} wins ({w / max(1, self.matches):.1%})"
            for n, w in zip(self.bot_names, self.wins, strict=True)
        ]
        return f"{self.matches} matches, {self.hands} hands, {self.seconds:.1f}s; " + ", ".join(parts)


def _make(factory: BotFactory, seed: int) -> Bot:
    if isinstance(factory, type):
        try:
            bot: Bot = factory(seed=seed)
        except TypeError:
            bot = factory()
        return bot
    made: Bot = factory()
    return made


def play_local_match(
    bots: Sequence[Bot],
    rules: te.RuleSet,
    deck_rng: random.Random,
    *,
    seats: Sequence[tuple[str, SeatKind]] = (),
    seed: bytes | None = None,
    on_update: Callable[[int, Observation, tuple[Event, ...]], None] | None = None,
    max_actions: int = 20_000,
    strict: bool = True,
) -> tuple[te.MatchState, int]:
    """Play one match between ``bots`` (one per seat), exactly as a server would run it: the
    same log (``match_created``, every event, the deals from ``seed`` or from a seed drawn
    from ``deck_rng``, ``match_revealed``), the same versions, and the same observations and
    events for every seat (:mod:`truco_match.table`). The bot of the seat whose decision
    is awaited acts, unless another seat's bot acts out of turn first (:meth:`Bot.out_of_turn`).
    Returns the final state and the number of illegal actions (with ``strict`` the first
    illegal action raises :class:`IllegalBotAction`; otherwise the first legal action is
    played instead).

    ``on_update(seat, observation, events)`` is called for every seat after every commit with
    what that seat's stream would carry. Play stops after ``max_actions`` actions (the match
    is then still active)."""
    n = rules.players
    if len(bots) != n:
        raise ValueError(f"{n} seats need {n} bots, got {len(bots)}")
    # The runner chooses the seed, as a creator passing CreateMatchRequest.seed does.
    setup = table.Setup(
        rules=rules, seed=deck_rng.randbytes(32) if seed is None else seed, source=DealSource.OPERATOR_SEED
    )
    step = table.start(setup, table.seats_of(rules, seats))
    state, life, entries = step.state, step.life, step.entries
    trackers = [HandTracker() for _ in range(n)]
    for seat, bot in enumerate(bots):
        bot.on_match_start(seat)
    illegal = 0
    version = 0
    observations: list[Observation] = []

    def commit(entries: Sequence[LogEntry]) -> None:
        nonlocal version
        first = version + 1
        version += len(entries)
        status = MatchStatus.FINISHED if te.is_over(state) else MatchStatus.ACTIVE
        observations.clear()
        for seat in range(n):
            events = tuple(EventView(v, redact(e, seat)) for v, e in enumerate(entries, first))
            trackers[seat].add(events)
            obs = Observation.from_view(
                view(state, seat, version, status, life), rules, trackers[seat].events
            )
            observations.append(obs)
            if on_update is not None:
                on_update(seat, obs, events)

    commit(entries)
    steps = 0
    while not te.is_over(state):
        steps += 1
        if steps > max_actions:
            break
        seat, action = _next_move(bots, observations)
        obs = observations[seat]
        if action not in obs.legal_actions:
            illegal += 1
            if strict:
                raise IllegalBotAction(
                    f"{bots[seat]!r} at seat {seat} chose {action}; legal: "
                    + ", ".join(a.text() for a in obs.legal_actions)
                )
            action = obs.legal_actions[0]
        step = table.act(setup, state, life, seat, action, 0)
        state, life, entries = step.state, step.life, step.entries
        commit(entries)
    if te.is_over(state):
        for seat, bot in enumerate(bots):
            bot.on_match_end(observations[seat])
    return state, illegal


def _next_move(bots: Sequence[Bot], observations: Sequence[Observation]) -> tuple[int, te.Action]:
    """Who acts next and how: a seat that wants to act out of turn (:meth:`Bot.out_of_turn`,
    asked in seat order, as a runner over the network asks it at every version), else the
    seat whose decision the game waits for (:meth:`Bot.choose`)."""
    awaited = observations[0].whose_turn
    assert awaited is not None, "an active match awaits a seat"
    for seat, obs in enumerate(observations):
        if seat != awaited and obs.can_act:
            extra = bots[seat].out_of_turn(obs)
            if extra is not None:
                return seat, extra
    return awaited, bots[awaited].choose(observations[awaited])


def run_local(
    bot_classes: Sequence[BotFactory],
    preset: str | te.RuleSet = "paulista",
    n_matches: int = 100,
    *,
    seed: int = 0,
    players: int | None = None,
    overrides: dict[str, Any] | None = None,
    progress: Callable[[LocalResults], None] | None = None,
    strict: bool = True,
    keep_outcomes: bool = False,
    first_match: int = 0,
) -> LocalResults:
    """Play ``n_matches`` in-process. Bot ``i`` plays team ``i`` (every seat of it) in even
    matches; teams rotate from one match to the next over the same deals, so each pair of
    matches is a duplicate (mirrored) pair. ``bot_classes`` holds one class (or factory) per
    team; a single class plays every seat. ``first_match`` offsets the match numbering (deals
    and seats), so several calls can split one long run."""
    if isinstance(preset, te.RuleSet):
        rules = preset
    else:
        extra = dict(overrides or {})
        if players is not None:
            extra["players"] = players
        rules = te.get_rules(preset, **extra)
    sides = rules.sides
    classes = list(bot_classes)
    if not classes:
        raise ValueError("give at least one bot class")
    names = [_bot_name(c) for c in classes]
    result = LocalResults(bot_names=[str(n) for n in names], wins=[0] * len(classes))
    start = time.perf_counter()
    for k in range(first_match, first_match + n_matches):
        pair, turn = divmod(k, len(classes))
        deck_rng = random.Random(seed * 1_000_003 + pair)
        team_bot = tuple((t + turn) % len(classes) for t in range(sides))
        # A bot per score holder: a team, or each seat where each plays for himself (the
        # carancho's pairs change every hand, so each seat keeps its own bot there too).
        side_of = te.seat_teams(te.new_match(rules)) if rules.play_mode == "teams" else range(rules.players)
        bots = [
            _make(classes[team_bot[side_of[seat]]], seed * 7919 + k * 31 + seat)
            for seat in range(rules.players)
        ]
        state, illegal = play_local_match(bots, rules, deck_rng, strict=strict)
        result.matches += 1
        result.illegal += illegal
        result.hands += state.hands
        result.actions += state.actions
        winner_bot = team_bot[state.winner] if state.winner is not None else None
        if winner_bot is not None:
            result.wins[winner_bot] += 1
        if keep_outcomes:
            result.outcomes.append(
                MatchOutcome(
                    winner_bot, state.winner, tuple(state.scores), state.actions, state.hands, team_bot
                )
            )
        result.seconds = time.perf_counter() - start
        if progress is not None:
            progress(result)
    return result


def _bot_name(factory: BotFactory) -> str:
    name = getattr(factory, "name", None)
    if isinstance(name, str) and name != Bot.name:
        return name
    return str(getattr(factory, "__name__", "bot"))
