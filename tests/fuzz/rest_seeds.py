"""The ``rest`` fuzz target's seeds (:mod:`tests.fuzz.targets`): real REST calls on its live
match, and new ones."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any


def rest_seeds() -> Iterator[tuple[str, str]]:
    """(name, envelope) of real REST calls on the live match (and new ones)."""
    seat0 = {"authorization": "Bearer $seat0"}
    ops = {"x-api-key": "$key"}
    import truco_engine as te

    deck = list(te.DECKS["spanish40"])
    random.Random(3).shuffle(deck)
    # the live match (argentine, seed "f" * 32) is at version 4, seat 0 to act with 2o, 5e, 7e
    calls: list[tuple[str, dict[str, Any]]] = [
        (
            "create",
            {
                "route": "CreateMatch",
                "headers": ops,
                "body": {
                    "requestId": "table-1",
                    "rules": {"preset": "argentine", "overrides": {"target_points": 15}},
                    "players": 2,
                    "seats": [{"displayName": "ana"}, {"displayName": "bot", "kind": "SEAT_KIND_BOT"}],
                    "seed": "c2VlZC1zZWVkLXNlZWQtc2VlZA==",
                    "clientSeed": "Y2xpZW50",
                    "settings": {
                        "labels": {"league": "l1"},
                        "joinWindow": "30s",
                        "spectatorDelayActions": 2,
                        "timeControl": {
                            "perDecision": "20s",
                            "bank": "60s",
                            "increment": "1s",
                            "forfeitAfter": 2,
                            "onExpiry": "EXPIRY_ACTION_DEFAULT_MOVE",
                        },
                    },
                },
            },
        ),
        (
            "create-decks",
            {
                "route": "CreateMatch",
                "headers": ops,
                "body": {"rules": {"preset": "argentine-4p"}, "deckOrders": [{"cards": deck}]},
            },
        ),
        (
            "create-raw",
            {
                "route": "CreateMatch",
                "headers": ops,
                "body": '{"players": 2, "rules": {"preset": "mineiro"}}',
            },
        ),
        (
            "submit",
            {
                "route": "SubmitAction",
                "headers": seat0,
                "path": {"match_id": "$match"},
                "body": {"requestId": "r-1", "expectedVersion": "4", "action": {"playCard": {"card": "2o"}}},
            },
        ),
        (
            "submit-call",
            {
                "route": "SubmitAction",
                "headers": seat0,
                "path": {"match_id": "$match"},
                "body": {"action": {"callTruco": {}}},
            },
        ),
        (
            "submit-envido",
            {
                "route": "SubmitAction",
                "headers": seat0,
                "path": {"match_id": "$match"},
                "body": {"action": {"callEnvido": {"kind": "ENVIDO_KIND_REAL_ENVIDO"}}},
            },
        ),
        (
            "submit-fold",
            {
                "route": "SubmitAction",
                "headers": seat0,
                "path": {"match_id": "$match"},
                "body": {"action": {"fold": {}}, "requestId": "f"},
            },
        ),
        (
            "join",
            {
                "route": "JoinMatch",
                "headers": {"authorization": "Bearer $seat1"},
                "path": {"match_id": "$match"},
                "body": {"clientSeed": "am9pbi1zZWVk"},
            },
        ),
        (
            "get",
            {
                "route": "GetMatch",
                "headers": {"authorization": "Bearer $spectator"},
                "path": {"match_id": "$match"},
            },
        ),
        (
            "list",
            {
                "route": "ListMatches",
                "headers": ops,
                "query": [["pageSize", "5"], ["state", "MATCH_STATE_ACTIVE"]],
            },
        ),
        (
            "cancel",
            {"route": "CancelMatch", "headers": ops, "path": {"match_id": "$match"}, "body": {"reason": "x"}},
        ),
        ("record", {"route": "GetMatchRecord", "headers": seat0, "path": {"match_id": "$match"}}),
        (
            "adjudicate",
            {
                "route": "AdjudicateMatch",
                "headers": ops,
                "path": {"match_id": "$match"},
                "body": {"winnerTeam": 1, "reason": "dispute"},
            },
        ),
        (
            "stream",
            {
                "route": "StreamObservations",
                "headers": {**seat0, "last-event-id": "2"},
                "path": {"match_id": "$match"},
            },
        ),
        (
            "stream-from",
            {
                "route": "StreamObservations",
                "headers": {"x-api-key": "$key"},
                "path": {"match_id": "$match"},
                "query": [["fromVersion", "1"]],
            },
        ),
        (
            "webhook",
            {"route": "CreateWebhook", "headers": ops, "body": {"url": "https://93.184.215.14/hook"}},
        ),
    ]
    for name, call in calls:
        yield f"{name}.json", json.dumps(call, indent=1) + "\n"
