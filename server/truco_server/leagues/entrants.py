"""Entrants: who plays in an event, and the checks made when they register.

An entrant is one side of a match: a single player (one-a-side rule sets) or a team of 2
or 3 players (team rule sets; the engine's largest tables allow up to 6 a side). Its ``id``
is stable and chosen by the operator (its own player id, or a bot account id); ``seed`` is
the initial rank (1 is the strongest) that seeds brackets, Berger numbers and the first
Swiss round, and breaks every tie that nothing else breaks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from truco_server.leagues.errors import (
    DuplicateEntrantError,
    EntrantShapeError,
    InvalidEntrantError,
    InvalidOptionError,
    TooFewEntrantsError,
)

#: Longest entrant or member id accepted (ids are stored and logged by the service).
MAX_ID_LENGTH = 128
#: Most entrants one event accepts.
MAX_ENTRANTS = 10_000
#: Players a side that a rule set may have (the engine seats up to 12, six a side).
PLAYERS_PER_SIDE = (1, 2, 3, 4, 5, 6)


@dataclass(frozen=True)
class Entrant:
    """One registered side of the event."""

    id: str
    """Stable id: the operator's player (or team) id, or a bot account id."""
    seed: int
    """Initial rank, 1 = strongest; unique within the event."""
    members: tuple[str, ...] = ()
    """Player ids of the side; empty means the single player ``(id,)``."""
    rating: float | None = None
    """Optional rating at registration (informational; seeding uses ``seed``)."""
    joined_round: int = 1
    """First round this entrant can be paired in (greater than 1 for a late Swiss entry)."""

    @property
    def players(self) -> tuple[str, ...]:
        """The player ids that sit at the table for this entrant."""
        return self.members or (self.id,)


def _check_id(value: object, field: str) -> None:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LENGTH or value != value.strip():
        raise InvalidEntrantError(
            field, f"must be a non-empty string of at most {MAX_ID_LENGTH} characters without edge spaces"
        )


def check_entrant(entrant: Entrant, players_per_side: int, index: int) -> None:
    """Check one entrant's own fields against the rule set's players a side."""
    where = f"entrants[{index}]"
    _check_id(entrant.id, f"{where}.id")
    if isinstance(entrant.seed, bool) or not isinstance(entrant.seed, int) or entrant.seed < 1:
        raise InvalidEntrantError(f"{where}.seed", f"must be an integer >= 1, got {entrant.seed!r}")
    if entrant.rating is not None and (
        isinstance(entrant.rating, bool) or not isinstance(entrant.rating, int | float)
    ):
        raise InvalidEntrantError(f"{where}.rating", "must be a number or null")
    if entrant.joined_round < 1:
        raise InvalidEntrantError(f"{where}.joined_round", "must be >= 1")
    players = entrant.players
    for k, member in enumerate(players):
        _check_id(member, f"{where}.members[{k}]")
    if len(set(players)) != len(players):
        raise DuplicateEntrantError(f"{where}.members", "a player appears twice in the same team")
    if len(players) != players_per_side:
        if players_per_side == 1:
            raise EntrantShapeError(
                f"{where}.members",
                f"this rule set is one a side: an entrant is a single player, got a team of {len(players)}",
            )
        kind = "a single player" if len(players) == 1 else f"a team of {len(players)}"
        raise EntrantShapeError(
            f"{where}.members",
            f"this rule set is {players_per_side} a side: an entrant is a team of exactly "
            f"{players_per_side} players, got {kind}",
        )


def validate_entrants(
    entrants: Iterable[Entrant], players_per_side: int, min_entrants: int = 2
) -> tuple[Entrant, ...]:
    """Validate a whole field and return it ordered by seed.

    Raises :class:`EntrantShapeError` for team entries in a one-a-side rule set (and the
    reverse), :class:`DuplicateEntrantError` for a repeated id, seed or player, and
    :class:`TooFewEntrantsError` below ``min_entrants`` or above :data:`MAX_ENTRANTS`.
    """
    if players_per_side not in PLAYERS_PER_SIDE:
        raise InvalidOptionError(
            "players_per_side", f"allowed: {', '.join(map(str, PLAYERS_PER_SIDE))}; got {players_per_side!r}"
        )
    field = tuple(entrants)
    if len(field) > MAX_ENTRANTS:
        raise TooFewEntrantsError("entrants", f"at most {MAX_ENTRANTS} entrants; got {len(field)}")
    ids: dict[str, int] = {}
    seeds: dict[int, int] = {}
    players: dict[str, int] = {}
    for i, entrant in enumerate(field):
        check_entrant(entrant, players_per_side, i)
        if entrant.id in ids:
            raise DuplicateEntrantError(
                f"entrants[{i}].id", f"{entrant.id!r} is already entrants[{ids[entrant.id]}]"
            )
        if entrant.seed in seeds:
            raise DuplicateEntrantError(
                f"entrants[{i}].seed", f"seed {entrant.seed} is already entrants[{seeds[entrant.seed]}]'s"
            )
        for player in entrant.players:
            if player in players and players[player] != i:
                raise DuplicateEntrantError(
                    f"entrants[{i}].members",
                    f"player {player!r} already plays for entrants[{players[player]}]",
                )
            players[player] = i
        ids[entrant.id] = i
        seeds[entrant.seed] = i
    if len(field) < min_entrants:
        raise TooFewEntrantsError(
            "entrants", f"this format needs at least {min_entrants} entrants; got {len(field)}"
        )
    return tuple(sorted(field, key=lambda e: e.seed))


def by_id(entrants: Sequence[Entrant]) -> dict[str, Entrant]:
    """The entrants keyed by id."""
    return {e.id: e for e in entrants}
