"""Python SDK and bot kit for the Truco match service.

* :class:`TrucoClient` / :class:`AsyncTrucoClient` — every ``truco.v1.MatchService`` RPC,
  typed results, retries with stable request ids, streams that resume by themselves.
* :mod:`truco_client.actions` — action builders: ``play("4C")``, ``truco()``, ``accept()``…
* :class:`Observation` — what a seat sees, with helpers (``is_my_turn``, ``legal_actions``,
  ``my_cards``, ``strength()``, ``envido_points()``…), the same over gRPC and in-process.
* :func:`write_record` / :func:`read_record` — a match's record (``get_match_record``) as
  the file ``truco replay`` and ``truco verify`` read.
* :class:`LeagueClient` / :func:`run_lobby` — leagues and tournaments of an operator, bot
  accounts, and the bot lobby that hands a bot each match it is paired in.
* :class:`Bot` — subclass it, implement ``choose(observation)``; run it with
  ``truco bot MODULE:Class`` or :func:`run_local`.
"""

from truco_client import actions
from truco_client._core import (
    ActionResult,
    CreatedMatch,
    JoinResult,
    MatchView,
    ReissuedCredential,
    RetryPolicy,
    Update,
)
from truco_client.actions import Action
from truco_client.aio import AsyncTrucoClient
from truco_client.bot import Bot
from truco_client.client import TrucoClient
from truco_client.errors import (
    IllegalAction,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    RequestIdReused,
    ServerUnreachable,
    StaleVersion,
    TrucoApiError,
    TrucoClientError,
    Unauthenticated,
    Unavailable,
)
from truco_client.leagues import Assignment, LeagueClient, run_lobby
from truco_client.local import LocalResults, run_local
from truco_client.observation import Event, HandTracker, Observation, Pending, Play, Trick
from truco_client.records import MatchRecord, RecordFormatError, read_record, write_record
from truco_match.lifecycle import TimeControl
from truco_match.views import ClockView

__all__ = [
    "Action",
    "ActionResult",
    "Assignment",
    "AsyncTrucoClient",
    "Bot",
    "ClockView",
    "CreatedMatch",
    "Event",
    "HandTracker",
    "IllegalAction",
    "InvalidArgument",
    "JoinResult",
    "LeagueClient",
    "LocalResults",
    "MatchRecord",
    "MatchView",
    "NotFound",
    "Observation",
    "Pending",
    "PermissionDenied",
    "Play",
    "RecordFormatError",
    "ReissuedCredential",
    "RequestIdReused",
    "RetryPolicy",
    "ServerUnreachable",
    "StaleVersion",
    "TimeControl",
    "Trick",
    "TrucoApiError",
    "TrucoClient",
    "TrucoClientError",
    "Unauthenticated",
    "Unavailable",
    "Update",
    "actions",
    "read_record",
    "run_lobby",
    "run_local",
    "write_record",
]
