"""Authentication, in one place: who is calling, from the credentials a transport found.

Two kinds of credential travel as ``authorization: Bearer <token>`` (gRPC metadata or the
HTTP header; an operator key may also come as ``x-api-key``):

* an **operator API key** (configured on the server): the caller is an :class:`Operator`,
  who owns the matches it creates. With no keys configured the worker runs open: a caller
  that must be an operator is the operator ``public`` (development only; see
  docs/operations.md);
* a **match credential** ``tc1.<match_id>.<seat or s>.<mac>`` handed out by CreateMatch: one
  seat of one match, or its spectators. The MAC is an HMAC-SHA256 under the match's own key,
  so any worker verifies it once the match is loaded (:func:`verify`), and a retried
  CreateMatch returns the same credentials.

Credentials are never logged.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from truco_server import errors as E
from truco_server.config import Settings
from truco_server.logging import bind_operator

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


def issue(match_id: str, cred_key: str, viewer: int) -> str:
    """The credential of ``viewer`` (a seat, or :data:`SPECTATOR`) of a match."""
    label = "spectator" if viewer == SPECTATOR else f"seat:{viewer}"
    mac = hmac.new(bytes.fromhex(cred_key), label.encode(), hashlib.sha256).hexdigest()[:40]
    who = "s" if viewer == SPECTATOR else str(viewer)
    return f"{TOKEN_PREFIX}.{match_id}.{who}.{mac}"


def verify(cred: MatchCredential, match_id: str, cred_key: str, seats: int) -> int:
    """The seat (or :data:`SPECTATOR`) a credential stands for in match ``match_id``;
    raises :class:`~truco_server.errors.Unauthenticated` when it does not."""
    if cred.match_id != match_id:
        raise E.Unauthenticated("this credential does not belong to this match")
    who = cred.who
    number = who.isascii() and who.isdigit() and len(who) < 4
    viewer = SPECTATOR if who == "s" else int(who) if number else None
    if viewer is None or not (viewer == SPECTATOR or 0 <= viewer < seats):
        raise E.Unauthenticated("malformed credential")
    # bytes: compare_digest refuses str with non-ASCII characters
    if not hmac.compare_digest(issue(match_id, cred_key, viewer).encode(), cred.token.encode()):
        raise E.Unauthenticated("invalid credential")
    return viewer


class Authenticator:
    """Resolves credentials to callers against the configured operator keys."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def open(self) -> bool:
        """No operator keys are configured: every operator caller is ``public``."""
        return not self.settings.api_keys

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
        key = self.settings.api_key_for(api_key)
        if key is None:
            raise E.Unauthenticated("unknown API key")
        bind_operator(key.name)
        return Operator(key.name)
