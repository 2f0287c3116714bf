"""The one codec between the engine's and the contract's types and ``truco.v1`` messages.

Both directions live here, and decoding is strict: a message that does not describe a valid
value raises :class:`DecodeError` naming the field. Event payloads and their messages have
the same field names, so they are converted by a plan built once per payload class from the
dataclass fields and the message descriptor (a field that exists on one side only fails at
import, not on the wire). Conventions: ``None`` is an unset ``optional`` field, an empty
string, or an enum's ``*_UNSPECIFIED``; a tuple is a ``repeated`` field; a ``StrEnum``
member ``X`` is the proto enum value ``<ENUM_NAME>_X``.

Round trips are exact: ``decode(encode(x)) == x`` for every action, payload, observation and
match (tests/contract checks them over random matches of every preset).

Callers use this package (``codec.action_to_proto(...)``); by concern, its modules are
:mod:`.actions`, :mod:`.plans` (dataclass and message, field by field), :mod:`.views`
(events and observations), :mod:`.matches` (matches, rules, settings and lifecycle),
:mod:`.records`, :mod:`.operator_events`, :mod:`.matchmaking` (pools and tickets), and what
they share: :mod:`.errors` and
:mod:`.scalars` (timestamps, durations, enums).
"""

from __future__ import annotations

from truco_contract.codec.actions import (
    ENVIDO_KINDS,
    FLOR_KINDS,
    MAX_CARD_CODE,
    action_from_proto,
    action_to_proto,
)
from truco_contract.codec.errors import DecodeError
from truco_contract.codec.matches import (
    lifecycle_from_proto,
    match_from_proto,
    match_spec_from_proto,
    match_to_proto,
    result_from_proto,
    result_to_proto,
    rules_from_struct,
    rules_to_struct,
    settings_to_proto,
    struct_to_dict,
)
from truco_contract.codec.matchmaking import (
    pool_spec_from_proto,
    pool_to_proto,
    ticket_from_proto,
    ticket_spec_from_proto,
    ticket_to_proto,
)
from truco_contract.codec.operator_events import (
    operator_event_bytes,
    operator_event_from_proto,
    operator_event_to_proto,
    webhook_payload,
)
from truco_contract.codec.records import record_from_proto, record_to_proto
from truco_contract.codec.views import (
    PAYLOAD_PLANS,
    clock_from_proto,
    clock_to_proto,
    event_bytes,
    event_from_proto,
    event_to_proto,
    observation_bytes,
    observation_from_proto,
    observation_to_proto,
    payload_to_proto,
    rules_summary,
)
from truco_match.events import MatchCancelled, MatchCreated, MatchRevealed, RevealedDeal, SeatKind
from truco_match.matches import MatchInfo, MatchResult

__all__ = [
    "ENVIDO_KINDS",
    "FLOR_KINDS",
    "MAX_CARD_CODE",
    "PAYLOAD_PLANS",
    "DecodeError",
    "MatchCancelled",
    "MatchCreated",
    "MatchInfo",
    "MatchResult",
    "MatchRevealed",
    "RevealedDeal",
    "SeatKind",
    "action_from_proto",
    "action_to_proto",
    "clock_from_proto",
    "clock_to_proto",
    "event_bytes",
    "event_from_proto",
    "event_to_proto",
    "lifecycle_from_proto",
    "match_from_proto",
    "match_spec_from_proto",
    "match_to_proto",
    "observation_bytes",
    "observation_from_proto",
    "observation_to_proto",
    "operator_event_bytes",
    "operator_event_from_proto",
    "operator_event_to_proto",
    "payload_to_proto",
    "pool_spec_from_proto",
    "pool_to_proto",
    "record_from_proto",
    "record_to_proto",
    "result_from_proto",
    "result_to_proto",
    "rules_from_struct",
    "rules_summary",
    "rules_to_struct",
    "settings_to_proto",
    "struct_to_dict",
    "ticket_from_proto",
    "ticket_spec_from_proto",
    "ticket_to_proto",
    "webhook_payload",
]
