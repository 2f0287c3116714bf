"""truco_engine — a pure, deterministic Truco rules engine.

No I/O, no randomness, no dependencies. The whole game is a state machine::

    state = new_match(get_rules("paulista-2p"))
    state, events = deal(state, deck_order)          # the chance step
    seat = to_act(state)[0]
    state, events = apply(state, seat, legal_actions(state, seat)[0])
    view = observe(state, seat)                      # what that seat may see

See ``docs/engine.md`` for the API and ``docs/rules/`` for every rule and option.
"""

from truco_engine import presets_brazil as _presets_brazil  # noqa: F401  (registers presets)
from truco_engine import presets_riverplate as _presets_riverplate  # noqa: F401  (registers presets)
from truco_engine.actions import KINDS as ACTION_KINDS
from truco_engine.actions import Action, parse_action
from truco_engine.cards import DECKS, describe
from truco_engine.engine import (
    apply,
    deal,
    deck_commitment,
    is_legal,
    is_over,
    legal_actions,
    needs_deal,
    new_match,
    seat_teams,
    to_act,
    verify_action,
)
from truco_engine.enums import (
    AllTied,
    ContraflorAlResto,
    Deck,
    FaltaEnvido,
    FoldOnEnvido,
    LeadAfterTie,
    PartnerFlor,
    Phase,
    PiezaValues,
    PlayMode,
    Ranking,
)
from truco_engine.errors import (
    IllegalActionError,
    InvalidCardError,
    InvalidDeckError,
    InvalidRulesError,
    MatchOverError,
    NotYourTurnError,
    RecordError,
    TrucoError,
    UnknownPresetError,
)
from truco_engine.events import (
    PAYLOADS,
    BetWon,
    CallAnswered,
    CallFamily,
    CallMade,
    CardDiscarded,
    CardPlayed,
    CardsDealt,
    CardsRevealed,
    Event,
    EventKind,
    Folded,
    GameEnded,
    HandEnded,
    HandEndReason,
    HandOfElevenDecision,
    HandStarted,
    HeadToHeadStarted,
    MatchEnded,
    Payload,
    PointsDeclared,
    ScoreChanged,
    Special,
    TrickEnded,
    payload_from_dict,
    payload_to_dict,
)
from truco_engine.observe import Observation, PendingCall, PlayView, TrickView, observe
from truco_engine.outcome import conclude
from truco_engine.record import (
    Match,
    MatchRecord,
    canonical_json,
    replay,
    state_from_json,
    state_to_json,
)
from truco_engine.rules import PRESETS, RuleSet, find_preset, get_rules, house_rules, preset_names
from truco_engine.state import MatchState

__all__ = [
    "ACTION_KINDS",
    "DECKS",
    "PAYLOADS",
    "PRESETS",
    "Action",
    "AllTied",
    "BetWon",
    "CallAnswered",
    "CallFamily",
    "CallMade",
    "CardDiscarded",
    "CardPlayed",
    "CardsDealt",
    "CardsRevealed",
    "ContraflorAlResto",
    "Deck",
    "Event",
    "EventKind",
    "FaltaEnvido",
    "FoldOnEnvido",
    "Folded",
    "GameEnded",
    "HandEndReason",
    "HandEnded",
    "HandOfElevenDecision",
    "HandStarted",
    "HeadToHeadStarted",
    "IllegalActionError",
    "InvalidCardError",
    "InvalidDeckError",
    "InvalidRulesError",
    "LeadAfterTie",
    "Match",
    "MatchEnded",
    "MatchOverError",
    "MatchRecord",
    "MatchState",
    "NotYourTurnError",
    "Observation",
    "PartnerFlor",
    "Payload",
    "PendingCall",
    "Phase",
    "PiezaValues",
    "PlayMode",
    "PlayView",
    "PointsDeclared",
    "Ranking",
    "RecordError",
    "RuleSet",
    "ScoreChanged",
    "Special",
    "TrickEnded",
    "TrickView",
    "TrucoError",
    "UnknownPresetError",
    "apply",
    "canonical_json",
    "conclude",
    "deal",
    "deck_commitment",
    "describe",
    "find_preset",
    "get_rules",
    "house_rules",
    "is_legal",
    "is_over",
    "legal_actions",
    "needs_deal",
    "new_match",
    "observe",
    "parse_action",
    "payload_from_dict",
    "payload_to_dict",
    "preset_names",
    "replay",
    "seat_teams",
    "state_from_json",
    "state_to_json",
    "to_act",
    "verify_action",
]
