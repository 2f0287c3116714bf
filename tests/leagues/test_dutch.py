"""The Swiss's FIDE Dutch pairing option (truco_server.leagues.dutch): whole events played
with random results, their pairings exported as TRF and replayed round by round by the
pairing library's own Free Pairings Checker, which re-pairs each round from the results
before it and reports any difference."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest
from caissify_pairings.fpc import check_trf

from tests.leagues.helpers import field, play
from truco_contract.pb import league_service_pb2 as lpb
from truco_contract.trf import swiss_trf
from truco_server.leagues import (
    Entrant,
    Event,
    EventSpec,
    FormatKind,
    InvalidOptionError,
    Pairing,
    Result,
    create_event,
)
from truco_server.leagues.dutch import MAX_DUTCH_ENTRANTS
from truco_server.leagues.swiss import RoundOverrides


def dutch(n: int, rounds: int) -> Event:
    return create_event(EventSpec(FormatKind.SWISS, rounds=rounds, swiss_pairing="dutch"), field(n))


def run(event: Event, seed: int, forfeits: bool = False) -> tuple[list[Pairing], list[Result]]:
    rnd = random.Random(seed)
    pairings: list[Pairing] = []
    results: list[Result] = []
    for r in range(1, event.total_rounds() + 1):
        tables = event.pairings(r, results)
        pairings += tables
        played = play(tables, rnd, draws=True)
        if forfeits:  # one table a round is a no-show, won by its second
            i = next(i for i, x in enumerate(played) if x.second is not None)
            x = played[i]
            played[i] = Result(x.round, x.table, x.first, x.second, x.second, forfeit=True)
        results += played
    return pairings, results


def trf(event: Event, pairings: Sequence[Pairing], results: Sequence[Result]) -> str:
    league = lpb.League(
        name="dutch", format="swiss", rounds=event.total_rounds(), total_rounds=event.total_rounds(),
        current_round=max(p.round for p in pairings), swiss_pairing="dutch",
        entrants=[lpb.Entrant(entrant_id=e.id, seed=e.seed) for e in event.entrants],
    )  # fmt: skip
    by_table = {(r.round, r.table): r for r in results}
    rows = []
    for p in pairings:
        res = by_table[(p.round, p.table)]
        rows.append(
            lpb.LeaguePairing(
                round=p.round,
                table=p.table,
                first=p.first,
                second=p.second or "",
                result=lpb.PairingResult(winner=res.winner or "", forfeit=res.forfeit),
            )
        )
    return swiss_trf(league, lpb.GetStandingsResponse(), lpb.ListPairingsResponse(pairings=rows))


@pytest.mark.parametrize(
    ("n", "rounds", "seed", "forfeits"), [(8, 5, 1, False), (17, 6, 2, False), (24, 7, 3, True)]
)
def test_the_fide_checker_replays_every_round_to_the_same_pairings(
    n: int, rounds: int, seed: int, forfeits: bool
) -> None:
    event = dutch(n, rounds)
    pairings, results = run(event, seed, forfeits)
    report = check_trf(trf(event, pairings, results))
    assert report["summary"]["rounds_checked"] == rounds
    assert report["summary"]["total_discrepancies"] == 0, [r["discrepancies"] for r in report["rounds"]]


def test_the_checker_notices_a_round_the_system_did_not_pair() -> None:
    """The check above can fail: swapping two opponents of one round is reported."""
    event = dutch(8, 3)
    pairings, results = run(event, 4)
    r2 = [p for p in pairings if p.round == 2]
    a, b = r2[0], r2[1]
    swapped = [Pairing(2, a.table, a.first, b.second), Pairing(2, b.table, b.first, a.second)]
    fixed = {(2, a.table): swapped[0], (2, b.table): swapped[1]}
    edited = [fixed.get((p.round, p.table), p) for p in pairings]
    report = check_trf(trf(event, edited, results))
    assert report["summary"]["total_discrepancies"] > 0


def test_no_rematch_one_bye_each_and_everyone_seated() -> None:
    event = dutch(11, 7)
    pairings, _ = run(event, 5)
    met = Counter(frozenset((p.first, p.second)) for p in pairings if p.second)
    assert max(met.values()) == 1
    byes = Counter(p.first for p in pairings if p.second is None)
    assert max(byes.values()) == 1 and sum(byes.values()) == 7
    for r in range(1, 8):
        seated = [e for p in pairings if p.round == r for e in (p.first, p.second) if e]
        assert sorted(seated) == sorted(e.id for e in event.entrants)


def test_forbidden_pairs_and_the_operators_tables() -> None:
    event = dutch(8, 3)
    natural = event.pairings(1, [])
    assert (natural[0].first, natural[0].second) == ("e1", "e5")  # top half meets bottom half
    forbidden = [frozenset(("e1", "e5"))]
    tables = event.pairings(1, [], forbidden=forbidden)
    assert all({p.first, p.second} != {"e1", "e5"} for p in tables)
    mine = event.pairings(1, [], overrides=RoundOverrides(pairs=(("e8", "e1"),)))
    assert (mine[0].first, mine[0].second) == ("e8", "e1")
    rest = [e for p in mine[1:] for e in (p.first, p.second)]
    assert sorted(rest) == sorted(f"e{i}" for i in range(2, 8))


def test_the_dutch_system_is_for_a_swiss_of_at_most_128() -> None:
    with pytest.raises(InvalidOptionError, match="at most 128"):
        dutch(MAX_DUTCH_ENTRANTS + 1, 5)
    event = dutch(MAX_DUTCH_ENTRANTS, 5)
    with pytest.raises(InvalidOptionError, match="at most 128"):
        event.register(Entrant("late", MAX_DUTCH_ENTRANTS + 1), 0)
    with pytest.raises(InvalidOptionError, match="only a swiss"):
        create_event(EventSpec(FormatKind.ROUND_ROBIN, swiss_pairing="dutch"), field(4))
    with pytest.raises(InvalidOptionError, match="unknown pairing system"):
        create_event(EventSpec(FormatKind.SWISS, rounds=3, swiss_pairing="monrad"), field(4))
