"""Who is calling: the caller types every layer shares, and how a transport's credentials are
read from its metadata or headers (``authorization: Bearer <token>``, ``x-api-key``).

* an **operator** (an API key configured on the server) owns the matches it creates;
* a **match credential** ``tc1.<match_id>.<seat or s>.<mac>`` stands for one seat of one match,
  or its spectators; it is verified against the match's own key once the match is loaded
  (:func:`truco_match.credentials.viewer_of`);
* a **ticket credential** ``tk1.<owner>.<pool_id>.<ticket_id>.<mac>`` stands for one
  matchmaking ticket; it is verified against its pool's key once the pool is loaded
  (:func:`truco_match.matchmaking.ticket_token`).

Credentials are never logged (a key's fingerprint may be).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from truco_engine._fast import fast_init
from truco_match.credentials import MAX_CHARS, SPECTATOR, TOKEN_PREFIX, MalformedCredential, parts
from truco_match.matchmaking import TICKET_TOKEN_PREFIX, token_parts

__all__ = [
    "CALL_CARRIER",
    "MAX_TOKEN_CHARS",
    "PUBLIC_OPERATOR",
    "SPECTATOR",
    "Caller",
    "Credentials",
    "MatchCredential",
    "Operator",
    "TicketCredential",
    "looks_like_match_credential",
    "looks_like_ticket_credential",
    "parse_ticket_token",
    "parse_token",
]


@dataclass(frozen=True, slots=True)
class Operator:
    """A caller with an operator API key; ``name`` owns the matches it creates."""

    name: str


PUBLIC_OPERATOR = Operator("public")
"""Every operator caller of a worker that runs without API keys."""


@fast_init
@dataclass(frozen=True, slots=True)
class MatchCredential:
    """A match credential as presented (not verified until the match is loaded)."""

    token: str
    match_id: str
    who: str
    """The seat number as text, or ``s`` for the spectators."""


@dataclass(frozen=True, slots=True)
class TicketCredential:
    """A ticket credential as presented (not verified until its pool is loaded)."""

    token: str
    owner: str
    pool_id: str
    ticket_id: str


Caller = Operator | MatchCredential


CALL_CARRIER = "'authorization: Bearer <{}>' (gRPC metadata or HTTP header)"
"""Where a gRPC or REST call carries its credential (``{}``: what the credential is), for
messages; the same words on both, so both answer alike."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a transport found in a call: a match credential and/or an operator key."""

    bearer: str | None = None
    """A bearer token shaped like a match credential (``tc1.`` ...), not checked further yet."""
    api_key: str | None = None
    """An ``x-api-key``, or a bearer token not shaped like a match credential."""
    carrier: str = CALL_CARRIER
    """Where this transport carries a credential, said when one is missing (``{}``: what)."""
    unreadable: bool = False
    """An ``authorization`` value was sent that is not ``Bearer <token>``."""

    @classmethod
    def from_pairs(
        cls, pairs: Iterable[tuple[str, str | bytes]] | None, carrier: str = CALL_CARRIER
    ) -> Credentials:
        """From gRPC metadata or HTTP headers (lower-case names). A bearer token that is not
        a match credential is taken as an operator key."""
        bearer: str | None = None
        api_key: str | None = None
        unreadable = False
        for key, value in pairs or ():
            # as text that encodes: an HTTP header's undecodable bytes arrive as lone surrogates
            text = value.decode(errors="replace") if isinstance(value, bytes) else _encodable(value)
            if key == "authorization":
                scheme, _, rest = text.strip().partition(" ")
                if scheme.lower() == "bearer":
                    bearer = rest.strip() or None
                elif scheme:
                    unreadable = True
            elif key == "x-api-key":
                api_key = text.strip()
        # A bearer shaped like a match or ticket credential stays one (a malformed one is
        # refused, never taken as an operator key, which an open worker would accept).
        if bearer is not None and not (
            looks_like_match_credential(bearer) or looks_like_ticket_credential(bearer)
        ):
            api_key, bearer = api_key or bearer, None
        return cls(bearer, api_key, carrier, unreadable and bearer is None and api_key is None)

    def where(self, what: str) -> str:
        """Where a credential (``what``: "token", "api key"...) goes on this transport."""
        return self.carrier.replace("{}", what)


def looks_like_match_credential(text: str) -> bool:
    """``text`` is meant as a match credential (it has the prefix); whether it is well formed
    is :func:`truco_match.credentials.parts`'s to say."""
    return text.startswith(TOKEN_PREFIX + ".")


def looks_like_ticket_credential(text: str) -> bool:
    """``text`` is meant as a matchmaking ticket's credential (it has the prefix)."""
    return text.startswith(TICKET_TOKEN_PREFIX + ".")


def _encodable(text: str) -> str:
    """``text`` with what UTF-8 cannot encode (lone surrogates) replaced by ``?``."""
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")


MAX_TOKEN_CHARS = MAX_CHARS
"""Longest credential (match credential or API key) read; a longer one is refused unread."""


def parse_token(token: str) -> MatchCredential | None:
    """The parts of a match credential, or ``None`` when ``token`` is not shaped like one."""
    try:
        match_id, who = parts(token)
    except MalformedCredential:
        return None
    return MatchCredential(token, match_id, who)


def parse_ticket_token(token: str) -> TicketCredential | None:
    """The parts of a ticket credential, or ``None`` when ``token`` is not one."""
    found = token_parts(token) if len(token) <= MAX_TOKEN_CHARS else None
    return None if found is None else TicketCredential(token, *found)
