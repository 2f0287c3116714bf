"""``truco.v1.LeagueService`` in messages, shared by gRPC and REST (like :mod:`.operator_wire`).

Every RPC takes the operator's API key and sees only that operator's leagues and bots, except
``StreamAssignments``, which takes a bot's credential (``tb1.<bot id>.<secret>``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from google.protobuf import timestamp_pb2

from truco_contract.leagues import assignment_to_proto
from truco_contract.pb import league_service_pb2, match_service_pb2
from truco_server.api.auth import Authenticator
from truco_server.api.league_public import public_league_to_proto, standing_fields
from truco_server.api.matches import StreamTracker
from truco_server.core import errors as E
from truco_server.core.caller import Credentials, Operator
from truco_server.leagues import LeaderboardEntry, Standing
from truco_server.services.leagues import (
    MAX_NAME,
    BotDoc,
    EntrantDoc,
    LeagueDoc,
    LeagueService,
    LeagueSpec,
    PairingDoc,
    State,
    series_wins,
)
from truco_server.services.leagues.bots import bot_token_parts

pb = league_service_pb2

MAX_ENTRANTS_PER_CALL = 10_000
MAX_MEMBERS = 3

_STATES = {
    State.REGISTRATION: pb.LEAGUE_STATE_REGISTRATION,
    State.RUNNING: pb.LEAGUE_STATE_RUNNING,
    State.PAUSED: pb.LEAGUE_STATE_PAUSED,
    State.FINISHED: pb.LEAGUE_STATE_FINISHED,
}


def _ts(seconds: float) -> timestamp_pb2.Timestamp:
    t = timestamp_pb2.Timestamp()
    t.FromNanoseconds(round(seconds * 1e9))
    return t


def _bad(field: str, message: str) -> E.InvalidArgument:
    return E.InvalidArgument(f"{field}: {message}", field_violations=[E.FieldViolation(field, message)])


def entrant_from_proto(e: league_service_pb2.Entrant, where: str) -> EntrantDoc:
    if len(e.members) > MAX_MEMBERS:
        raise _bad(f"{where}.members", f"at most {MAX_MEMBERS} members")
    if e.seed < 0:
        raise _bad(f"{where}.seed", "must be >= 1 (0: the next free seed)")
    name = e.display_name
    if len(name) > MAX_NAME or name != name.strip() or not name.isprintable():
        raise _bad(f"{where}.display_name", f"at most {MAX_NAME} printable characters without edge spaces")
    return EntrantDoc(id=e.entrant_id, seed=e.seed, members=list(e.members), display_name=name)


def entrant_to_proto(e: EntrantDoc) -> league_service_pb2.Entrant:
    return pb.Entrant(
        entrant_id=e.id,
        seed=e.seed,
        members=e.members,
        withdrawn=e.withdrawn,
        joined_round=e.joined_round,
        display_name=e.display_name,
        checked_in=e.checked_in,
        withdrawn_reason=e.withdrawn_reason,
    )


def league_to_proto(doc: LeagueDoc) -> league_service_pb2.League:
    template = match_service_pb2.CreateMatchRequest.FromString(bytes.fromhex(doc.template))
    try:
        total = doc.event(min_entrants=True).total_rounds()
    except ValueError:  # not enough entrants yet
        total = 0
    m = pb.League(
        league_id=doc.league_id,
        name=doc.name,
        format=doc.format,
        rules=template.rules,
        settings=template.settings,
        rounds=doc.rounds or 0,
        duplicate=pb.DuplicateSettings(**doc.duplicate),
        tie_breaks=doc.tie_break_names(),
        state=_STATES[doc.state],
        entrants=[entrant_to_proto(e) for e in sorted(doc.entrants, key=lambda e: e.seed)],
        current_round=doc.round,
        total_rounds=total,
        rating_family=doc.family,
        create_time=_ts(doc.created_at),
        finish_reason=doc.finish_reason,
        forbidden_pairs=[pb.EntrantPair(first=a, second=b) for a, b in doc.forbidden],
        round_pairings=[
            pb.RoundPairings(
                round=int(r),
                pairs=[pb.EntrantPair(first=a, second=b) for a, b in o["pairs"]],
                byes=o["byes"],
            )
            for r, o in sorted(doc.overrides.items(), key=lambda kv: int(kv[0]))
        ],
        rating_policy=pb.RatingPolicy(unrated=not doc.rating["rated"], count=doc.rating["count"]),
        third_place=doc.third_place,
        series_best_of=doc.series_best_of,
        swiss_pairing=doc.swiss_pairing if doc.format == "swiss" else "",
        late_entry_bye=doc.late_entry_bye,
        public_id=doc.public_id,
    )
    if doc.group_stage:
        g = doc.group_stage
        m.group_stage.CopyFrom(
            pb.GroupStageSettings(groups=g["groups"], advance=g["advance"], double_round_robin=g["double"])
        )
    if doc.starts_at:
        m.schedule.start_time.CopyFrom(_ts(doc.starts_at))
    if doc.round_interval:
        m.schedule.round_interval.FromNanoseconds(round(doc.round_interval * 1e9))
    if doc.check_in:
        m.schedule.check_in.FromNanoseconds(round(doc.check_in * 1e9))
    if doc.arena_duration:
        m.arena.duration.FromNanoseconds(round(doc.arena_duration * 1e9))
    if doc.ends_at:
        m.arena.end_time.CopyFrom(_ts(doc.ends_at))
    return m


def standing_to_proto(s: Standing) -> league_service_pb2.Standing:
    return pb.Standing(entrant_id=s.entrant_id, **standing_fields(s))


def pairing_to_proto(doc: LeagueDoc, p: PairingDoc) -> league_service_pb2.LeaguePairing:
    wins = series_wins(doc, p)
    m = pb.LeaguePairing(
        round=p.round,
        table=p.table,
        first=p.first,
        second=p.second or "",
        label=p.label,
        series_first_wins=wins[0],
        series_second_wins=wins[1],
    )
    for key in p.tables:
        t = doc.tables[key]
        m.tables.add(
            key=t.key,
            deal_set=t.deal_set,
            sides=t.sides,
            match_id=t.match_id,
            done=t.done,
            spectator_token=t.spectator,
            seats=[
                pb.TableSeat(seat=seat, player_id=player, token="" if player.startswith("bot_") else token)
                for seat, player, token in t.seats
            ],
        )
    if p.result is not None:
        m.result.CopyFrom(result_to_proto(p.result))
    for c in p.corrections:
        m.corrections.add(
            time=_ts(c["time"]),
            reason=c["reason"],
            before=result_to_proto(c["before"]),
            after=result_to_proto(c["after"]),
        )
    return m


def result_to_proto(r: dict[str, Any]) -> league_service_pb2.PairingResult:
    return pb.PairingResult(
        winner=r["winner"] or "",
        first_points=r["first_points"],
        second_points=r["second_points"],
        forfeit=r["forfeit"],
        net=r.get("net", 0),
        imps=r.get("imps", 0),
        deals=[
            pb.DealComparison(deal=d, net_table_a=a, net_table_b=b, net=n, imps=i)
            for d, a, b, n, i in r.get("deals", [])
        ],
    )


def _group_stage(g: league_service_pb2.GroupStageSettings) -> tuple[int, int, bool]:
    """CreateLeagueRequest.group_stage (``advance`` 0: 2)."""
    return (g.groups, g.advance or 2, g.double_round_robin)


def _pairs(pairs: Sequence[league_service_pb2.EntrantPair]) -> list[tuple[str, str]]:
    return [(p.first, p.second) for p in pairs]


def leaderboard_to_proto(entries: Sequence[LeaderboardEntry]) -> league_service_pb2.GetLeaderboardResponse:
    return pb.GetLeaderboardResponse(
        entries=[
            pb.LeaderboardEntry(
                rank=e.rank,
                player_id=e.player_id,
                mu=e.rating.mu,
                sigma=e.rating.sigma,
                ordinal=e.rating.ordinal,
                games=e.rating.games,
            )
            for e in entries
        ]
    )


class LeagueApi:
    """``truco.v1.LeagueService`` over :class:`~truco_server.services.leagues.LeagueService`."""

    def __init__(
        self, leagues: LeagueService, auth: Authenticator, streams: StreamTracker | None = None
    ) -> None:
        self.leagues = leagues
        self.auth = auth
        self.streams = streams

    async def CreateLeague(
        self, creds: Credentials, request: pb.CreateLeagueRequest
    ) -> pb.CreateLeagueResponse:
        operator = self.auth.operator(creds)
        if not request.format:
            raise _bad("format", "required")
        if len(request.entrants) > MAX_ENTRANTS_PER_CALL:
            raise _bad("entrants", f"at most {MAX_ENTRANTS_PER_CALL}")
        if request.rounds < 0:
            raise _bad("rounds", "must not be negative")
        template = match_service_pb2.CreateMatchRequest(rules=request.rules, settings=request.settings)
        if not template.rules.preset:
            raise _bad("rules.preset", "required")
        spec = LeagueSpec(
            name=request.name,
            format=request.format,
            template=template,
            rounds=request.rounds or None,
            duplicate=(request.duplicate.mode, request.duplicate.deal_sets, request.duplicate.scoring),
            tie_breaks=tuple(request.tie_breaks),
            entrants=tuple(entrant_from_proto(e, f"entrants[{i}]") for i, e in enumerate(request.entrants)),
            request_id=request.request_id,
            rating=(request.rating_policy.unrated, tuple(request.rating_policy.count)),
            schedule=(
                request.schedule.start_time.ToNanoseconds() / 1e9
                if request.schedule.HasField("start_time")
                else 0.0,
                request.schedule.round_interval.ToNanoseconds() / 1e9,
            ),
            check_in=request.schedule.check_in.ToNanoseconds() / 1e9,
            third_place=request.third_place,
            series_best_of=request.series_best_of or 1,
            swiss_pairing=request.swiss_pairing,
            arena_duration=request.arena.duration.ToNanoseconds() / 1e9,
            group_stage=_group_stage(request.group_stage) if request.HasField("group_stage") else None,
            late_entry_bye=request.late_entry_bye,
        )
        doc = await self.leagues.create_league(operator, spec)
        return pb.CreateLeagueResponse(league=league_to_proto(doc))

    async def GetLeague(self, creds: Credentials, request: pb.GetLeagueRequest) -> pb.GetLeagueResponse:
        doc = await self.leagues.get_league(self.auth.operator(creds), request.league_id)
        return pb.GetLeagueResponse(league=league_to_proto(doc))

    async def ListLeagues(self, creds: Credentials, request: pb.ListLeaguesRequest) -> pb.ListLeaguesResponse:
        docs = await self.leagues.list_leagues(self.auth.operator(creds))
        return pb.ListLeaguesResponse(leagues=[league_to_proto(d) for d in docs])

    async def RegisterEntrant(
        self, creds: Credentials, request: pb.RegisterEntrantRequest
    ) -> pb.RegisterEntrantResponse:
        operator = self.auth.operator(creds)
        if not request.HasField("entrant"):
            raise _bad("entrant", "required")
        doc = await self.leagues.register(
            operator, request.league_id, entrant_from_proto(request.entrant, "entrant")
        )
        return pb.RegisterEntrantResponse(league=league_to_proto(doc))

    async def WithdrawEntrant(
        self, creds: Credentials, request: pb.WithdrawEntrantRequest
    ) -> pb.WithdrawEntrantResponse:
        operator = self.auth.operator(creds)
        doc = await self.leagues.withdraw(operator, request.league_id, request.entrant_id)
        return pb.WithdrawEntrantResponse(league=league_to_proto(doc))

    async def CheckIn(self, creds: Credentials, request: pb.CheckInRequest) -> pb.CheckInResponse:
        # the operator's key, or a bot account's credential (it arrives as a key): the bot
        # checks in the entrants it plays for
        caller: Operator | BotDoc
        if creds.api_key is not None and bot_token_parts(creds.api_key) is not None:
            caller = await self.leagues.bots.authenticate(creds.api_key, "")
        else:
            caller = self.auth.operator(creds)
        if not request.entrant_id:
            raise _bad("entrant_id", "required")
        _, entrant = await self.leagues.check_in(caller, request.league_id, request.entrant_id)
        return pb.CheckInResponse(entrant=entrant_to_proto(entrant))

    async def StartLeague(self, creds: Credentials, request: pb.StartLeagueRequest) -> pb.StartLeagueResponse:
        doc = await self.leagues.start(self.auth.operator(creds), request.league_id)
        return pb.StartLeagueResponse(league=league_to_proto(doc))

    async def PauseLeague(self, creds: Credentials, request: pb.PauseLeagueRequest) -> pb.PauseLeagueResponse:
        doc = await self.leagues.pause(self.auth.operator(creds), request.league_id)
        return pb.PauseLeagueResponse(league=league_to_proto(doc))

    async def ResumeLeague(
        self, creds: Credentials, request: pb.ResumeLeagueRequest
    ) -> pb.ResumeLeagueResponse:
        doc = await self.leagues.resume(self.auth.operator(creds), request.league_id)
        return pb.ResumeLeagueResponse(league=league_to_proto(doc))

    async def GetStandings(
        self, creds: Credentials, request: pb.GetStandingsRequest
    ) -> pb.GetStandingsResponse:
        doc, table, groups = await self.leagues.standings(self.auth.operator(creds), request.league_id)
        return pb.GetStandingsResponse(
            standings=[standing_to_proto(s) for s in table],
            groups=[
                pb.GroupStandings(label=g.label, standings=[standing_to_proto(s) for s in g.standings])
                for g in groups
            ],
            tie_breaks=doc.tie_break_names(),
        )

    async def ListPairings(
        self, creds: Credentials, request: pb.ListPairingsRequest
    ) -> pb.ListPairingsResponse:
        doc, found = await self.leagues.pairings(self.auth.operator(creds), request.league_id, request.round)
        return pb.ListPairingsResponse(pairings=[pairing_to_proto(doc, p) for p in found])

    async def SetForbiddenPairs(
        self, creds: Credentials, request: pb.SetForbiddenPairsRequest
    ) -> pb.SetForbiddenPairsResponse:
        operator = self.auth.operator(creds)
        doc = await self.leagues.set_forbidden(operator, request.league_id, _pairs(request.pairs))
        return pb.SetForbiddenPairsResponse(league=league_to_proto(doc))

    async def SetRoundPairings(
        self, creds: Credentials, request: pb.SetRoundPairingsRequest
    ) -> pb.SetRoundPairingsResponse:
        operator = self.auth.operator(creds)
        if len(request.pairs) + len(request.byes) > MAX_ENTRANTS_PER_CALL:
            raise _bad("pairs", f"at most {MAX_ENTRANTS_PER_CALL} pairs and byes")
        doc = await self.leagues.set_round(
            operator, request.league_id, request.round, _pairs(request.pairs), list(request.byes)
        )
        return pb.SetRoundPairingsResponse(league=league_to_proto(doc))

    async def CorrectResult(
        self, creds: Credentials, request: pb.CorrectResultRequest
    ) -> pb.CorrectResultResponse:
        operator = self.auth.operator(creds)
        outcome = (request.winner, request.first_points, request.second_points, request.forfeit)
        doc, pairing = await self.leagues.correct(
            operator, request.league_id, request.round, request.table, outcome, request.reason
        )
        return pb.CorrectResultResponse(pairing=pairing_to_proto(doc, pairing))

    async def CreateBotAccount(
        self, creds: Credentials, request: pb.CreateBotAccountRequest
    ) -> pb.CreateBotAccountResponse:
        bot, token = await self.leagues.bots.create(
            self.auth.operator(creds), request.name, request.max_concurrent
        )
        return pb.CreateBotAccountResponse(
            bot=pb.BotAccount(
                bot_id=bot.bot_id,
                name=bot.name,
                max_concurrent=bot.max_concurrent,
                token=token,
                create_time=_ts(bot.created_at),
            )
        )

    async def ListBotAccounts(
        self, creds: Credentials, request: pb.ListBotAccountsRequest
    ) -> pb.ListBotAccountsResponse:
        bots = await self.leagues.bots.owned_by(self.auth.operator(creds))
        return pb.ListBotAccountsResponse(
            bots=[
                pb.BotAccount(
                    bot_id=b.bot_id,
                    name=b.name,
                    max_concurrent=b.max_concurrent,
                    create_time=_ts(b.created_at),
                )
                for b in bots
            ]
        )

    async def StreamAssignments(
        self, creds: Credentials, request: pb.StreamAssignmentsRequest
    ) -> AsyncIterator[pb.StreamAssignmentsResponse]:
        # a bot credential is not a match credential: the transports hand it over as a key
        bot = await self.leagues.bots.authenticate(creds.api_key or creds.bearer, request.bot_id)
        if self.streams is None:
            async for item in self.leagues.bots.assignment_stream(bot, request.max_concurrent):
                yield self._message(item)
            return
        async with self.streams.track():
            async for item in self.leagues.bots.assignment_stream(bot, request.max_concurrent):
                yield self._message(item)

    @staticmethod
    def _message(item: object) -> pb.StreamAssignmentsResponse:
        if item is None:
            beat = timestamp_pb2.Timestamp()
            beat.GetCurrentTime()
            return pb.StreamAssignmentsResponse(heartbeat=beat)
        if isinstance(item, str):
            return pb.StreamAssignmentsResponse(released_match_id=item)
        return pb.StreamAssignmentsResponse(assignment=assignment_to_proto(item))  # type: ignore[arg-type]

    async def GetLeaderboard(
        self, creds: Credentials, request: pb.GetLeaderboardRequest
    ) -> pb.GetLeaderboardResponse:
        entries = await self.leagues.ratings.leaderboard(
            self.auth.operator(creds), request.family, request.page_size
        )
        return leaderboard_to_proto(entries)

    async def GetPublicLeague(
        self, creds: Credentials, request: pb.GetPublicLeagueRequest
    ) -> pb.GetPublicLeagueResponse:
        # no credential: a league's public id is all it takes (whatever creds carry is unused)
        version, doc, table = await self.leagues.public_view(request.public_id)
        return pb.GetPublicLeagueResponse(league=public_league_to_proto(version, doc, table, _STATES))


__all__ = ["LeagueApi", "league_to_proto"]
