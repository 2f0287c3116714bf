"""Bot accounts and the bot lobby.

An operator creates bot accounts (``CreateBotAccount``); each has a credential
``tb1.<bot id>.<secret>`` of which only the hash is stored. A bot entered in a league is
handed its seats by the league job (an assignment per match, written to the store); the
lobby (``StreamAssignments``) streams a bot its assignments up to its concurrency, from
whichever worker it connects to.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import secrets
import time
from collections.abc import AsyncIterator, Callable

import structlog

from truco_contract.leagues import Assignment, assignment_from_proto
from truco_contract.pb import league_service_pb2
from truco_server.core import errors as E
from truco_server.core.caller import Operator, looks_like_match_credential
from truco_server.ports.documents import Documents
from truco_server.services.leagues.documents import BOT, ID, MAX_NAME, BotDoc, load_league
from truco_server.services.leagues.errors import invalid

log = structlog.get_logger("truco.leagues")

BOT_PREFIX = "bot_"
BOT_TOKEN_PREFIX = "tb1"
MAX_CONCURRENT = 64


def bot_token_parts(token: str) -> tuple[str, str] | None:
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != BOT_TOKEN_PREFIX or not parts[1].startswith(BOT_PREFIX):
        return None
    return parts[1], parts[2]


STALE_CHECK_SECONDS = 5.0
"""How often a lobby stream whose bot has no free slot for a waiting assignment looks for an
assignment of a released table (:meth:`BotAccounts._released`)."""


class BotAccounts:
    """The bot accounts of every operator and the lobby that streams them their matches."""

    def __init__(
        self,
        documents: Documents,
        *,
        heartbeat_seconds: float = 5.0,
        stopping: asyncio.Event | None = None,
        lobby_poll_seconds: float = 0.25,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.documents = documents
        self.heartbeat_seconds = heartbeat_seconds
        self.stale_check_seconds = STALE_CHECK_SECONDS
        self.stopping = stopping or asyncio.Event()
        self.lobby_poll_seconds = lobby_poll_seconds
        self.now = clock

    async def _released(self, assignments: list[Assignment]) -> list[Assignment]:
        """Those of ``assignments`` whose table the league has released (its match over), or
        whose league is gone: the league job deletes an assignment as it releases its table,
        but a pass that started before and ran late can write it again (a match-ended event
        makes the league due while a pass runs), and such an assignment would hold one of
        the bot's slots for good."""
        out = []
        for league_id in {a.league_id for a in assignments}:
            stored = await load_league(self.documents, league_id)
            for a in (a for a in assignments if a.league_id == league_id):
                table = None if stored is None else stored.doc.tables.get(a.table_key)
                if table is None or table.released:
                    out.append(a)
        return out

    async def get(self, bot_id: str) -> BotDoc | None:
        if not ID.match(bot_id):
            return None
        got = await self.documents.get(BOT, bot_id)
        return None if got is None else BotDoc.from_bytes(got[1])

    async def create(self, operator: Operator, name: str, max_concurrent: int) -> tuple[BotDoc, str]:
        if not name or len(name) > MAX_NAME:
            raise invalid("name", f"1 to {MAX_NAME} characters")
        if not 0 <= max_concurrent <= MAX_CONCURRENT:
            raise invalid("max_concurrent", f"1 to {MAX_CONCURRENT} (0: 1)")
        bot_id = BOT_PREFIX + secrets.token_hex(8)
        token = f"{BOT_TOKEN_PREFIX}.{bot_id}.{secrets.token_urlsafe(24)}"
        bot = BotDoc(
            bot_id=bot_id,
            owner=operator.name,
            name=name,
            max_concurrent=max_concurrent or 1,
            token_hash=hashlib.sha256(token.encode()).hexdigest(),
            created_at=self.now(),
        )
        await self.documents.put(BOT, bot_id, 0, bot.to_bytes())
        await self.documents.index_add(operator.name, BOT, bot_id, round(bot.created_at * 1000))
        log.info("bot account created", bot_id=bot_id)
        return bot, token

    async def owned_by(self, operator: Operator) -> list[BotDoc]:
        out = []
        for bot_id in await self.documents.index(operator.name, BOT, 1000):
            bot = await self.get(bot_id)
            if bot is not None:
                out.append(bot)
        return out

    async def authenticate(self, token: str | None, bot_id: str) -> BotDoc:
        """The bot account of a bot credential (``tb1.<bot id>.<secret>``)."""
        if not token:
            raise E.MissingCredential(
                "missing credential: the bot lobby takes the bot's credential, sent as "
                "'authorization: Bearer tb1....'"
            )
        if looks_like_match_credential(token):
            raise E.WrongCredentialKind(
                "wrong kind of credential: a match credential, where the bot lobby takes the bot's "
                "credential (tb1.<bot id>.<secret>, shown once by CreateBotAccount)"
            )
        parts = bot_token_parts(token)
        if parts is None:
            raise E.Unauthenticated("a bot credential is required: 'authorization: Bearer tb1....'")
        bot = await self.get(parts[0])
        digest = hashlib.sha256((token or "").encode()).hexdigest()
        if bot is None or not hmac.compare_digest(bot.token_hash, digest):
            raise E.Unauthenticated("invalid bot credential")
        if bot_id and bot_id != bot.bot_id:  # a credential names its bot: as any bad one
            raise E.Unauthenticated("invalid bot credential")
        return bot

    async def assignment_stream(
        self, bot: BotDoc, max_concurrent: int = 0
    ) -> AsyncIterator[Assignment | str | None]:
        """The bot lobby (see ``StreamAssignments``): yields an :class:`Assignment` to play, a
        match id whose assignment ended, or ``None`` (a heartbeat), until the worker stops.

        The assignments live in the store (written by the league job), so a bot that
        reconnects, to any worker, is sent its current assignments again. The seam for a
        bidirectional player connection: that connection can iterate this same generator."""
        if not 0 <= max_concurrent <= MAX_CONCURRENT:
            raise invalid("max_concurrent", f"0 to {MAX_CONCURRENT}")
        limit = max_concurrent or bot.max_concurrent
        sent: dict[str, Assignment] = {}
        quiet_since = checked = time.monotonic()
        while True:
            if self.stopping.is_set():
                raise E.ShuttingDown()
            raw = await self.documents.assignments(bot.bot_id)
            current = {
                mid: assignment_from_proto(league_service_pb2.Assignment.FromString(v))
                for mid, v in raw.items()
            }
            for mid in [m for m in sent if m not in current]:
                del sent[mid]
                quiet_since = time.monotonic()
                yield mid
            waiting = sorted(
                (a for mid, a in current.items() if mid not in sent),
                key=lambda a: (a.assigned_at, a.match_id),
            )
            for a in waiting[: max(0, limit - len(sent))]:
                sent[a.match_id] = a
                quiet_since = time.monotonic()
                yield a
            if len(waiting) > limit - len(sent) and time.monotonic() - checked >= self.stale_check_seconds:
                checked = time.monotonic()  # blocked: let go of assignments whose table is over
                for a in await self._released(list(sent.values())):
                    log.warning("stale assignment removed", bot_id=bot.bot_id, match_id=a.match_id)
                    await self.documents.assignment_delete(bot.bot_id, a.match_id)
            if time.monotonic() - quiet_since >= self.heartbeat_seconds:
                quiet_since = time.monotonic()
                yield None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.lobby_poll_seconds)
