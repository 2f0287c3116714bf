"""Authentication, in one place: who is calling, from the credentials a transport found.

Two kinds of credential travel as ``authorization: Bearer <token>`` (gRPC metadata or the
HTTP header; an operator key may also come as ``x-api-key``):

* an **operator API key** (configured on the server): the caller is an :class:`Operator`,
  who owns the matches it creates. With no keys configured the worker runs open: a caller
  that must be an operator is the operator ``public`` (development only; see
  docs/operations.md);
* a **match credential** ``tc1.<match_id>.<seat or s>.<mac>`` handed out by CreateMatch: one
  seat of one match, or its spectators. The MAC is an HMAC-SHA256 under the match's own key
  of the viewer and its credential's *generation*, so any worker verifies it once the match is
  loaded (:func:`verify`), and a retried CreateMatch returns the same credentials.
  ReissueCredential raises a viewer's generation in the match's state (a committed step, so
  every worker sees it with the match's next version): the previous credential no longer
  verifies. A match may also give its credentials a lifetime (``credential_ttl``), checked by
  the service against the time the current generation was issued.

Operator keys come from ``TRUCO_API_KEYS`` and, when set, the file ``TRUCO_API_KEYS_FILE``
(:class:`KeyRing`), which is re-read when it changes, so keys rotate without a restart.

Credentials are never logged (a key's fingerprint may be).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from truco_server import errors as E
from truco_server import metrics
from truco_server.config import ApiKey, ConfigError, Settings, find_api_key, read_api_keys_file
from truco_server.logging import bind_operator

log = structlog.get_logger("truco.auth")

SPECTATOR = -1
"""The viewer number of a match's spectators (and of its owner looking on)."""
TOKEN_PREFIX = "tc1"


@dataclass(frozen=True, slots=True)
class Operator:
    """A caller with an operator API key; ``name`` owns the matches it creates."""

    name: str


PUBLIC_OPERATOR = Operator("public")
"""Every operator caller of a worker that runs without API keys."""


@dataclass(frozen=True, slots=True)
class MatchCredential:
    """A match credential as presented (not verified until the match is loaded)."""

    token: str
    match_id: str
    who: str
    """The seat number as text, or ``s`` for the spectators."""


Caller = Operator | MatchCredential


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a transport found in a call: a match credential and/or an operator key."""

    bearer: str | None = None
    api_key: str | None = None

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str | bytes]] | None) -> Credentials:
        """From gRPC metadata or HTTP headers (lower-case names). A bearer token that is not
        a match credential is taken as an operator key."""
        bearer: str | None = None
        api_key: str | None = None
        for key, value in pairs or ():
            # as text that encodes: an HTTP header's undecodable bytes arrive as lone surrogates
            text = value.decode(errors="replace") if isinstance(value, bytes) else _encodable(value)
            if key == "authorization":
                scheme, _, rest = text.partition(" ")
                if scheme.lower() == "bearer" and rest.strip():
                    bearer = rest.strip()
            elif key == "x-api-key":
                api_key = text.strip()
        # A bearer shaped like a match credential stays one (a malformed one is refused, never
        # taken as an operator key, which an open worker would accept).
        if bearer is not None and not bearer.startswith(TOKEN_PREFIX + "."):
            api_key, bearer = api_key or bearer, None
        return cls(bearer, api_key)


def _encodable(text: str) -> str:
    """``text`` with what UTF-8 cannot encode (lone surrogates) replaced by ``?``."""
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")


MAX_TOKEN_CHARS = 256
"""Longest credential (match credential or API key) read; a longer one is refused unread."""


def parse_token(token: str) -> MatchCredential | None:
    """The parts of a match credential, or ``None`` when ``token`` is not one."""
    if len(token) > MAX_TOKEN_CHARS:
        return None
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != TOKEN_PREFIX:
        return None
    return MatchCredential(token, parts[1], parts[2])


def issue(match_id: str, cred_key: str, viewer: int, generation: int = 0) -> str:
    """The credential of ``viewer`` (a seat, or :data:`SPECTATOR`) of a match, at its
    ``generation`` (0 at creation, one more per re-issue)."""
    label = "spectator" if viewer == SPECTATOR else f"seat:{viewer}"
    if generation:
        label += f"#{generation}"
    mac = hmac.new(bytes.fromhex(cred_key), label.encode(), hashlib.sha256).hexdigest()[:40]
    who = "s" if viewer == SPECTATOR else str(viewer)
    return f"{TOKEN_PREFIX}.{match_id}.{who}.{mac}"


def _first(viewer: int) -> int:
    return 0


def verify(
    cred: MatchCredential,
    match_id: str,
    cred_key: str,
    seats: int,
    generation: Callable[[int], int] = _first,
) -> int:
    """The seat (or :data:`SPECTATOR`) a credential stands for in match ``match_id``, whose
    current credential generations ``generation(viewer)`` gives; raises
    :class:`~truco_server.errors.Unauthenticated` when it does not (a revoked credential is
    answered like any invalid one)."""
    if cred.match_id != match_id:
        raise E.Unauthenticated("this credential does not belong to this match")
    who = cred.who
    number = who.isascii() and who.isdigit() and len(who) < 4
    viewer = SPECTATOR if who == "s" else int(who) if number else None
    if viewer is None or not (viewer == SPECTATOR or 0 <= viewer < seats):
        raise E.Unauthenticated("malformed credential")
    # bytes: compare_digest refuses str with non-ASCII characters
    expected = issue(match_id, cred_key, viewer, generation(viewer))
    if not hmac.compare_digest(expected.encode(), cred.token.encode()):
        raise E.Unauthenticated("invalid credential")
    return viewer


class KeyRing:
    """The operator keys a worker accepts: ``Settings.api_keys`` (``TRUCO_API_KEYS``, fixed)
    plus the keys of ``Settings.api_keys_file`` (``TRUCO_API_KEYS_FILE``), re-read when the
    file changes (its modification time, size or inode: a Kubernetes Secret volume swaps a
    symlink), looked at most every ``api_keys_poll_seconds`` when a key is checked, at the next
    check after :meth:`request_reload`, and at once by :meth:`reload_now` (SIGHUP). A file that
    cannot be read or parsed keeps the last good keys and logs an error; at start it is a
    configuration error. Each load logs the fingerprints of the keys (never the secrets) and
    sets ``truco_api_keys``."""

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.path = settings.api_keys_file
        self.poll_seconds = settings.api_keys_poll_seconds
        self.clock = clock
        self._file_keys: tuple[ApiKey, ...] = ()
        self._stamp: tuple[int, int, int] | None = None
        self._checked = clock()
        self._forced = False
        if self.path is not None:
            try:
                stamp = self._stat()
                self._file_keys = read_api_keys_file(self.path)
            except (OSError, ConfigError) as exc:
                raise ConfigError(f"TRUCO_API_KEYS_FILE: {exc}") from None
            self._stamp = stamp
        self._loaded("start")

    @property
    def configured(self) -> bool:
        """Keys are configured (from the environment or a file, even an empty one)."""
        return bool(self.settings.api_keys) or self.path is not None

    def keys(self) -> tuple[ApiKey, ...]:
        """The keys accepted now (re-reading the file first when it is due and changed)."""
        if self.path is not None and (self._forced or self.clock() - self._checked >= self.poll_seconds):
            self.refresh()
        return self.settings.api_keys + self._file_keys

    def request_reload(self) -> None:
        """Re-read the file at the next key check, changed or not."""
        self._forced = True

    def reload_now(self) -> None:
        """Re-read the file now, changed or not (SIGHUP)."""
        if self.path is not None:
            self._forced = True
            self.refresh()

    def refresh(self) -> bool:
        """Re-read the file if it changed (or a reload was requested); True when new keys were
        loaded."""
        assert self.path is not None
        forced, self._forced = self._forced, False
        self._checked = self.clock()
        try:
            stamp = self._stat()
        except OSError as exc:
            return self._failed(f"cannot read the file: {exc.strerror or exc}")
        if stamp == self._stamp and not forced:
            return False
        try:
            keys = read_api_keys_file(self.path)
        except OSError as exc:
            return self._failed(f"cannot read the file: {exc.strerror or exc}")
        except ConfigError as exc:
            return self._failed(str(exc))
        self._file_keys, self._stamp = keys, stamp
        self._loaded("reload")
        return True

    def _stat(self) -> tuple[int, int, int]:
        assert self.path is not None
        st = os.stat(self.path)
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _failed(self, why: str) -> bool:
        metrics.API_KEY_RELOADS.labels("error").inc()
        log.error("api keys file not loaded; keeping the last good keys", path=self.path, error=why)
        return False

    def _loaded(self, when: str) -> None:
        keys = self.settings.api_keys + self._file_keys
        if when == "reload":
            metrics.API_KEY_RELOADS.labels("loaded").inc()
        metrics.API_KEYS.set(len(keys))
        if self.configured:
            log.info(
                "api keys loaded",
                when=when,
                keys=[f"{k.name}:{k.fingerprint}" for k in keys],
                path=self.path,
            )


class Authenticator:
    """Resolves credentials to callers against the configured operator keys."""

    def __init__(self, settings: Settings, keys: KeyRing | None = None) -> None:
        self.settings = settings
        self.keys = keys or KeyRing(settings)

    @property
    def open(self) -> bool:
        """No operator keys are configured: every operator caller is ``public``."""
        return not self.keys.configured

    def operator(self, creds: Credentials) -> Operator:
        """The operator calling (required)."""
        found = self._operator(creds.api_key)
        if found is None:
            raise E.Unauthenticated("an operator API key is required: 'authorization: Bearer <api key>'")
        return found

    def seat(self, creds: Credentials) -> MatchCredential:
        """The match credential calling (required: acting is for seats only)."""
        if creds.bearer is None:
            raise E.Unauthenticated("missing credential: send 'authorization: Bearer <seat token>'")
        cred = parse_token(creds.bearer)
        if cred is None:
            raise E.Unauthenticated("malformed credential")
        return cred

    def viewer(self, creds: Credentials) -> Caller:
        """A match credential or, without one, the operator's key (the owner looks on)."""
        if creds.bearer is not None:
            return self.seat(creds)
        found = self._operator(creds.api_key)  # open: ``public``, with or without a key
        if found is None:
            raise E.Unauthenticated(
                "send a match credential or an operator API key: 'authorization: Bearer <token>'"
            )
        return found

    def _operator(self, api_key: str | None) -> Operator | None:
        if self.open:
            return PUBLIC_OPERATOR
        if api_key is None:
            return None
        if len(api_key) > MAX_TOKEN_CHARS:
            raise E.Unauthenticated("unknown API key")
        key = find_api_key(self.keys.keys(), api_key)
        if key is None:
            raise E.Unauthenticated("unknown API key")
        bind_operator(key.name)
        return Operator(key.name)
