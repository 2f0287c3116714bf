"""The tournament library the league service is built on.

Pure and deterministic: no I/O, no clock, no randomness. Everything is a function of the
entrants, the options and the results passed in, so any worker can recompute a round's
pairings and get the same answer. See docs/leagues.md.
"""

from truco_server.leagues.brackets import Elimination, bracket_size, build_bracket, seed_order
from truco_server.leagues.duplicate import (
    TRUCO_IMP_SCALE,
    Board,
    DealComparison,
    DealMatchpoints,
    DealScore,
    DealSets,
    DuplicateMode,
    DuplicateOptions,
    DuplicateTable,
    MatchpointScore,
    MatchpointTable,
    PairComparison,
    PairScoring,
    check_boards,
    compare_pair,
    imps,
    matchpoints,
    tables_for,
)
from truco_server.leagues.entrants import MAX_ENTRANTS, Entrant, validate_entrants
from truco_server.leagues.errors import (
    DuplicateEntrantError,
    EntrantShapeError,
    InvalidEntrantError,
    InvalidOptionError,
    InvalidResultError,
    InvalidScoresError,
    LeagueError,
    NoValidPairingError,
    RegistrationClosedError,
    RoundOrderError,
    TooFewEntrantsError,
    UnknownEntrantError,
    UnknownFormatError,
)
from truco_server.leagues.formats import (
    MIN_ENTRANTS,
    Event,
    EventSpec,
    FormatKind,
    create_event,
    max_swiss_rounds,
    parse_format,
)
from truco_server.leagues.results import Pairing, Result, Scoring
from truco_server.leagues.round_robin import RoundRobin, berger_round
from truco_server.leagues.rounds import Format
from truco_server.leagues.swiss import Swiss
from truco_server.leagues.tiebreaks import DEFAULT_TIE_BREAKS, Standing, TieBreak, parse_tie_breaks, standings

__all__ = [
    "DEFAULT_TIE_BREAKS",
    "MAX_ENTRANTS",
    "MIN_ENTRANTS",
    "TRUCO_IMP_SCALE",
    "Board",
    "DealComparison",
    "DealMatchpoints",
    "DealScore",
    "DealSets",
    "DuplicateEntrantError",
    "DuplicateMode",
    "DuplicateOptions",
    "DuplicateTable",
    "Elimination",
    "Entrant",
    "EntrantShapeError",
    "Event",
    "EventSpec",
    "Format",
    "FormatKind",
    "InvalidEntrantError",
    "InvalidOptionError",
    "InvalidResultError",
    "InvalidScoresError",
    "LeagueError",
    "MatchpointScore",
    "MatchpointTable",
    "NoValidPairingError",
    "PairComparison",
    "PairScoring",
    "Pairing",
    "RegistrationClosedError",
    "Result",
    "RoundOrderError",
    "RoundRobin",
    "Scoring",
    "Standing",
    "Swiss",
    "TieBreak",
    "TooFewEntrantsError",
    "UnknownEntrantError",
    "UnknownFormatError",
    "berger_round",
    "bracket_size",
    "build_bracket",
    "check_boards",
    "compare_pair",
    "create_event",
    "imps",
    "matchpoints",
    "max_swiss_rounds",
    "parse_format",
    "parse_tie_breaks",
    "seed_order",
    "standings",
    "tables_for",
    "validate_entrants",
]
