"""Run a :class:`~truco_client.bot.Bot` on one seat of a match on a server.

    from truco_client.runner import run_bot
    final = run_bot(MyBot(), "127.0.0.1:50051", match_id, seat_token)

By default the runner plays over the player connection (``Connect``: one bidirectional stream,
:mod:`truco_client.connection`); :func:`play_seat` plays a seat on a connection a program
already holds, so one connection carries every seat it plays. With ``connection=False`` (or a
``client``) it uses the unary calls and a server stream instead.

The runner follows the seat's stream (which resumes by itself after a cut), asks the bot for
an action whenever the game awaits the seat (:meth:`Bot.choose`) and, when the rules let the
seat act out of turn, whether it wants to (:meth:`Bot.out_of_turn`, which declines by
default), and submits it with a request id derived from the match, seat and version: a retry
(or a restarted bot) can never apply a decision twice. Stale or refused actions are skipped (a
newer observation follows); a bot that returns an illegal action gets its first legal action
played instead, with a warning.

When the match has a join window and the seat has not joined, the runner joins it first,
with a client seed (32 random bytes unless given) mixed into the deals.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from collections.abc import Callable

from truco_client.client import TrucoClient
from truco_client.connection import PlayerConnection
from truco_client.errors import IllegalAction, RequestIdReused, StaleVersion, TrucoApiError
from truco_kit.actions import Action
from truco_kit.bot import Bot
from truco_kit.observation import Observation


def _warn(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class _Seat:
    """What one seat's bot does with each observation, the same over unary calls and over a
    player connection: join once (with a client seed), tell the bot, ask it for an action when
    the seat must act (once per version; an illegal choice becomes the first legal action)."""

    def __init__(self, bot: Bot, log: Callable[[str], None], client_seed: bytes | None) -> None:
        self.bot, self.log, self.client_seed = bot, log, client_seed
        self.started = self.joined = False
        self.acted: set[int] = set()

    def join_seed(self, obs: Observation) -> bytes | None:
        """The seed to join with, once, when the seat must join."""
        if not obs.must_join or self.joined:
            return None
        self.joined = True
        return secrets.token_bytes(32) if self.client_seed is None else self.client_seed

    def decide(self, obs: Observation) -> Action | None:
        """Tell the bot about ``obs``; the action to submit now, if any."""
        bot = self.bot
        if not self.started and obs.seat is not None:
            bot.on_match_start(obs.seat)
            self.started = True
        bot.on_observation(obs)
        if obs.is_over:
            bot.on_match_end(obs)
            return None
        if not obs.can_act or obs.version in self.acted:
            return None
        self.acted.add(obs.version)
        if not obs.is_my_turn:  # an action out of turn: only when the bot wants one
            extra = bot.out_of_turn(obs)
            if extra is not None and extra not in obs.legal_actions:
                self.log(f"{bot!r} chose {extra} out of turn, which is not legal; not acting")
                return None
            return extra
        action = bot.choose(obs)
        if action not in obs.legal_actions:
            self.log(f"{bot!r} chose {action}, which is not legal; playing {obs.legal_actions[0]} instead")
            action = obs.legal_actions[0]
        return action

    @staticmethod
    def request_id(match_id: str, obs: Observation) -> str:
        """Derived from the match, seat and version: a retry never applies a decision twice."""
        return f"{match_id}:{obs.seat}:{obs.version}"


def run_bot(
    bot: Bot,
    target: str | list[str] | None,
    match_id: str,
    token: str,
    *,
    client: TrucoClient | None = None,
    think_delay: float = 0.0,
    log: Callable[[str], None] = _warn,
    heartbeat_timeout: float = 30.0,
    client_seed: bytes | None = None,
    connection: bool = True,
) -> Observation:
    """Play ``bot`` on the seat of ``token`` until the match ends; return the last observation.
    ``client_seed``: the seed given when joining (``None``: 32 random bytes; ``b""``: none).
    ``connection``: play over the player connection (the default, unless a sync ``client``
    is given) or over unary calls and a server stream."""
    if connection and client is None:

        async def over_connection() -> Observation:
            async with PlayerConnection(
                target or "127.0.0.1:50051", heartbeat_timeout=heartbeat_timeout
            ) as conn:
                return await play_seat(
                    conn, bot, match_id, token, think_delay=think_delay, log=log, client_seed=client_seed
                )

        return asyncio.run(over_connection())
    own = client is None
    c = (
        client.with_token(token)
        if client is not None
        else TrucoClient(target or "127.0.0.1:50051", token=token, heartbeat_timeout=heartbeat_timeout)
    )
    seat = _Seat(bot, log, client_seed)
    last: Observation | None = None
    try:
        for upd in c.stream(match_id, from_version=0):
            obs = last = upd.observation
            seed = seat.join_seed(obs)
            if seed is not None:
                try:
                    c.join_match(match_id, seed)
                except TrucoApiError as exc:  # the window closed: the stream shows the abort
                    log(f"join refused: {exc}")
            action = seat.decide(obs)
            if obs.is_over:
                return obs
            if action is None:
                continue
            if think_delay:
                time.sleep(think_delay)
            try:
                c.submit_action(
                    match_id, action, request_id=seat.request_id(match_id, obs), expected_version=obs.version
                )
            except (StaleVersion, RequestIdReused):
                pass  # a newer observation is on its way / already applied
            except IllegalAction as exc:
                log(f"action refused: {exc}")
    finally:
        if own:
            c.close()
    assert last is not None
    return last


async def play_seat(
    conn: PlayerConnection,
    bot: Bot,
    match_id: str,
    token: str,
    *,
    think_delay: float = 0.0,
    log: Callable[[str], None] = _warn,
    client_seed: bytes | None = None,
) -> Observation:
    """:func:`run_bot` on a player connection the caller holds (it may carry other seats):
    the same decisions, request ids and handling of refusals."""
    seat = await conn.seat(match_id, token, from_version=0)
    turns = _Seat(bot, log, client_seed)
    last: Observation | None = None
    try:
        async for upd in seat:
            obs = last = upd.observation
            seed = turns.join_seed(obs)
            if seed is not None:
                try:
                    await seat.join(seed)
                except TrucoApiError as exc:  # the window closed: the stream shows the abort
                    log(f"join refused: {exc}")
            action = turns.decide(obs)
            if obs.is_over:
                return obs
            if action is None:
                continue
            if think_delay:
                await asyncio.sleep(think_delay)
            try:
                await seat.submit(
                    action, request_id=turns.request_id(match_id, obs), expected_version=obs.version
                )
            except (StaleVersion, RequestIdReused):
                pass  # a newer observation is on its way / already applied
            except IllegalAction as exc:
                log(f"action refused: {exc}")
    finally:
        await seat.close()
    assert last is not None
    return last
