"""Authentication, in one place: who is calling, from the credentials a transport found.

Two kinds of credential travel as ``authorization: Bearer <token>`` (gRPC metadata or the
HTTP header; an operator key may also come as ``x-api-key``):

* an **operator API key** (configured on the server): the caller is an :class:`Operator`,
  who owns the matches it creates. With no keys configured the worker runs open: a caller
  that must be an operator is the operator ``public`` (development only; see
  docs/operations.md), and a match is read and played with its match credentials only;
* a **ticket credential** ``tk1...`` handed out by CreateTicket: one matchmaking ticket,
  verified by the matchmaking service against its pool's key;
* a **match credential** ``tc1.<match_id>.<seat or s>.<mac>`` handed out by CreateMatch: one
  seat of one match, or its spectators (:mod:`truco_match.credentials`): its shape is checked
  here (:func:`truco_match.credentials.parts`), it is verified by the service once the match is
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

from truco_match.credentials import SHAPE, MalformedCredential, parts
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
    looks_like_ticket_credential,
    parse_ticket_token,
)
from truco_server.core.config import ApiKey, ConfigError, Settings, find_api_key, read_api_keys_file
from truco_server.core.logging import bind_operator
from truco_server.services.leagues.bots import BOT_TOKEN_PREFIX

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
    """Resolves credentials to callers against the configured operator keys: the one place
    that decides who may call what, before any match is loaded. A call that reads or plays a
    match (:meth:`viewer`, :meth:`seat`) needs a credential that may grant it: a match
    credential shaped like one and naming that match (verified by the service once the match is
    loaded), or -- to read, on a worker with API keys -- the owner's key. On an open worker
    (no API keys) only operator calls are open; reading and playing still take a match
    credential.

    What is wrong is said, typed (``ErrorInfo.reason``): nothing sent
    (``MISSING_CREDENTIAL``, naming where a credential goes), something that is no credential
    (``MALFORMED_CREDENTIAL``, saying what one looks like), a credential of another kind than
    the call takes (``WRONG_CREDENTIAL_KIND``), one that is not valid for the call
    (``INVALID_CREDENTIAL``: an unknown key, another match's). Each is decided here from the
    call alone, never from whether a match exists; later, once the match is loaded, a
    well-formed match credential that does not verify gets the answer of one whose match does
    not exist (:class:`~truco_server.core.errors.CredentialNotValid`), and a genuine one past
    its lifetime ``EXPIRED_CREDENTIAL``."""

    def __init__(self, settings: Settings, keys: KeyRing | None = None) -> None:
        self.settings = settings
        self.keys = keys or KeyRing(settings)

    @property
    def open(self) -> bool:
        """No operator keys are configured: every operator caller is ``public``."""
        return not self.keys.configured

    def operator(self, creds: Credentials) -> Operator:
        """The operator calling (required; on an open worker, ``public``)."""
        if self.open:
            return PUBLIC_OPERATOR
        if creds.api_key is not None:
            return self._known(creds, creds.api_key, "an operator API key", "api key")
        if creds.bearer is not None:
            raise E.WrongCredentialKind(
                f"wrong kind of credential: {_kind(creds.bearer)}, where this call takes an operator "
                "API key, sent as " + creds.where("api key")
            )
        self._unreadable(creds)
        raise E.MissingCredential(
            "missing credential: this call takes an operator API key, sent as " + creds.where("api key")
        )

    def ticket_holder(self, creds: Credentials) -> Operator | TicketCredential:
        """A ticket credential (verified by the matchmaking service against its pool) or,
        without one, the operator's key."""
        if creds.bearer is not None:
            found = parse_ticket_token(creds.bearer)
            if found is not None:
                return found
            if not looks_like_ticket_credential(creds.bearer):
                raise E.WrongCredentialKind(
                    f"wrong kind of credential: {_kind(creds.bearer)}, where this call takes the "
                    "ticket's token (tk1...) or an operator API key"
                )
            raise E.MalformedCredential("malformed credential: not a ticket token (tk1...)")
        return self.operator(creds)

    def seat(self, creds: Credentials, match_id: str = "") -> MatchCredential:
        """The match credential of a call that plays a seat of match ``match_id`` (acting and
        joining are for seats only; the seat is checked once the match is loaded)."""
        cred = self._match_credential(creds, match_id)
        if cred is not None:
            return cred
        if creds.api_key is not None:
            if self._find(creds.api_key) is not None:
                raise E.WrongCredentialKind(
                    "wrong kind of credential: an operator API key, which plays no seat: send the "
                    "seat's token as " + creds.where("token")
                )
            self._not_a_bot(creds, "the seat's token")
            if self.open:
                raise E.MalformedCredential(OPEN_NOT_A_TOKEN)
            raise E.MalformedCredential(
                f"malformed credential: not a seat token ({SHAPE}), nor a known API key"
            )
        self._unreadable(creds)
        raise E.MissingCredential(
            "missing credential: playing takes the seat's token, sent as " + creds.where("token")
        )

    def viewer(self, creds: Credentials, match_id: str = "") -> Caller:
        """Who reads match ``match_id``: a match credential naming it or, on a worker with
        API keys, an operator key (its owner looks on). Every read of a match -- GetMatch,
        GetMatchRecord, StreamObservations over gRPC, NDJSON and SSE, the player connection's
        subscriptions -- asks here."""
        cred = self._match_credential(creds, match_id)
        if cred is not None:
            return cred
        if creds.api_key is not None:
            if self.open:
                self._not_a_bot(creds, "one of its seat or spectator tokens")
                raise E.MalformedCredential(OPEN_NOT_A_TOKEN)
            wanted = "one of its seat or spectator tokens"
            return self._known(creds, creds.api_key, wanted, hint=f"; a match credential is {SHAPE}")
        self._unreadable(creds)
        who = "" if self.open else ", or its owner's API key"
        raise E.MissingCredential(
            f"missing credential: reading a match takes one of its seat or spectator tokens{who}, sent as "
            + creds.where("token")
        )

    def _match_credential(self, creds: Credentials, match_id: str) -> MatchCredential | None:
        """The match credential of the call, shaped like one and naming ``match_id`` (when
        given); ``None`` without one."""
        if creds.bearer is None:
            return None
        if looks_like_ticket_credential(creds.bearer):
            raise E.WrongCredentialKind(
                "wrong kind of credential: a ticket token (tk1...), which only follows its ticket; "
                "a match is read and played with its seat and spectator tokens, sent as "
                + creds.where("token")
            )
        try:
            token_match, who = parts(creds.bearer)
        except MalformedCredential as exc:
            raise E.MalformedCredential(
                f"malformed credential: {exc}; a match credential is {SHAPE}"
            ) from None
        if match_id and token_match != match_id:
            raise E.Unauthenticated(
                f"a credential of match {E.quote(token_match)}, not of match {E.quote(match_id)}"
            )
        return MatchCredential(creds.bearer, token_match, who)

    @staticmethod
    def _not_a_bot(creds: Credentials, wanted: str, carried: str = "token") -> None:
        """A bot account's credential is for the bot lobby (``StreamAssignments``) and
        ``CheckIn`` only."""
        if creds.api_key is not None and creds.api_key.startswith(BOT_TOKEN_PREFIX + "."):
            raise E.WrongCredentialKind(
                "wrong kind of credential: a bot account's credential (tb1....), which only opens "
                f"the bot lobby (StreamAssignments) and CheckIn; this call takes {wanted}, sent as "
                + creds.where(carried)
            )

    @staticmethod
    def _unreadable(creds: Credentials) -> None:
        if creds.unreadable:
            raise E.MalformedCredential(
                "malformed credential: the authorization value must be 'Bearer <token>'"
            )

    def _find(self, api_key: str) -> ApiKey | None:
        if len(api_key) > MAX_TOKEN_CHARS:
            return None
        return find_api_key(self.keys.keys(), api_key)

    def _known(
        self, creds: Credentials, api_key: str, wanted: str, carried: str = "token", hint: str = ""
    ) -> Operator:
        """The operator of ``api_key`` (the call's); otherwise a bot credential is told so
        (the call takes ``wanted``), anything else is an unknown API key."""
        key = self._find(api_key)
        if key is None:
            self._not_a_bot(creds, wanted, carried)
            raise E.Unauthenticated("unknown API key" + hint)
        bind_operator(key.name)
        return Operator(key.name)


def _kind(bearer: str | None) -> str:
    """What a bearer credential is, in words (its prefix says)."""
    if bearer is not None and looks_like_ticket_credential(bearer):
        return "a ticket token"
    return "a match credential"


OPEN_NOT_A_TOKEN = (
    f"malformed credential: not a match credential ({SHAPE}); this worker has no API keys (open "
    "mode), so a match is read and played with its seat and spectator tokens only"
)
"""The answer, on an open worker, to a call on a match with anything but a match credential."""
