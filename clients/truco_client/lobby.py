"""The bot lobby (``truco.v1.LeagueService.StreamAssignments``): a bot account's assignments,
and the loop that plays every match it is assigned, each with a fresh bot.

    from truco_client.lobby import run_lobby
    run_lobby("127.0.0.1:50051", bot.bot_id, bot.token, lambda: MyBot())

:mod:`truco_client.leagues` re-exports every name here beside :class:`LeagueClient`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import grpc

from truco_client._core import CHANNEL_OPTIONS, CONNECT_TIMEOUT, RetryPolicy, metadata
from truco_client.connection import PlayerConnection
from truco_client.errors import RETRYABLE, ServerUnreachable, from_rpc_error
from truco_client.runner import play_seat
from truco_contract.leagues import Assignment, assignment_from_proto
from truco_contract.pb import league_service_pb2, league_service_pb2_grpc
from truco_kit.bot import Bot

pb = league_service_pb2


def assignments(
    target: str | Sequence[str],
    bot_id: str,
    token: str,
    *,
    max_concurrent: int = 0,
    retry: RetryPolicy | None = None,
    heartbeat_timeout: float = 30.0,
    stop: threading.Event | None = None,
) -> Iterator[Assignment | str]:
    """The bot lobby as an iterator: each :class:`Assignment` to play, or the match id of an
    assignment that ended. Reconnects after a cut (the server sends the current assignments
    again; one already handed out is not repeated), moving to the next of several targets."""
    targets = [target] if isinstance(target, str) else list(target)
    retry = retry or RetryPolicy()
    rng = random.Random()
    seen: set[str] = set()
    failures = 0
    while stop is None or not stop.is_set():
        channel = grpc.insecure_channel(targets[failures % len(targets)], options=CHANNEL_OPTIONS)
        stub = league_service_pb2_grpc.LeagueServiceStub(channel)
        call = stub.StreamAssignments(
            pb.StreamAssignmentsRequest(bot_id=bot_id, max_concurrent=max_concurrent),
            metadata=metadata(token),
        )
        watchdog = threading.Timer(heartbeat_timeout, call.cancel)
        try:
            watchdog.start()
            for msg in call:
                watchdog.cancel()
                watchdog = threading.Timer(heartbeat_timeout, call.cancel)
                watchdog.start()
                failures = 0
                if stop is not None and stop.is_set():
                    return
                kind = msg.WhichOneof("message")
                if kind == "assignment" and msg.assignment.match_id not in seen:
                    seen.add(msg.assignment.match_id)
                    yield assignment_from_proto(msg.assignment)
                elif kind == "released_match_id":
                    seen.discard(msg.released_match_id)
                    yield msg.released_match_id
        except grpc.RpcError as err:
            if err.code() not in (*RETRYABLE, grpc.StatusCode.CANCELLED):
                raise from_rpc_error(err) from None
            failures += 1
            if failures >= retry.attempts:
                raise from_rpc_error(err) from None
        finally:
            watchdog.cancel()
            channel.close()
        if stop is None or not stop.is_set():
            time.sleep(retry.backoff(max(1, failures), rng))


STOP_POLL = 0.1
"""Seconds between two looks of :func:`run_lobbies` at its ``stop`` (a ``threading.Event``
another thread sets)."""


async def aio_assignments(
    targets: Sequence[str],
    bot_id: str,
    token: str,
    *,
    max_concurrent: int = 0,
    retry: RetryPolicy | None = None,
    heartbeat_timeout: float = 30.0,
    connect_timeout: float | None = CONNECT_TIMEOUT,
) -> AsyncGenerator[Assignment | str, None]:
    """:func:`assignments` for asyncio programs: the same messages, skips and reconnects, on
    one ``grpc.aio`` channel at a time of the running loop, each closed before the next is
    opened. Until one target has answered, each gets ``connect_timeout`` seconds to accept a
    connection (:class:`ServerUnreachable` when none does)."""
    retry = retry or RetryPolicy()
    rng = random.Random()
    seen: set[str] = set()
    failures = unanswered = 0
    reached = not connect_timeout
    request = pb.StreamAssignmentsRequest(bot_id=bot_id, max_concurrent=max_concurrent)
    while True:
        async with grpc.aio.insecure_channel(
            targets[(failures + unanswered) % len(targets)], options=CHANNEL_OPTIONS
        ) as channel:
            if not reached:
                try:
                    await asyncio.wait_for(channel.channel_ready(), connect_timeout)
                except TimeoutError:
                    unanswered += 1
                    if unanswered >= len(targets):
                        raise ServerUnreachable(targets, connect_timeout or 0) from None
                    continue
                reached = True
            call = league_service_pb2_grpc.LeagueServiceStub(channel).StreamAssignments(
                request, metadata=metadata(token)
            )
            try:
                async for item in _assignment_messages(call, seen, heartbeat_timeout):
                    failures = 0
                    yield item
            except grpc.RpcError as err:
                if err.code() not in RETRYABLE:
                    raise from_rpc_error(err) from None
                failures += 1
                if failures >= retry.attempts:
                    raise from_rpc_error(err) from None
            finally:
                call.cancel()
        await asyncio.sleep(retry.backoff(max(1, failures), rng))


async def _assignment_messages(
    call: Any, seen: set[str], heartbeat_timeout: float
) -> AsyncIterator[Assignment | str]:
    """What one ``StreamAssignments`` call brings, until it ends or is silent for
    ``heartbeat_timeout`` seconds (then the caller reconnects)."""
    messages = call.__aiter__()
    while True:
        try:
            msg = await asyncio.wait_for(messages.__anext__(), heartbeat_timeout)
        except (StopAsyncIteration, TimeoutError):
            return
        kind = msg.WhichOneof("message")
        if kind == "assignment" and msg.assignment.match_id not in seen:
            seen.add(msg.assignment.match_id)
            yield assignment_from_proto(msg.assignment)
        elif kind == "released_match_id":
            seen.discard(msg.released_match_id)
            yield msg.released_match_id


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def play_lobby(
    target: str | Sequence[str],
    bot_id: str,
    token: str,
    make_bot: Callable[[], Bot],
    *,
    max_concurrent: int = 0,
    stop: asyncio.Event | None = None,
    log: Callable[[str], None] = _stderr,
    matches: int | None = None,
    connect_timeout: float | None = CONNECT_TIMEOUT,
    abandon: asyncio.Event | None = None,
) -> int:
    """One bot account's lobby on the running event loop: every match it is assigned is a
    task playing a fresh ``make_bot()``, every seat on one player connection. Stops taking
    assignments once ``stop`` is set or ``matches`` were played, plays the matches under way
    to their end (or until ``abandon`` is set: those left are logged and stopped), closes its
    channels and returns the number of matches played. A match that fails is logged
    (``log``) and counted; a lobby stream lost for good raises."""
    targets = [target] if isinstance(target, str) else list(target)
    enough = asyncio.Event()
    played = 0
    running: dict[asyncio.Task[None], str] = {}  # each match under way, its id
    async with PlayerConnection(targets) as conn:

        async def play(a: Assignment) -> None:
            nonlocal played
            try:
                await play_seat(conn, make_bot(), a.match_id, a.token, log=log)
            except Exception as exc:  # one match failing must not stop the lobby
                log(f"{bot_id}: match {a.match_id} failed: {exc!r}")
            played += 1
            if matches is not None and played >= matches:
                enough.set()

        async def take() -> None:
            items = aio_assignments(
                targets, bot_id, token, max_concurrent=max_concurrent, connect_timeout=connect_timeout
            )
            async with contextlib.aclosing(items):
                async for item in items:
                    if isinstance(item, Assignment):
                        task = asyncio.create_task(play(item), name=f"lobby-{item.match_id}")
                        running[task] = item.match_id
                        task.add_done_callback(running.pop)

        waits = [asyncio.create_task(take()), asyncio.create_task(enough.wait())]
        if stop is not None:
            waits.append(asyncio.create_task(stop.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
            lost = None if waits[0].cancelled() else waits[0].exception()
            if lost is not None:
                raise lost
            if running and not await _finished(running, abandon):
                left = ", ".join(sorted(running.values()))
                log(f"{bot_id}: left {len(running)} match(es) under way: {left}")
        finally:  # leaving early (an error, a cancellation): the matches go too
            for w in [*waits, *running]:
                w.cancel()
            await asyncio.gather(*waits, *running, return_exceptions=True)
    return played


async def _finished(running: dict[asyncio.Task[None], str], abandon: asyncio.Event | None) -> bool:
    """Wait for the matches under way to end (``False``: ``abandon`` was set first)."""
    given_up = asyncio.create_task(abandon.wait()) if abandon is not None else None
    try:
        while running:
            await asyncio.wait(
                [*running, *([given_up] if given_up else [])], return_when=asyncio.FIRST_COMPLETED
            )
            if given_up is not None and given_up.done():
                return not running
        return True
    finally:
        if given_up is not None:
            given_up.cancel()


def run_lobbies(
    target: str | Sequence[str],
    accounts: Sequence[tuple[str, str]],
    make_bot: Callable[[], Bot],
    *,
    max_concurrent: int = 0,
    stop: threading.Event | None = None,
    log: Callable[[str], None] = _stderr,
    matches: int | None = None,
    abandon: threading.Event | None = None,
) -> dict[str, int]:
    """The lobbies of several bot accounts (``(bot_id, token)`` pairs) on one event loop in
    this thread, until ``stop`` is set (or each account played ``matches``): every match a
    task, each account one player connection and one assignment stream, every channel closed
    before the loop ends. Once stopped, the matches under way are played to their end, or
    until ``abandon`` is set (each account logs the matches it left). Returns the matches
    played per bot id; an account whose stream is lost for good (a wrong address:
    :class:`ServerUnreachable`) ends them all with its error."""

    options: dict[str, Any] = {"max_concurrent": max_concurrent, "log": log, "matches": matches}

    async def main() -> dict[str, int]:
        halt, give_up = asyncio.Event(), asyncio.Event()

        async def watch(flag: threading.Event, event: asyncio.Event) -> None:
            while not flag.is_set():
                await asyncio.sleep(STOP_POLL)
            event.set()

        watchers = [
            asyncio.create_task(watch(flag, event))
            for flag, event in ((stop, halt), (abandon, give_up))
            if flag is not None
        ]
        try:
            lobbies = [
                play_lobby(target, bot_id, token, make_bot, **options, stop=halt, abandon=give_up)
                for bot_id, token in accounts
            ]
            counts = await asyncio.gather(*lobbies)
        finally:
            for w in watchers:
                w.cancel()
        return {bot_id: n for (bot_id, _), n in zip(accounts, counts, strict=True)}

    return asyncio.run(main())


def run_lobby(
    target: str | Sequence[str],
    bot_id: str,
    token: str,
    make_bot: Callable[[], Bot],
    *,
    max_concurrent: int = 0,
    stop: threading.Event | None = None,
    log: Callable[[str], None] = _stderr,
    matches: int | None = None,
) -> int:
    """Play every match the lobby assigns ``bot_id``, each with a fresh ``make_bot()``, until
    ``stop`` is set (or ``matches`` were played); returns the number of matches played. One
    event loop in this thread (:func:`run_lobbies` with one account)."""
    played = run_lobbies(
        target,
        [(bot_id, token)],
        make_bot,
        max_concurrent=max_concurrent,
        stop=stop,
        log=log,
        matches=matches,
    )
    return played[bot_id]


__all__ = [
    "STOP_POLL",
    "Assignment",
    "aio_assignments",
    "assignments",
    "play_lobby",
    "run_lobbies",
    "run_lobby",
]
