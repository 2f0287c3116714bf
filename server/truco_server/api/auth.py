"""Authentication, in one place: who is calling, from the credentials a transport found.

Two kinds of credential travel as ``authorization: Bearer <token>`` (gRPC metadata or the
HTTP header; an operator key may also come as ``x-api-key``):

* an **operator API key** (configured on the server): the caller is an :class:`Operator`,
  who owns the matches it creates. With no keys configured the worker runs open: a caller
  that must be an operator is the operator ``public`` (development only; see
  docs/operations.md);
* a **ticket credential** ``tk1...`` handed out by CreateTicket: one matchmaking ticket,
  verified by the matchmaking service against its pool's key;
* a **match credential** ``tc1.<match_id>.<seat or s>.<mac>`` handed out by CreateMatch: one
  seat of one match, or its spectators (:mod:`truco_match.credentials`): parsed here
  (:func:`~truco_server.core.caller.parse_token`), verified by the service once the match is
  loaded, since the key is the match's own; a retried CreateMatch returns the same credentials.
  ReissueCredential raises a viewer's generation in the match's state (a committed step, so
  every worker sees it with the match's next version): the previous credential no longer
  verifies. A match may also give its credentials a lifetime (``credential_ttl``), checked by
  the service against the time the current generation was issued.

Operator keys come from ``TRUCO_API_KEYS`` and, when set, the file ``TRUCO_API_KEYS_FILE``
(:class:`KeyRing`), which is re-read when it changes, so keys rotate without a restart.

Credentials are never logged (a key's fingerprint may be).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import structlog

from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core.caller import (
    MAX_TOKEN_CHARS,
    PUBLIC_OPERATOR,
    Caller,
    Credentials,
    MatchCredential,
    Operator,
    TicketCredential,
    parse_ticket_token,
    parse_token,
)
from truco_server.core.config import ApiKey, ConfigError, Settings, find_api_key, read_api_keys_file
from truco_server.core.logging import bind_operator

log = structlog.get_logger("truco.auth")


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

    def ticket_holder(self, creds: Credentials) -> Operator | TicketCredential:
        """A ticket credential (verified by the matchmaking service against its pool) or,
        without one, the operator's key."""
        if creds.bearer is not None:
            found = parse_ticket_token(creds.bearer)
            if found is None:
                raise E.Unauthenticated("malformed credential: a ticket token (tk1...) or an API key")
            return found
        return self.operator(creds)

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
