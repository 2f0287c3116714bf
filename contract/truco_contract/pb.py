"""The generated ``truco.v1`` modules. Import them from here: the generated ``truco`` package
is reached only through the contract (an import-linter contract checks it)."""

from truco.v1 import (
    action_pb2,
    error_details_pb2,
    event_pb2,
    game_pb2,
    league_service_pb2,
    league_service_pb2_grpc,
    match_pb2,
    match_service_pb2,
    match_service_pb2_grpc,
    matchmaking_service_pb2,
    matchmaking_service_pb2_grpc,
    observation_pb2,
    operator_service_pb2,
    operator_service_pb2_grpc,
)

__all__ = [
    "action_pb2",
    "error_details_pb2",
    "event_pb2",
    "game_pb2",
    "league_service_pb2",
    "league_service_pb2_grpc",
    "match_pb2",
    "match_service_pb2",
    "match_service_pb2_grpc",
    "matchmaking_service_pb2",
    "matchmaking_service_pb2_grpc",
    "observation_pb2",
    "operator_service_pb2",
    "operator_service_pb2_grpc",
]
