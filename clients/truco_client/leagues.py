"""Leagues, bot accounts and the bot lobby (``truco.v1.LeagueService``).

Operator side::

    from truco_client.leagues import LeagueClient

    with LeagueClient("127.0.0.1:50051", api_key="secret") as leagues:
        bots = [leagues.create_bot(f"bot {i}") for i in range(8)]
        lg = leagues.create_league("Friday", "swiss", preset="argentine", rounds=3,
                                   entrants=[b.bot_id for b in bots], join_window=60)
        leagues.start(lg.league_id)
        print(leagues.standings(lg.league_id))

Bot side (the lobby: one connection, every match the bot is paired in, as it is paired;
:mod:`truco_client.lobby`, whose names are re-exported here)::

    from truco_client.leagues import run_lobby
    run_lobby("127.0.0.1:50051", bot.bot_id, bot.token, lambda: MyBot())

Messages are the contract's protos (``truco.v1.League``, ``LeaguePairing``...);
:mod:`truco_contract.leagues` turns standings and pairings into CSV or JSON rows.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import grpc

from truco_client._core import (
    CONNECT_TIMEOUT,
    RetryPolicy,
    Seconds,
    lifecycle_of,
    new_request_id,
)
from truco_client._unary import ServiceChannel
from truco_client.lobby import STOP_POLL, aio_assignments, assignments, play_lobby, run_lobbies, run_lobby
from truco_contract import codec
from truco_contract.leagues import Assignment
from truco_contract.pb import league_service_pb2, league_service_pb2_grpc, match_pb2
from truco_contract.trf import swiss_trf
from truco_match.lifecycle import TimeControl

pb = league_service_pb2
T = TypeVar("T")

EntrantLike = str | tuple[str, Sequence[str]] | league_service_pb2.Entrant
"""An entrant: its id (a player or a bot id), ``(team id, member ids)``, or the message."""


def _entrant(e: EntrantLike, seed: int = 0) -> league_service_pb2.Entrant:
    if isinstance(e, pb.Entrant):
        return e
    if isinstance(e, str):
        return pb.Entrant(entrant_id=e, seed=seed)
    return pb.Entrant(entrant_id=e[0], seed=seed, members=list(e[1]))


def _set_duration(field: Any, value: float | timedelta) -> None:
    """Set a ``google.protobuf.Duration`` field from seconds or a timedelta."""
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    field.FromNanoseconds(round(seconds * 1e9))


class LeagueClient:
    """Blocking client of ``truco.v1.LeagueService``; unary calls are retried on UNAVAILABLE
    (creation with a stable request id, so a retry never makes a second league)."""

    def __init__(
        self,
        target: str = "127.0.0.1:50051",
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        connect_timeout: float | None = CONNECT_TIMEOUT,
    ) -> None:
        self._rpc = ServiceChannel(
            target,
            league_service_pb2_grpc.LeagueServiceStub,
            api_key=api_key,
            timeout=timeout,
            retry=retry,
            credentials=credentials,
            connect_timeout=connect_timeout,
        )
        self.target = target
        self.api_key = api_key
        self.timeout = timeout
        self.retry = self._rpc.retry
        self.connect_timeout = connect_timeout
        """Seconds the first call waits for the server to accept a connection
        (:class:`~truco_client.errors.ServerUnreachable` otherwise; ``None``: no wait)."""
        self._stub = self._rpc.stub
        self._call = self._rpc.call

    def close(self) -> None:
        self._rpc.close()

    def __enter__(self) -> LeagueClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ leagues
    def create_league(
        self,
        name: str,
        format: str,
        *,
        preset: str = "argentine",
        overrides: Mapping[str, Any] | None = None,
        rounds: int | None = None,
        entrants: Sequence[EntrantLike] = (),
        duplicate: str = "",
        deal_sets: str = "",
        duplicate_scoring: str = "",
        tie_breaks: Sequence[str] = (),
        join_window: Seconds | None = None,
        turn_timeout: float | timedelta | None = None,
        time_control: TimeControl | None = None,
        request_id: str | None = None,
        unrated: bool = False,
        rated_endings: Sequence[str] = (),
        start_time: float | None = None,
        round_interval: Seconds | None = None,
        third_place: bool = False,
        series_best_of: int = 1,
        check_in: Seconds | None = None,
        swiss_pairing: str = "",
        arena_duration: Seconds | None = None,
        groups: int = 0,
        advance: int = 2,
        double_round_robin_groups: bool = False,
        late_entry_bye: str = "",
    ) -> league_service_pb2.League:
        """A new league in registration (entrants get seeds in the order given). ``unrated``:
        none of its matches is rated; ``rated_endings``: which are ("played", "adjudicated",
        "time_forfeit", "no_show"; default played and adjudicated). ``start_time`` (seconds
        since the epoch): it starts by itself then; ``round_interval``: the pause between a
        round's last result and the next round. ``third_place`` (single elimination): the
        semi-final losers play for third place. ``series_best_of`` (odd, 1 to 9): each
        pairing is a series of up to that many matches, decided by a majority. ``check_in``
        (needs ``start_time``): a check-in window that long before it; at the start, entrants
        who did not :meth:`check_in` are withdrawn. ``swiss_pairing`` (a swiss): ``"weighted"``
        (the default) or ``"dutch"`` (the FIDE Dutch system, at most 128 entrants).
        ``arena_duration`` (an ``"arena"``, which needs it): how long it pairs its entrants from
        the start.
        ``groups`` (format ``groups_knockout``):
        that many groups, each a round robin (double with ``double_round_robin_groups``), then
        a knockout of the top ``advance`` of each. ``late_entry_bye`` (Swiss): a late
        entrant's bye for round 1 is "full" (the default), "half" or "none"."""
        rules = match_pb2.RuleSet(preset=preset)
        if overrides:
            rules.overrides.update(dict(overrides))
        settings = codec.settings_to_proto(
            {}, lifecycle_of(time_control=time_control, join_window=join_window)
        )
        if turn_timeout:
            _set_duration(settings.turn_timeout, turn_timeout)
        req = pb.CreateLeagueRequest(
            name=name,
            format=format,
            rules=rules,
            settings=settings,
            rounds=rounds or 0,
            duplicate=pb.DuplicateSettings(mode=duplicate, deal_sets=deal_sets, scoring=duplicate_scoring),
            tie_breaks=list(tie_breaks),
            entrants=[_entrant(e, i) for i, e in enumerate(entrants, 1)],
            request_id=request_id or new_request_id(),
            rating_policy=pb.RatingPolicy(unrated=unrated, count=list(rated_endings)),
            third_place=third_place,
            series_best_of=series_best_of,
            swiss_pairing=swiss_pairing,
            late_entry_bye=late_entry_bye,
        )
        if groups:
            req.group_stage.CopyFrom(
                pb.GroupStageSettings(
                    groups=groups, advance=advance, double_round_robin=double_round_robin_groups
                )
            )
        if start_time is not None:
            req.schedule.start_time.FromNanoseconds(round(start_time * 1e9))
        for field, value in (
            (req.arena.duration, arena_duration),
            (req.schedule.check_in, check_in),
            (req.schedule.round_interval, round_interval),
        ):
            if value:
                _set_duration(field, value)
        return self._call("CreateLeague", req).league  # type: ignore[no-any-return]

    def get_league(self, league_id: str) -> league_service_pb2.League:
        return self._call("GetLeague", pb.GetLeagueRequest(league_id=league_id)).league  # type: ignore[no-any-return]

    def public_league(self, public_id: str) -> league_service_pb2.PublicLeague:
        """The league as a spectator sees it, by its public id (``League.public_id``): needs
        no credential; what the page ``/leagues/{public_id}`` shows."""
        req = pb.GetPublicLeagueRequest(public_id=public_id)
        return self._call("GetPublicLeague", req).league  # type: ignore[no-any-return]

    def list_leagues(self) -> list[league_service_pb2.League]:
        return list(self._call("ListLeagues", pb.ListLeaguesRequest()).leagues)

    def register(self, league_id: str, entrant: EntrantLike, seed: int = 0) -> league_service_pb2.League:
        req = pb.RegisterEntrantRequest(league_id=league_id, entrant=_entrant(entrant, seed))
        return self._call("RegisterEntrant", req).league  # type: ignore[no-any-return]

    def withdraw(self, league_id: str, entrant_id: str) -> league_service_pb2.League:
        req = pb.WithdrawEntrantRequest(league_id=league_id, entrant_id=entrant_id)
        return self._call("WithdrawEntrant", req).league  # type: ignore[no-any-return]

    def check_in(self, league_id: str, entrant_id: str) -> league_service_pb2.Entrant:
        """Check an entrant in during the league's check-in window: with the operator's key,
        any entrant; with a bot account's credential as ``api_key``, one it plays for."""
        req = pb.CheckInRequest(league_id=league_id, entrant_id=entrant_id)
        return self._call("CheckIn", req).entrant  # type: ignore[no-any-return]

    def start(self, league_id: str) -> league_service_pb2.League:
        return self._call("StartLeague", pb.StartLeagueRequest(league_id=league_id)).league  # type: ignore[no-any-return]

    def pause(self, league_id: str) -> league_service_pb2.League:
        return self._call("PauseLeague", pb.PauseLeagueRequest(league_id=league_id)).league  # type: ignore[no-any-return]

    def resume(self, league_id: str) -> league_service_pb2.League:
        return self._call("ResumeLeague", pb.ResumeLeagueRequest(league_id=league_id)).league  # type: ignore[no-any-return]

    def set_forbidden_pairs(
        self, league_id: str, pairs: Sequence[tuple[str, str]]
    ) -> league_service_pb2.League:
        """Replace the league's forbidden pairs (a Swiss never pairs them)."""
        req = pb.SetForbiddenPairsRequest(
            league_id=league_id, pairs=[pb.EntrantPair(first=a, second=b) for a, b in pairs]
        )
        return self._call("SetForbiddenPairs", req).league  # type: ignore[no-any-return]

    def set_round_pairings(
        self, league_id: str, round: int, pairs: Sequence[tuple[str, str]] = (), byes: Sequence[str] = ()
    ) -> league_service_pb2.League:
        """The operator's own pairings (first: mano) and byes of a Swiss round not paired yet."""
        req = pb.SetRoundPairingsRequest(
            league_id=league_id,
            round=round,
            pairs=[pb.EntrantPair(first=a, second=b) for a, b in pairs],
            byes=list(byes),
        )
        return self._call("SetRoundPairings", req).league  # type: ignore[no-any-return]

    def correct_result(
        self,
        league_id: str,
        round: int,
        table: int,
        winner: str,
        points: tuple[int, int] = (0, 0),
        *,
        forfeit: bool = False,
        reason: str = "",
    ) -> league_service_pb2.LeaguePairing:
        """Correct a recorded result (winner "" is a draw); ``points`` are the first's and the second's."""
        req = pb.CorrectResultRequest(
            league_id=league_id, round=round, table=table, winner=winner,
            first_points=points[0], second_points=points[1], forfeit=forfeit, reason=reason,
        )  # fmt: skip
        return self._call("CorrectResult", req).pairing  # type: ignore[no-any-return]

    def standings(self, league_id: str) -> league_service_pb2.GetStandingsResponse:
        return self._call("GetStandings", pb.GetStandingsRequest(league_id=league_id))  # type: ignore[no-any-return]

    def pairings(self, league_id: str, round: int = 0) -> league_service_pb2.ListPairingsResponse:
        req = pb.ListPairingsRequest(league_id=league_id, round=round)
        return self._call("ListPairings", req)  # type: ignore[no-any-return]

    def export_trf(self, league_id: str) -> str:
        """A Swiss league as a FIDE Tournament Report File (TRF-16 text; see
        :func:`truco_contract.trf.swiss_trf`): the league, its standings and its pairings."""
        league = self.get_league(league_id)
        return swiss_trf(league, self.standings(league_id), self.pairings(league_id))

    def leaderboard(self, family: str, limit: int = 50) -> list[league_service_pb2.LeaderboardEntry]:
        req = pb.GetLeaderboardRequest(family=family, page_size=limit)
        return list(self._call("GetLeaderboard", req).entries)

    def wait_finished(self, league_id: str, timeout: float, poll: float = 0.5) -> league_service_pb2.League:
        """Poll until the league is finished (``TimeoutError`` after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while True:
            lg = self.get_league(league_id)
            if lg.state == pb.LEAGUE_STATE_FINISHED:
                return lg
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"league {league_id} not finished after {timeout:g}s (round {lg.current_round})"
                )
            time.sleep(poll)

    # ------------------------------------------------------------------ bots
    def create_bot(self, name: str, max_concurrent: int = 1) -> league_service_pb2.BotAccount:
        """A bot account; its ``token`` is shown only here."""
        req = pb.CreateBotAccountRequest(name=name, max_concurrent=max_concurrent)
        return self._call("CreateBotAccount", req).bot  # type: ignore[no-any-return]

    def list_bots(self) -> list[league_service_pb2.BotAccount]:
        return list(self._call("ListBotAccounts", pb.ListBotAccountsRequest()).bots)


__all__ = [
    "STOP_POLL",
    "Assignment",
    "LeagueClient",
    "aio_assignments",
    "assignments",
    "play_lobby",
    "run_lobbies",
    "run_lobby",
]
