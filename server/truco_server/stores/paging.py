"""Page tokens of an owner's listing, the same for every adapter: the sort key of the last
row returned, bound to the owner (keyset pagination: pages stay stable under inserts)."""

from __future__ import annotations

import base64
import binascii

from truco_server.ports.errors import InvalidPageToken

__all__ = ["check_page_size", "decode_page_token", "encode_page_token"]


def encode_page_token(owner: str, sort_key: str) -> str:
    """An opaque token: base64url of ``<owner>\\n<sort key>``."""
    raw = f"{owner}\n{sort_key}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(owner: str, token: str) -> str:
    """The sort key inside ``token``; :class:`InvalidPageToken` when it is malformed or was
    handed out for another owner."""
    try:
        padded = token + "=" * (-len(token) % 4)
        raw = base64.urlsafe_b64decode(padded.encode()).decode()
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise InvalidPageToken("malformed page_token") from exc
    token_owner, sep, sort_key = raw.partition("\n")
    if not sep or token_owner != owner or not sort_key:
        raise InvalidPageToken("page_token does not belong to this listing")
    return sort_key


def check_page_size(page_size: int) -> None:
    if page_size < 1:
        raise ValueError("page_size must be at least 1")
