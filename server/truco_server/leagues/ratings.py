"""Ratings per rule-set family with OpenSkill's Plackett-Luce model.

Plackett-Luce rates any number of sides of any size (1 v 1, 2 v 2, 3 v 3, three players
each for themselves), each player separately, so one player's rating follows him across
teams. A rule-set family (the service's key, e.g. ``argentine-2p``) has its own ratings:
a player's 1 v 1 rating says nothing about his team play.

Exactly once: :class:`RatingBook` keeps every match it applied (its id, sides and places)
and ignores a second application of the same match. A result corrected after the fact is
applied again with its new places (or removed): the family is then rated again from its
first match, in the order the matches were applied, as if the result had always been the
corrected one. :func:`rate` is the pure update the book uses, for a service that keeps
ratings and applied matches in its own store.

A player is shown by his **ordinal** ``mu - 3 * sigma``, a conservative skill estimate that
starts at 0 and rises as the uncertainty ``sigma`` falls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openskill.models import PlackettLuce

from truco_server.leagues.errors import InvalidOptionError, InvalidResultError

#: Layout version of :meth:`RatingBook.to_dict`.
STATE_VERSION = 2


@dataclass(frozen=True)
class RatingModel:
    """OpenSkill's parameters (its defaults)."""

    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    beta: float = 25.0 / 6.0
    tau: float = 25.0 / 300.0
    """Added uncertainty per match, so ratings keep moving."""

    def __post_init__(self) -> None:
        for name in ("sigma", "beta"):
            if getattr(self, name) <= 0:
                raise InvalidOptionError(f"ratings.{name}", "must be > 0")
        if self.tau < 0:
            raise InvalidOptionError("ratings.tau", "must be >= 0")

    def openskill(self) -> PlackettLuce:
        return PlackettLuce(mu=self.mu, sigma=self.sigma, beta=self.beta, tau=self.tau)


@dataclass(frozen=True)
class PlayerRating:
    mu: float
    sigma: float
    games: int = 0

    @property
    def ordinal(self) -> float:
        return self.mu - 3.0 * self.sigma


@dataclass(frozen=True)
class RatedMatch:
    """One finished match to rate."""

    match_id: str
    family: str
    sides: tuple[tuple[str, ...], ...]
    """Player ids of each side (two or more sides, each of one or more players)."""
    ranks: tuple[int, ...]
    """Each side's place: 1 for the winner; equal places are a draw between those sides."""

    def check(self) -> None:
        if not self.match_id or not self.family:
            raise InvalidResultError("match", "match_id and family must be non-empty")
        if len(self.sides) < 2 or any(not side for side in self.sides):
            raise InvalidResultError("match.sides", "at least two sides, each with at least one player")
        players = [p for side in self.sides for p in side]
        if len(set(players)) != len(players):
            raise InvalidResultError("match.sides", "a player appears on two sides (or twice on one)")
        if len(self.ranks) != len(self.sides) or any(
            isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in self.ranks
        ):
            raise InvalidResultError("match.ranks", "one place (an integer >= 1) per side")


def rate(
    model: RatingModel, current: Mapping[str, PlayerRating], match: RatedMatch
) -> dict[str, PlayerRating]:
    """The new ratings of the match's players (players missing from ``current`` start at
    the model's prior). Pure: ``current`` is not changed."""
    match.check()
    os_model = model.openskill()
    teams = [
        [
            os_model.rating(mu=r.mu, sigma=r.sigma)
            for r in (current.get(p, PlayerRating(model.mu, model.sigma)) for p in side)
        ]
        for side in match.sides
    ]
    new = os_model.rate(teams, ranks=[float(r) for r in match.ranks])
    out: dict[str, PlayerRating] = {}
    for side, rated in zip(match.sides, new, strict=True):
        for player, r in zip(side, rated, strict=True):
            games = current[player].games if player in current else 0
            out[player] = PlayerRating(float(r.mu), float(r.sigma), games + 1)
    return out


@dataclass(frozen=True)
class LeaderboardEntry:
    rank: int
    player_id: str
    rating: PlayerRating


class RatingBook:
    """The ratings of every family and the ids of the matches already applied.

    The one mutable type of the package: it is the state the service loads, updates with
    :meth:`apply` and stores again (:meth:`to_dict` / :meth:`from_dict`).
    """

    def __init__(self, model: RatingModel = RatingModel()) -> None:
        self.model = model
        self._families: dict[str, dict[str, PlayerRating]] = {}
        self._matches: dict[str, RatedMatch] = {}
        """Every match applied, in the order applied (so the book can be replayed)."""
        self._base: dict[str, dict[str, PlayerRating]] = {}
        """Ratings a book of version 1 (ids only, no matches) held: a replay starts there."""
        self._legacy: set[str] = set()
        """Ids a book of version 1 applied: kept as applied, never rated again."""

    def apply(self, match: RatedMatch) -> bool:
        """Rate a finished match once: True if applied, False if this match id was already.

        A match id applied before with other ranks or sides (a result corrected) replaces
        that match: its family is rated again from the first match, in the same order."""
        match.check()
        before = self._matches.get(match.match_id)
        if before == match or match.match_id in self._legacy:
            return False
        self._matches[match.match_id] = match
        if before is None:
            family = self._families.setdefault(match.family, {})
            family.update(rate(self.model, family, match))
        else:
            self._replay({before.family, match.family})
        return True

    def remove(self, match_id: str) -> bool:
        """Un-rate a match (a result corrected to one that is not rated): its family is rated
        again without it; False when the match was not applied."""
        before = self._matches.pop(match_id, None)
        if before is None:
            return False
        self._replay({before.family})
        return True

    def _replay(self, families: set[str]) -> None:
        for name in families:
            family = dict(self._base.get(name, {}))
            for m in self._matches.values():
                if m.family == name:
                    family.update(rate(self.model, family, m))
            self._families[name] = family

    def applied(self, match_id: str) -> bool:
        return match_id in self._matches or match_id in self._legacy

    def families(self) -> tuple[str, ...]:
        return tuple(sorted(self._families))

    def rating(self, family: str, player_id: str) -> PlayerRating:
        """The player's rating (the prior if he has not played in this family)."""
        return self._families.get(family, {}).get(player_id, PlayerRating(self.model.mu, self.model.sigma))

    def leaderboard(self, family: str, limit: int | None = None) -> tuple[LeaderboardEntry, ...]:
        """Players of ``family`` by ordinal (highest first), then by id."""
        players = sorted(self._families.get(family, {}).items(), key=lambda kv: (-kv[1].ordinal, kv[0]))
        if limit is not None:
            players = players[:limit]
        return tuple(LeaderboardEntry(i, p, r) for i, (p, r) in enumerate(players, start=1))

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready) holding everything, the applied matches included."""
        m = self.model
        out = {
            "version": STATE_VERSION,
            "model": {"mu": m.mu, "sigma": m.sigma, "beta": m.beta, "tau": m.tau},
            "families": _families_dict(self._families),
            "matches": [
                [m.match_id, m.family, [list(side) for side in m.sides], list(m.ranks)]
                for m in self._matches.values()
            ],
        }
        if self._legacy:
            out["base"] = _families_dict(self._base)
            out["legacy"] = sorted(self._legacy)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RatingBook:
        """A book from :meth:`to_dict`; a version 1 book (the ids it applied, not the matches)
        keeps its ratings as the base a replay starts from, and its ids as applied for good."""
        version = data.get("version")
        if version not in (1, STATE_VERSION):
            raise InvalidOptionError("ratings.version", f"expected {STATE_VERSION}, got {version!r}")
        m = data["model"]
        book = cls(RatingModel(float(m["mu"]), float(m["sigma"]), float(m["beta"]), float(m["tau"])))
        book._families = _families_of(data["families"])
        if version == 1:
            book._base, book._legacy = _families_of(data["families"]), {str(x) for x in data["applied"]}
            return book
        book._base = _families_of(data.get("base", {}))
        book._legacy = {str(x) for x in data.get("legacy", [])}
        for match_id, family, sides, ranks in data["matches"]:
            book._matches[str(match_id)] = RatedMatch(
                str(match_id), str(family), tuple(tuple(str(p) for p in side) for side in sides), tuple(ranks)
            )
        return book


def _families_dict(families: Mapping[str, Mapping[str, PlayerRating]]) -> dict[str, Any]:
    return {
        fam: {p: {"mu": r.mu, "sigma": r.sigma, "games": r.games} for p, r in sorted(players.items())}
        for fam, players in sorted(families.items())
    }


def _families_of(data: Mapping[str, Any]) -> dict[str, dict[str, PlayerRating]]:
    return {str(fam): {str(p): _rating(r) for p, r in players.items()} for fam, players in data.items()}


def _rating(r: Mapping[str, Any]) -> PlayerRating:
    return PlayerRating(float(r["mu"]), float(r["sigma"]), int(r["games"]))


def ranks_from_winner(sides: Sequence[Sequence[str]], winner_side: int | None) -> tuple[int, ...]:
    """Places for a two-or-more-sided match with one winner (``None``: all drawn)."""
    if winner_side is None:
        return tuple(1 for _ in sides)
    return tuple(1 if i == winner_side else 2 for i in range(len(sides)))
