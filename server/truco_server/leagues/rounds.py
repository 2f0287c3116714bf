"""What every format shares: the format protocol and the round-order checks."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from truco_server.leagues.entrants import Entrant
from truco_server.leagues.errors import RoundOrderError, UnknownEntrantError
from truco_server.leagues.results import Pairing, Result


class Format(Protocol):
    """What the league service asks of every format.

    All answers are functions of the entrants, the options and the results passed in:
    asking twice with the same arguments gives the same pairings, so a worker that dies
    while pairing can be replaced by another that asks again.
    """

    @property
    def entrants(self) -> tuple[Entrant, ...]: ...

    def total_rounds(self) -> int:
        """How many rounds the event has at most (a double elimination may end one early)."""
        ...

    def pairings(
        self, round_no: int, results: Sequence[Result], withdrawn: Collection[str] = ()
    ) -> tuple[Pairing, ...]:
        """The tables of round ``round_no`` given every result of the earlier rounds.

        Results of round ``round_no`` and later are ignored, so the same round can be asked
        for again. ``withdrawn`` entrants are not paired from this round on.
        """
        ...

    def is_finished(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> bool:
        """True when no further round will be paired."""
        ...


def check_round_number(round_no: int, total: int) -> None:
    """Raise :class:`RoundOrderError` unless 1 <= ``round_no`` <= ``total``."""
    if isinstance(round_no, bool) or not isinstance(round_no, int) or round_no < 1:
        raise RoundOrderError("round", f"rounds are numbered from 1; got {round_no!r}")
    if round_no > total:
        raise RoundOrderError("round", f"this event has {total} rounds; round {round_no} does not exist")


def check_withdrawn(withdrawn: Collection[str], entrants: Sequence[Entrant]) -> frozenset[str]:
    """The withdrawn ids as a set; every one must be a registered entrant."""
    ids = {e.id for e in entrants}
    for entrant_id in withdrawn:
        if entrant_id not in ids:
            raise UnknownEntrantError("withdrawn", f"{entrant_id!r} is not a registered entrant")
    return frozenset(withdrawn)


def earlier(results: Sequence[Result], round_no: int) -> list[Result]:
    """The results of the rounds before ``round_no``."""
    return [r for r in results if r.round < round_no]


def number_tables(
    round_no: int, pairs: Sequence[tuple[str, str | None]], labels: Sequence[str] = ()
) -> tuple[Pairing, ...]:
    """Number played tables from 1 in the given order, then the byes after them."""
    played = [(i, p) for i, p in enumerate(pairs) if p[1] is not None]
    byes = [(i, p) for i, p in enumerate(pairs) if p[1] is None]
    out: list[Pairing] = []
    for table, (i, (first, second)) in enumerate(played + byes, start=1):
        out.append(Pairing(round_no, table, first, second, labels[i] if labels else ""))
    return tuple(out)


def tables_done(fmt: Format, round_no: int, results: Sequence[Result], withdrawn: Collection[str]) -> bool:
    """True when every table of ``round_no`` (byes included) has a result."""
    try:
        tables = fmt.pairings(round_no, results, withdrawn)
    except RoundOrderError:
        return False
    done = {(r.table, r.first, r.second) for r in results if r.round == round_no}
    return all((p.table, p.first, p.second) in done for p in tables)
