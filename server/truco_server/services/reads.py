"""Reading matches: one match as a viewer sees it, an owner's listing, a match's record."""

from __future__ import annotations

from truco_match import records
from truco_match.credentials import SPECTATOR
from truco_match.events import MatchRevealed, MatchStatus
from truco_match.match import Match
from truco_match.matches import MatchInfo
from truco_server.core import errors as E
from truco_server.core import requests as T
from truco_server.core.caller import Caller, Operator
from truco_server.ports.errors import InvalidPageToken
from truco_server.services import stored
from truco_server.services.matches import MatchService
from truco_server.services.streams import MatchStreams

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


class MatchReads:
    """GetMatch, ListMatches and GetMatchRecord."""

    def __init__(self, matches: MatchService, streams: MatchStreams) -> None:
        self.matches = matches
        self.streams = streams

    async def get_match(self, caller: Caller, req: T.GetMatchRequest) -> T.GetMatchResponse:
        match = await self.matches.load(req.match_id, fresh=True)
        viewer = self.matches.viewer(match, caller)
        upto, seen, current = await self.streams.target(match, viewer)
        # the owner, who may see everything, gets the match as it is beside the public view
        info = match.info() if isinstance(caller, Operator) else await self._info(match, upto)
        return T.GetMatchResponse(info, seen, viewer=viewer, at=current)

    async def _info(self, match: Match, upto: int) -> MatchInfo:
        """The match's description as seen at version ``upto``: for a delayed spectator the
        match as it was then (its version and time tell nothing of the pace of play)."""
        if upto == match.version:
            return match.info()
        return (await self.matches.history(match)).info_at(match, upto)

    async def list_matches(self, operator: Operator, req: T.ListMatchesRequest) -> T.ListMatchesResponse:
        if req.page_size < 0:
            raise E.InvalidArgument(
                "page_size must not be negative", field_violations=[E.FieldViolation("page_size", "negative")]
            )
        size = min(req.page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        status = None if req.status is None else req.status.value
        try:
            rows, token = await self.matches.log.list_matches(
                operator.name, status, size, req.page_token or None
            )
        except InvalidPageToken as exc:
            raise E.InvalidArgument(
                str(exc), field_violations=[E.FieldViolation("page_token", str(exc))]
            ) from exc
        return T.ListMatchesResponse(tuple(stored.listed(r) for r in rows), token)

    async def get_match_record(
        self, caller: Caller, req: T.GetMatchRecordRequest
    ) -> T.GetMatchRecordResponse:
        """The match's record as the caller may see it (everything once it is over)."""
        match = await self.matches.load(req.match_id, fresh=True)
        viewer = self.matches.viewer(match, caller)
        past = await self.matches.history(match)
        upto, _, _ = await self.streams.target(match, viewer)
        over = match.status is not MatchStatus.ACTIVE
        seat = None if viewer == SPECTATOR else viewer
        steps = []
        for p in past.points[1:]:
            if p.version > upto:
                break
            steps.append(p.step if over else records.hidden_for(p.step, seat))
        hands = [h for h in records.hands_of([e for _, e, _ in past.entries], 1) if h.version <= upto]
        reveal = None
        if over:
            last, _, _ = past.entries[-1]
            entry, _ = past.entry(last)
            reveal = entry if isinstance(entry, MatchRevealed) else None
        record = records.MatchRecord(
            match=await self._info(match, upto), hands=tuple(hands), steps=tuple(steps), reveal=reveal
        )
        return T.GetMatchRecordResponse(record)
