"""What a creator asks for when it creates a match (the rules: a preset and overrides; the
seats; where the deals come from; the labels and the lifecycle settings), and the checks it
must pass before anything is stored."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import truco_engine as te
from truco_match import table
from truco_match.events import DealSource, SeatInfo, SeatKind, seat_to_dict
from truco_match.fairness import MAX_CLIENT_SEED
from truco_match.lifecycle import MAX_DURATION_MS, Lifecycle

BOT_LEVELS = range(1, 7)
"""The levels of the server's built-in bots: 1 (a beginner) to 6 (the strongest)."""
DEFAULT_TAKEOVER_LEVEL = 3
"""The level of the bot that takes an away seat over when the creator names none."""
BOT_THINK_MS = (200, 60_000)
"""The shortest and longest average think time of the server's bots a match may set (ms)."""


@dataclass(frozen=True, slots=True)
class SeatSpec:
    """A seat as its creator describes it."""

    name: str = ""
    kind: SeatKind = SeatKind.HUMAN
    player_id: str = ""
    """The operator's id of the player (optional): what a rating follows across matches."""
    bot_level: int = 0
    """The server's bot plays the seat, at this level (:data:`BOT_LEVELS`); 0: a player."""


PLAYER_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,64}$")
"""What an operator's player id may be: 1 to 64 letters, digits and ``. _ : @ -``."""


def family_of(rules: te.RuleSet) -> str:
    """The rating family of a rule set (``<preset>-<players>p``, e.g. ``paulista-4p``): the
    ratings of one family say nothing about another's."""
    return f"{rules.name}-{rules.players}p"


@dataclass(frozen=True, slots=True)
class MatchSpec:
    """A match as its creator asks for it (checked when the match is created)."""

    preset: str = "paulista"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Rule set fields that differ from the preset's."""
    players: int | None = None
    seats: tuple[SeatSpec, ...] = ()
    seed: bytes | None = None
    """The creator's seed (16 to 64 bytes) instead of the server's: visible as such to every seat."""
    deck_orders: tuple[tuple[str, ...], ...] = ()
    """Explicit deck orders of the first hands (visible as such to every seat)."""
    first_dealer: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    """Free-form labels of the creator (a tournament or table id); returned, not interpreted."""
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    """Clock, join window, idle timeout, disconnect grace, spectator settings (an idle
    timeout of 0 takes the server's default)."""
    client_seed: bytes = b""
    """The creator's entropy, mixed into every deal."""
    rated: bool = False
    """The result updates the players' ratings in the match's rating family
    (:func:`family_of`); every seat needs a ``player_id``."""


class SpecError(ValueError):
    """What a creator asked for cannot be made: ``violations`` are ``(field, what is wrong)``
    (dotted request paths: ``settings.time_control.per_decision``); ``rules`` when the rule
    set is what is wrong."""

    def __init__(self, message: str, violations: Sequence[tuple[str, str]], *, rules: bool = False) -> None:
        super().__init__(message)
        self.violations = tuple(violations)
        self.rules = rules


def rules_of(preset: str, overrides: Mapping[str, Any]) -> te.RuleSet:
    """The rule set of a preset with overrides; a bad one is a :class:`SpecError` naming the
    offending field (the one check of matches and leagues alike)."""
    try:
        return te.get_rules(preset, **overrides)
    except te.TrucoError as exc:
        field_name = getattr(exc, "field", "rules")
        raise SpecError(str(exc), [(field_name, str(exc))], rules=True) from exc


def check_lifecycle(
    requested: Lifecycle, default_idle_timeout: int, default_bot_think: int = 1500
) -> Lifecycle:
    """The lifecycle settings, checked, with the server's default idle timeout (ms) when the
    match has neither its own nor a clock, its default think time of the bots (ms) when the
    match sets none, and the default takeover level."""
    problems = _lifecycle_problems(requested)
    if problems:
        field_name, description = problems[0]
        raise SpecError(f"invalid match settings: {field_name}: {description}", problems)
    done = requested
    if not done.idle_timeout and done.time_control is None:
        done = dataclasses.replace(done, idle_timeout=default_idle_timeout)
    if not done.bot_think:
        done = dataclasses.replace(done, bot_think=default_bot_think)
    if done.takeover and not done.takeover_level:
        done = dataclasses.replace(done, takeover_level=DEFAULT_TAKEOVER_LEVEL)
    if not done.takeover and done.takeover_level:
        done = dataclasses.replace(done, takeover_level=0)
    return done


def _lifecycle_problems(requested: Lifecycle) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    tc = requested.time_control
    if tc is not None:
        problems += [(f"settings.time_control.{f}", d) for f, d in tc.problems()]
    for name in ("join_window", "idle_timeout", "disconnect_grace", "credential_ttl"):
        value = getattr(requested, name)
        if not 0 <= value <= MAX_DURATION_MS or 0 < value < 1000:
            problems.append((f"settings.{name}", "between 1 second and 1 day, or unset"))
    if not 0 <= requested.spectator_delay <= 1000:
        problems.append(("settings.spectator_delay_actions", "between 0 and 1000"))
    if requested.bot_think and not BOT_THINK_MS[0] <= requested.bot_think <= BOT_THINK_MS[1]:
        problems.append(("settings.bot_think_time", "between 0.2 and 60 seconds, or unset"))
    if requested.takeover_level and requested.takeover_level not in BOT_LEVELS:
        problems.append(("settings.takeover_level", "a bot level, 1 to 6 (or unset: 3)"))
    if requested.takeover and not requested.disconnect_grace:
        problems.append(
            (
                "settings.abandonment",
                "a bot takes a seat over after the disconnect grace: set disconnect_grace",
            )
        )
    return problems


def check(
    spec: MatchSpec, default_idle_timeout: int, default_bot_think: int = 1500
) -> tuple[te.RuleSet, Lifecycle]:
    """The rule set and lifecycle of a match made to ``spec`` (``default_*``: the server's,
    in ms); :class:`SpecError` for the first thing that cannot be made (checked before
    anything is stored)."""
    overrides = dict(spec.overrides)
    if spec.players is not None:
        overrides["players"] = spec.players
    rules = rules_of(spec.preset, overrides)
    if spec.seats and len(spec.seats) != rules.players:
        raise SpecError(
            f"{len(spec.seats)} seats given for {rules.players} players",
            [("seats", f"give {rules.players} seats or none")],
        )
    _check_players(spec, rules)
    for i, seat in enumerate(spec.seats):
        if seat.bot_level and seat.bot_level not in BOT_LEVELS:
            raise SpecError(
                f"seats[{i}].bot_level must be a bot level, 1 to 6 (or 0: a player)",
                [(f"seats[{i}].bot_level", "1 to 6, or 0")],
            )
    if spec.first_dealer is not None and not 0 <= spec.first_dealer < rules.players:
        raise SpecError(
            f"first_dealer must be a seat 0..{rules.players - 1}", [("first_dealer", "out of range")]
        )
    if spec.deck_orders:
        probe = te.new_match(rules)
        for i, d in enumerate(spec.deck_orders):
            try:
                te.deal(probe, d)
            except te.TrucoError as exc:
                raise SpecError(f"deck_orders[{i}]: {exc}", [(f"deck_orders[{i}]", str(exc))]) from exc
    if spec.seed is not None and not 16 <= len(spec.seed) <= 64:
        raise SpecError("seed must be 16 to 64 bytes", [("seed", "16 to 64 bytes")])
    if len(spec.client_seed) > MAX_CLIENT_SEED:
        raise SpecError(
            f"client_seed is at most {MAX_CLIENT_SEED} bytes",
            [("client_seed", f"at most {MAX_CLIENT_SEED} bytes")],
        )
    if len(spec.labels) > 32 or any(len(k) > 64 or len(v) > 256 for k, v in spec.labels.items()):
        raise SpecError(
            "at most 32 labels, keys up to 64 and values up to 256 characters",
            [("settings.labels", "too many or too long")],
        )
    return rules, check_lifecycle(spec.lifecycle, default_idle_timeout, default_bot_think)


def seats_of(spec: MatchSpec, rules: te.RuleSet) -> tuple[SeatInfo, ...]:
    """The public seats of a match made to ``spec``."""
    return table.seats_of(
        rules,
        [(s.name, s.kind) for s in spec.seats],
        [s.player_id for s in spec.seats],
        [s.bot_level for s in spec.seats],
    )


def _check_players(spec: MatchSpec, rules: te.RuleSet) -> None:
    """Player ids are well formed and seat one player once; a rated match names every seat's
    player and keeps its teams from hand to hand."""
    ids = [s.player_id for s in spec.seats if s.player_id]
    for i, s in enumerate(spec.seats):
        if s.player_id and not PLAYER_ID.match(s.player_id):
            raise SpecError(
                f"seats[{i}].player_id: 1 to 64 letters, digits and . _ : @ -",
                [(f"seats[{i}].player_id", "1 to 64 letters, digits and . _ : @ -")],
            )
    if len(set(ids)) != len(ids):
        raise SpecError("a player_id appears on two seats", [("seats", "one seat per player_id")])
    if not spec.rated:
        return
    if len(ids) != rules.players:
        raise SpecError(
            "a rated match needs a player_id on every seat",
            [("seats", f"give {rules.players} seats, each with a player_id")],
        )
    if rules.play_mode is te.PlayMode.CARANCHO:
        raise SpecError(
            "carancho matches are not rated: the sides change every hand",
            [("settings.rated", "not for carancho")],
        )


def deal_source(spec: MatchSpec) -> DealSource:
    """Where the deals of a match made to ``spec`` come from (visible to every seat)."""
    if spec.deck_orders:
        return DealSource.OPERATOR_DECKS
    if spec.seed is not None:
        return DealSource.OPERATOR_SEED
    return DealSource.SERVER_SEED


def fingerprint_of(spec: MatchSpec, rules: te.RuleSet, lifecycle: Lifecycle) -> dict[str, Any]:
    """What a creation asked for, as the tree its fingerprint is taken of (a retry with the
    same ``request_id`` must ask for the same)."""
    seats = seats_of(spec, rules)
    return {
        "rules": rules.to_dict(),
        "seats": [seat_to_dict(s) for s in seats],
        "seed": spec.seed.hex() if spec.seed is not None else None,
        "decks": [list(d) for d in spec.deck_orders],
        "first_dealer": spec.first_dealer,
        "labels": dict(spec.labels),
        "lifecycle": lifecycle.to_dict(),
        "client_seed": spec.client_seed.hex(),
        **({"rated": True} if spec.rated else {}),
    }
