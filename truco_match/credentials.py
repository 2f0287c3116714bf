"""A match's credentials: one per seat and one for its spectators, derived from the match's own
secret key, so that any worker verifies one once it has the match.

A credential is ``tc1.<match_id>.<seat or s>.<mac>``: the MAC is an HMAC-SHA256 under the
match's key of the viewer and its credential's *generation* (0 at creation, one more per
re-issue, kept in the match's lifecycle state), so a re-issued credential replaces the previous
one from the version of the re-issue on, and a retried creation hands out the same credentials.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

SPECTATOR = -1
"""The viewer number of a match's spectators (and of its owner looking on)."""
TOKEN_PREFIX = "tc1"


class InvalidCredential(ValueError):
    """A credential that does not stand for a viewer of this match (another match's, malformed,
    forged, or replaced by a re-issue); the message says which, for the caller."""


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


def viewer_of(
    token: str,
    who: str,
    token_match_id: str,
    match_id: str,
    cred_key: str,
    seats: int,
    generation: Callable[[int], int] = _first,
) -> int:
    """The seat (or :data:`SPECTATOR`) that ``token`` (whose parts name match ``token_match_id``
    and viewer ``who``: a seat number or ``s``) stands for in match ``match_id``, whose current
    credential generations ``generation(viewer)`` gives; raises :class:`InvalidCredential` when
    it stands for none (a revoked credential is refused like any invalid one)."""
    if token_match_id != match_id:
        raise InvalidCredential("this credential does not belong to this match")
    number = who.isascii() and who.isdigit() and len(who) < 4
    viewer = SPECTATOR if who == "s" else int(who) if number else None
    if viewer is None or not (viewer == SPECTATOR or 0 <= viewer < seats):
        raise InvalidCredential("malformed credential")
    # bytes: compare_digest refuses str with non-ASCII characters
    expected = issue(match_id, cred_key, viewer, generation(viewer))
    if not hmac.compare_digest(expected.encode(), token.encode()):
        raise InvalidCredential("invalid credential")
    return viewer
