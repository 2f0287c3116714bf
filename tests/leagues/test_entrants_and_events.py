"""Validation of entrants and event options: each bad input gets its typed error."""

from __future__ import annotations

import pytest

from tests.leagues.helpers import field
from truco_server.leagues import (
    DuplicateEntrantError,
    DuplicateMode,
    DuplicateOptions,
    Entrant,
    EntrantShapeError,
    EventSpec,
    FormatKind,
    InvalidEntrantError,
    InvalidOptionError,
    LeagueError,
    RegistrationClosedError,
    TooFewEntrantsError,
    UnknownFormatError,
    create_event,
    parse_format,
)


def test_unknown_format_names_the_allowed_ones() -> None:
    with pytest.raises(UnknownFormatError) as info:
        parse_format("ladder")
    assert info.value.field == "format"
    assert "swiss" in info.value.message and "double_elimination" in info.value.message
    assert isinstance(info.value, ValueError) and isinstance(info.value, LeagueError)


def test_unknown_format_in_a_spec() -> None:
    with pytest.raises(UnknownFormatError):
        create_event(EventSpec("knockout"), field(8))  # type: ignore[arg-type]


def test_a_known_format_name_in_a_spec_is_accepted() -> None:
    event = create_event(EventSpec("round_robin"), field(4))  # type: ignore[arg-type]
    assert event.spec.format is FormatKind.ROUND_ROBIN


@pytest.mark.parametrize(
    ("kind", "n"),
    [
        (FormatKind.ROUND_ROBIN, 1),
        (FormatKind.SWISS, 3),
        (FormatKind.SINGLE_ELIMINATION, 1),
        (FormatKind.DOUBLE_ELIMINATION, 2),
    ],
)
def test_too_few_entrants(kind: FormatKind, n: int) -> None:
    rounds = 1 if kind is FormatKind.SWISS else None
    with pytest.raises(TooFewEntrantsError) as info:
        create_event(EventSpec(kind, rounds=rounds), field(n))
    assert info.value.field == "entrants"
    assert "at least" in info.value.message


def test_team_entries_for_a_one_a_side_rule_set() -> None:
    entrants = (Entrant("t1", 1, ("ana", "beto")), Entrant("t2", 2, ("caro", "dani")))
    with pytest.raises(EntrantShapeError) as info:
        create_event(EventSpec(FormatKind.ROUND_ROBIN, players_per_side=1), entrants)
    assert info.value.field == "entrants[0].members"
    assert "one a side" in info.value.message


def test_single_entrants_for_a_team_rule_set() -> None:
    with pytest.raises(EntrantShapeError) as info:
        create_event(EventSpec(FormatKind.ROUND_ROBIN, players_per_side=2), field(4))
    assert info.value.field == "entrants[0].members"
    assert "team of exactly 2" in info.value.message


def test_a_team_of_three_is_accepted_for_three_a_side() -> None:
    teams = [Entrant(f"t{i}", i, (f"p{i}a", f"p{i}b", f"p{i}c")) for i in range(1, 5)]
    event = create_event(EventSpec(FormatKind.SINGLE_ELIMINATION, players_per_side=3), teams)
    assert event.entrants[0].players == ("p1a", "p1b", "p1c")


def test_a_team_of_two_in_a_three_a_side_rule_set() -> None:
    teams = [Entrant("t1", 1, ("a", "b")), Entrant("t2", 2, ("c", "d", "e"))]
    with pytest.raises(EntrantShapeError, match="team of exactly 3"):
        create_event(EventSpec(FormatKind.ROUND_ROBIN, players_per_side=3), teams)


def test_duplicate_ids_seeds_and_players() -> None:
    with pytest.raises(DuplicateEntrantError) as info:
        create_event(EventSpec(FormatKind.ROUND_ROBIN), [Entrant("a", 1), Entrant("a", 2)])
    assert info.value.field == "entrants[1].id"
    with pytest.raises(DuplicateEntrantError) as info:
        create_event(EventSpec(FormatKind.ROUND_ROBIN), [Entrant("a", 1), Entrant("b", 1)])
    assert info.value.field == "entrants[1].seed"
    teams = [Entrant("t1", 1, ("x", "y")), Entrant("t2", 2, ("y", "z"))]
    with pytest.raises(DuplicateEntrantError) as info:
        create_event(EventSpec(FormatKind.ROUND_ROBIN, players_per_side=2), teams)
    assert info.value.field == "entrants[1].members"


@pytest.mark.parametrize(
    ("entrant", "where"),
    [
        (Entrant("", 1), "entrants[0].id"),
        (Entrant("x" * 129, 1), "entrants[0].id"),
        (Entrant("a", 0), "entrants[0].seed"),
    ],
)
def test_malformed_entrants(entrant: Entrant, where: str) -> None:
    with pytest.raises(InvalidEntrantError) as info:
        create_event(EventSpec(FormatKind.ROUND_ROBIN), [entrant, Entrant("b", 2)])
    assert info.value.field == where


def test_entrants_are_ordered_by_seed() -> None:
    event = create_event(
        EventSpec(FormatKind.ROUND_ROBIN), [Entrant("c", 3), Entrant("a", 1), Entrant("b", 2)]
    )
    assert [e.id for e in event.entrants] == ["a", "b", "c"]


def test_swiss_rounds_are_required_and_bounded() -> None:
    with pytest.raises(InvalidOptionError) as info:
        create_event(EventSpec(FormatKind.SWISS), field(8))
    assert info.value.field == "rounds" and "1 to 7" in info.value.message
    with pytest.raises(InvalidOptionError, match="1 to 9"):
        create_event(EventSpec(FormatKind.SWISS, rounds=10), field(9))
    with pytest.raises(InvalidOptionError, match="only a swiss"):
        create_event(EventSpec(FormatKind.ROUND_ROBIN, rounds=3), field(8))


def test_registration_before_the_start_is_open_to_every_format() -> None:
    for kind in (FormatKind.ROUND_ROBIN, FormatKind.SINGLE_ELIMINATION):
        event = create_event(EventSpec(kind), field(4)).register(Entrant("late", 9), rounds_started=0)
        assert event.entrants[-1].id == "late" and event.entrants[-1].joined_round == 1


@pytest.mark.parametrize(
    "kind",
    [
        FormatKind.ROUND_ROBIN,
        FormatKind.DOUBLE_ROUND_ROBIN,
        FormatKind.SINGLE_ELIMINATION,
        FormatKind.DOUBLE_ELIMINATION,
    ],
)
def test_registering_after_the_start_where_the_format_forbids_it(kind: FormatKind) -> None:
    event = create_event(EventSpec(kind), field(6))
    with pytest.raises(RegistrationClosedError) as info:
        event.register(Entrant("late", 9), rounds_started=1)
    assert info.value.field == "entrant" and "only a swiss" in info.value.message


def test_swiss_late_registration_until_half_the_rounds_have_started() -> None:
    event = create_event(EventSpec(FormatKind.SWISS, rounds=5), field(8))
    later = event.register(Entrant("late", 9), rounds_started=2)
    assert later.entrants[-1].joined_round == 3
    with pytest.raises(RegistrationClosedError, match="more than half"):
        event.register(Entrant("late", 9), rounds_started=3)


def test_late_registration_is_still_validated() -> None:
    event = create_event(EventSpec(FormatKind.SWISS, rounds=5), field(8))
    with pytest.raises(DuplicateEntrantError):
        event.register(Entrant("e1", 20), rounds_started=1)


def test_tables_of_a_pairing_with_and_without_duplicate() -> None:
    plain = create_event(EventSpec(FormatKind.ROUND_ROBIN), field(4))
    pairing = plain.pairings(1, [])[0]
    (only,) = plain.tables(pairing)
    assert only.sides == (pairing.first, pairing.second) and only.key == "r1.t1"
    dup = create_event(
        EventSpec(FormatKind.ROUND_ROBIN, duplicate=DuplicateOptions(DuplicateMode.TABLES)), field(4)
    )
    a, b = dup.tables(pairing)
    assert a.sides == (pairing.first, pairing.second) and b.sides == (pairing.second, pairing.first)
    assert a.deal_set == b.deal_set == "r1.t1" and a.key != b.key
    bye = create_event(EventSpec(FormatKind.ROUND_ROBIN), field(3)).pairings(1, [])[-1]
    assert bye.is_bye and plain.tables(bye) == ()


def test_an_imp_scale_must_increase() -> None:
    with pytest.raises(InvalidOptionError) as info:
        DuplicateOptions(DuplicateMode.BOARDS, imp_scale=(1, 3, 3))
    assert info.value.field == "duplicate.imp_scale"


@pytest.mark.parametrize(("policy", "score", "byes"), [("full", 1.0, 1), ("half", 0.5, 1), ("none", 0.0, 0)])
def test_a_late_entrants_bye_is_worth_what_the_league_says(policy: str, score: float, byes: int) -> None:
    """full: a bye's points (the default); half: a draw's (Lichess's half-point bye); none: no
    bye at all. The half-point bye still counts as the entrant's bye (no second one)."""
    from truco_server.leagues import LATE_ENTRY, parse_late_entry_bye

    spec = EventSpec(FormatKind.SWISS, rounds=5, late_entry_bye=parse_late_entry_bye(policy))
    swiss = create_event(spec, field(8))
    results = [p.result(p.first, (3, 1)) for p in swiss.pairings(1, [])]
    swiss = swiss.register(Entrant("late", 9), rounds_started=1)
    bye = swiss.late_entry_bye("late", [r.pairing for r in results])
    if bye is not None:
        assert (bye.round, bye.table, bye.label) == (1, 5, LATE_ENTRY)
        results.append(swiss.late_entry_result(bye))
    assert (bye is None) == (byes == 0)
    assert swiss.scores(results)["late"] == score
    (row,) = [s for s in swiss.standings(results) if s.entrant_id == "late"]
    assert (row.score, row.byes, row.played) == (score, byes, 0)
    round2 = swiss.pairings(2, results)  # nine present: the round's bye goes to another once it had one
    (pairing_bye,) = [p for p in round2 if p.is_bye]
    assert (pairing_bye.first == "late") == (byes == 0)


def test_the_late_entry_bye_option_is_checked() -> None:
    from truco_server.leagues import LateEntryBye, parse_late_entry_bye

    assert parse_late_entry_bye("") is LateEntryBye.FULL
    with pytest.raises(InvalidOptionError) as info:
        parse_late_entry_bye("quarter")
    assert info.value.field == "late_entry_bye" and "full, half, none" in info.value.message
    with pytest.raises(InvalidOptionError) as info:
        EventSpec(FormatKind.ROUND_ROBIN, late_entry_bye=LateEntryBye.HALF)
    assert info.value.field == "late_entry_bye"
