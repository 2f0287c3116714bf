"""The interactive loops of ``truco play``, ``truco watch`` and
``truco demo``."""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from truco_client._core import Update
from truco_client.client import TrucoClient
from truco_client.table_text import (
    Names,
    Style,
    action_label,
    describe_event,
    render,
)
from truco_kit.actions import Action
from truco_kit.bot import Bot
from truco_kit.observation import Observation

ALIASES = {
    "quiero": "accept",
    "yes": "accept",
    "no quiero": "decline",
    "no": "decline",
    "mazo": "fold",
    "al mazo": "fold",
    "retruco": "truco",
    "vale cuatro": "truco",
    "vale 4": "truco",
}
"""Words a player may type for an action kind (the kind itself always works)."""

CHOICE_HINT = "type a number, a card code (7e, play 7e) or an action (truco, accept, fold); q quits"


def parse_choice(text: str, legal: Sequence[Action]) -> Action | None:
    """The legal action a line of input names, or ``None``. Accepted: the action's number in
    the list (1-based), a card code (``7e``: face up; ``7e down``), the action's text form
    (``play 7e``, ``truco``, ``envido``) or a word for it (``quiero``, ``mazo``)."""
    words = " ".join(text.strip().split())
    if not words:
        return None
    if words.isdigit():
        i = int(words)
        return legal[i - 1] if 1 <= i <= len(legal) else None
    low = ALIASES.get(words.lower(), words.lower())
    if low.startswith("play "):
        low = low[5:]
    for a in legal:
        if low == a.text().lower():
            return a
        if a.kind == "play" and a.card is not None:
            spoken = f"{a.card} down" if a.face_down else a.card
            if low == spoken.lower():
                return a
        if a.kind == "play" and a.slot is not None and low in (f"#{a.slot}", f"#{a.slot + 1}"):
            return a
    return None


def read_line(prompt: str, wake: int | None = None) -> str | None:
    """``input(prompt)`` without its race with Ctrl-C, and ended by ``wake``.

    ``input`` writes the prompt and then blocks in ``read``; a SIGINT handled in between (or by
    another thread: the bots' and gRPC's) is noted by the interpreter but interrupts nothing,
    and the read waits on after the ^C (seen under load as a client that ignored Ctrl-C at its
    prompt). On a terminal this waits with ``select`` on the terminal, on ``wake`` (a
    descriptor that becomes readable when the table moved: the read then drops what was typed
    so far and returns ``None``) and, in the main thread, on the signals' wakeup descriptor (a
    signal at any moment ends the wait and its handler raises ``KeyboardInterrupt`` here).
    Elsewhere (a pipe, not POSIX) it is ``input``, which ``wake`` cannot end: the caller looks
    for news after the line instead."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object without a descriptor
        return input(prompt)
    if os.name != "posix" or not os.isatty(fd):
        return input(prompt)
    main = threading.current_thread() is threading.main_thread()
    if not main and wake is None:
        return input(prompt)
    sig_r, sig_w = os.pipe()
    for end in (sig_r, sig_w):
        os.set_blocking(end, False)
    previous = signal.set_wakeup_fd(sig_w, warn_on_full_buffer=False) if main else None
    try:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        watched = [fd, sig_r] + ([wake] if wake is not None else [])
        while True:
            ready, _, _ = select.select(watched, [], [])
            if sig_r in ready:
                os.read(sig_r, 64)  # the signal's Python handler runs before the next line
            if fd in ready:  # a whole line (or the end of input) first: the caller says what became of it
                data = os.read(fd, 65536)  # a terminal in its line mode gives one line
                if not data:
                    raise EOFError
                return data.decode(sys.stdin.encoding or "utf-8", errors="replace").removesuffix("\n")
            if wake is not None and wake in ready:
                import termios

                termios.tcflush(fd, termios.TCIFLUSH)  # half a line typed against the old table
                sys.stdout.write("\n")
                return None
    finally:
        if main:
            signal.set_wakeup_fd(previous if previous is not None else -1)
        os.close(sig_r)
        os.close(sig_w)


Reader = Callable[[str, int | None], str | None]
"""How the prompt reads a line: ``read(prompt, wake)`` returns the line typed, or ``None``
when ``wake`` (a descriptor) became readable first (:func:`read_line`)."""


class _Feed:
    """A seat's stream read on its own thread, so that the table follows the match while the
    player is at the prompt. Each update (then the end of the stream, or its error) is queued
    and a byte written to a pipe whose read end, :attr:`wake`, the prompt waits on beside the
    keyboard; both under one lock, with :meth:`take` emptying both under it too, so the pipe
    holds a byte exactly while the queue holds something. The thread ends with the stream:
    when the match ends or the client is closed."""

    def __init__(self, client: TrucoClient, match_id: str) -> None:
        self._queue: queue.SimpleQueue[Update | BaseException | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self.wake, self._wake_w = os.pipe()
        for end in (self.wake, self._wake_w):
            os.set_blocking(end, False)
        self._thread = threading.Thread(
            target=self._run, args=(client, match_id), name="terminal-stream", daemon=True
        )
        self._thread.start()

    def _run(self, client: TrucoClient, match_id: str) -> None:
        try:
            for upd in client.stream(match_id, from_version=0):
                self._put(upd)
            self._put(None)
        except BaseException as exc:  # handed to the loop, which raises it there
            self._put(exc)
        finally:
            os.close(self._wake_w)  # the thread alone writes to it

    def _put(self, item: Update | BaseException | None) -> None:
        with self._lock:
            self._queue.put(item)
            with contextlib.suppress(OSError):  # the pipe is full (a wake is due anyway) or closed
                os.write(self._wake_w, b".")

    def take(self, block: bool) -> list[Update | BaseException | None]:
        """What arrived, oldest first (at least one item when ``block``)."""
        items: list[Update | BaseException | None] = [self._queue.get()] if block else []
        with self._lock:
            self.quiet()
            while not self._queue.empty():
                items.append(self._queue.get())
        return items

    def quiet(self) -> None:
        """Empty the wake pipe (a wake left by an update already taken)."""
        with contextlib.suppress(OSError):
            while os.read(self.wake, 4096):
                pass

    def news(self) -> bool:
        """Something arrived that :meth:`take` has not handed out yet."""
        return not self._queue.empty()

    def close(self) -> None:
        os.close(self.wake)


class _Quit:
    """The player left (``q``, end of input, Ctrl-C)."""


class _Moved:
    """The match moved while the player was choosing: draw the table again and ask again."""


QUIT_WORDS = ("q", "quit", "exit")


class _HumanSeat:
    """The loop of :func:`human_loop`: take what the stream brought, narrate it, draw the
    table and ask for a move whenever the seat may act, submit it on the version shown."""

    def __init__(
        self, client: TrucoClient, match_id: str, names: Names, style: Style, read: Reader, out: TextIO
    ) -> None:
        self.client, self.match_id, self.names, self.style = client, match_id, names, style
        self.read, self.out = read, out
        self.acted: set[int] = set()
        self.last: Observation | None = None

    def catch_up(self, feed: _Feed) -> bool:
        """Narrate every update that arrived (waiting for one); ``False`` once the stream ended."""
        for item in feed.take(block=True):
            if item is None:
                return False
            if isinstance(item, BaseException):
                raise item
            for e in item.events:
                line = describe_event(e, self.names, self.style)
                if line:
                    print(line, file=self.out)
            self.last = item.observation
        self.out.flush()
        return True

    def play(self, feed: _Feed) -> Observation | None:
        while self.catch_up(feed):
            obs = self.last
            assert obs is not None
            if obs.is_over:
                print(render(obs, self.names, self.style), file=self.out, flush=True)
                return obs
            if not obs.can_act or obs.version in self.acted or feed.news():
                continue  # (news: draw the newest table, not this one)
            print(render(obs, self.names, self.style), file=self.out, flush=True)
            choice = self.ask(obs, feed)
            if isinstance(choice, _Quit):
                return None
            if isinstance(choice, Action):
                self.submit(obs, choice)
        return self.last

    def ask(self, obs: Observation, feed: _Feed) -> Action | _Quit | _Moved:
        """The numbered legal actions, then a line; the move it names, unless the match moved
        before the line was complete (then nothing is submitted: the new table is drawn)."""
        on_turn = obs.seat in obs.awaited
        print(self.style.bold(" Your move:" if on_turn else " While you wait, you may:"), file=self.out)
        for i, a in enumerate(obs.legal_actions):
            print(f"   {i + 1}) {action_label(a, self.style, obs)}", file=self.out)
        self.out.flush()
        prompt = "> "
        while True:
            try:
                text = self.read(prompt, feed.wake)
            except (EOFError, KeyboardInterrupt):
                print(file=self.out)
                return _Quit()
            if text is not None and text.strip().lower() in QUIT_WORDS:
                return _Quit()
            if feed.news():
                if text and text.strip():
                    print(self.style.red(f"   {text.strip()!r} not sent: the table changed"), file=self.out)
                return _Moved()
            if text is None:  # woken with nothing new (the wake of an update already taken)
                feed.quiet()
                prompt = ""
                continue
            text = text.strip()
            action = parse_choice(text, obs.legal_actions)
            if action is not None:
                return action
            print(f"   {text!r} is not one of the moves above: {CHOICE_HINT}", file=self.out, flush=True)
            prompt = "> "

    def submit(self, obs: Observation, action: Action) -> None:
        from truco_client.errors import IllegalAction, RequestIdReused, StaleVersion

        self.acted.add(obs.version)
        try:
            self.client.submit_action(
                self.match_id,
                action,
                request_id=f"{self.match_id}:{obs.seat}:{obs.version}",
                expected_version=obs.version,
            )
        except StaleVersion:
            print(self.style.red("   not played: the table changed just before it arrived"), file=self.out)
        except (IllegalAction, RequestIdReused) as exc:
            print(self.style.red(f"   refused: {exc.message}"), file=self.out)


def human_loop(
    client: TrucoClient,
    match_id: str,
    names: Names,
    style: Style,
    *,
    read: Reader = read_line,
    out: TextIO = sys.stdout,
) -> Observation | None:
    """Play one seat from the terminal until the match ends (``None``: the user quit).

    The seat's stream is read on its own thread: while the player is at the prompt (in
    paulista, where truco may be called out of turn, that is nearly always), another seat's
    move ends the read, is narrated, and the table is drawn again with the moves legal now; a
    line typed against the old table is dropped. A move is submitted with the version of the
    newest observation received, never an older one."""
    feed = _Feed(client, match_id)
    try:
        return _HumanSeat(client, match_id, names, style, read, out).play(feed)
    finally:
        feed.close()


def spectate(
    client: TrucoClient,
    match_id: str,
    names: Names,
    style: Style,
    *,
    delay: float = 0.0,
    out: TextIO = sys.stdout,
) -> Observation | None:
    """Print a match as a spectator until it ends."""
    last: Observation | None = None
    for upd in client.stream(match_id, from_version=0):
        obs = upd.observation
        last = obs
        shown = False
        for e in upd.events:
            line = describe_event(e, names, style)
            if line:
                print(line, file=out, flush=True)
                shown = True
        if upd.snapshot or obs.is_over or (shown and any(e.kind == "hand_ended" for e in upd.events)):
            print(render(obs, names, style), file=out, flush=True)
        if obs.is_over:
            return obs
        if shown and delay:
            time.sleep(delay)
    return last


def start_bots(
    client: TrucoClient,
    match_id: str,
    seats_tokens: Sequence[tuple[int, str]],
    bot_classes: Sequence[type[Bot]],
    *,
    think_delay: float = 0.0,
    seed: int | None = None,
    stop: threading.Event | None = None,
    err: TextIO = sys.stderr,
) -> list[threading.Thread]:
    """Run bots on the given seats (the classes cycled over them), each on its own daemon
    thread. Once ``stop`` is set (the caller is leaving and closes the connection) a bot whose
    stream breaks ends quietly; before that, a bot that fails says so in one line on ``err``."""
    from truco_client.runner import run_bot

    def play(bot: Bot, seat: int, token: str) -> None:
        try:
            run_bot(bot, None, match_id, token, client=client, think_delay=think_delay, log=lambda _m: None)
        except Exception as exc:
            if stop is None or not stop.is_set():
                print(f"bot on seat {seat} stopped: {exc}", file=err, flush=True)

    threads = []
    for i, (seat, token) in enumerate(seats_tokens):
        cls = bot_classes[i % len(bot_classes)]
        bot = cls(seed=None if seed is None else seed + seat)
        t = threading.Thread(target=play, args=(bot, seat, token), name=f"bot-seat-{seat}", daemon=True)
        t.start()
        threads.append(t)
    return threads
