"""A match's credentials: one per seat and one for its spectators, derived from the match's own
secret key, so that any worker verifies one once it has the match.

A credential is ``tc1.<match_id>.<seat or s>.<mac>`` (:data:`SHAPE`): the MAC is an
HMAC-SHA256 under the match's key of the viewer and its credential's *generation* (0 at
creation, one more per re-issue, kept in the match's lifecycle state), so a re-issued credential
replaces the previous one from the version of the re-issue on, and a retried creation hands out
the same credentials.

Two ways a presented token fails, told apart for the caller without telling whether a match
exists: :func:`parts` refuses a token that is not shaped like a credential at all
(:class:`MalformedCredential`, decided from the text alone); :func:`viewer_of` refuses a
well-shaped one that does not stand for a viewer of the match (:class:`InvalidCredential`: a
signature that does not verify, a seat the match does not have, a re-issued one -- answered
exactly like a token of a match that does not exist); a genuine credential past its lifetime
is :class:`ExpiredCredential`, which only its holder can meet.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

SPECTATOR = -1
"""The viewer number of a match's spectators (and of its owner looking on)."""
TOKEN_PREFIX = "tc1"
MAC_CHARS = 40
"""Hex digits of a credential's MAC."""
MAX_CHARS = 256
"""Longest text read as a credential."""
_HEX_DIGITS = "0123456789abcdef"
SHAPE = "tc1.<match id>.<seat number, or s for spectators>.<40 hex digits>"
"""What a match credential looks like, for messages."""


class MalformedCredential(ValueError):
    """A token that is not shaped like a match credential (:data:`SHAPE`); the message says
    what is wrong with it. Decided from the token alone, before any match is looked at."""


class InvalidCredential(ValueError):
    """A well-shaped credential that does not stand for a viewer of this match (another
    match's, a seat the match does not have, a signature that does not verify, replaced by a
    re-issue). The message is for the worker's log: a caller gets one answer for all of
    them, the answer of a match that does not exist (:class:`ExpiredCredential`, a genuine
    one past its lifetime, is told apart)."""


class ExpiredCredential(InvalidCredential):
    """A credential the match issued (its signature verifies for the viewer's current
    generation) that is past its lifetime: told apart from an invalid one, since only a holder
    of a genuine credential can get this answer."""


def parts(token: str) -> tuple[str, str]:
    """The match id and the viewer part (a seat number or ``s``) of a token shaped like a
    credential; raises :class:`MalformedCredential` saying what is wrong otherwise."""
    if len(token) > MAX_CHARS:
        raise MalformedCredential(f"longer than {MAX_CHARS} characters")
    pieces = token.split(".")
    if pieces[0] != TOKEN_PREFIX:
        raise MalformedCredential(f"it does not start with {TOKEN_PREFIX!r}")
    if len(pieces) != 4:
        raise MalformedCredential(f"{len(pieces)} dot-separated parts instead of 4")
    _, match_id, who, mac = pieces
    if not match_id:
        raise MalformedCredential("no match id")
    if not (who == "s" or (who.isascii() and who.isdigit() and len(who) < 4)):
        raise MalformedCredential("the viewer part is neither a seat number nor 's'")
    if len(mac) != MAC_CHARS or mac.strip(_HEX_DIGITS):  # what is left is not lower-case hex
        raise MalformedCredential(f"the signature is not {MAC_CHARS} lower-case hex digits")
    return match_id, who


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
        raise InvalidCredential("a credential of another match")
    number = who.isascii() and who.isdigit() and len(who) < 4
    viewer = SPECTATOR if who == "s" else int(who) if number else None
    if viewer is None or not (viewer == SPECTATOR or 0 <= viewer < seats):
        raise InvalidCredential("no such viewer in this match")
    # bytes: compare_digest refuses str with non-ASCII characters
    expected = issue(match_id, cred_key, viewer, generation(viewer))
    if not hmac.compare_digest(expected.encode(), token.encode()):
        raise InvalidCredential("the signature does not verify (or the credential was re-issued)")
    return viewer
