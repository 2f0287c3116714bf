"""A league's public id: what its public view and page are read with, with no credential.

The public id is 22 URL-safe characters: the first 128 bits of HMAC-SHA256, keyed with the
league's own secret (``LeagueDoc.deal_key``, drawn from the CSPRNG at creation, never sent
anywhere), of a fixed label. It says nothing about the league id or the operator, and it is
derived rather than drawn so that every worker computes the same one for a league: two reads
racing to give an older league its id agree, and nothing is left half-written.

An index document (kind :data:`PUBLIC`, keyed by the public id, holding the league id) finds
the league. It is written before the league document at creation; a lookup then checks the
league's own ``public_id``, so an index entry whose league was never stored (a creation that
died, or a retried one, which drew another secret) answers NOT_FOUND like any unknown id.

A league stored before public ids has none (``public_id`` empty): its operator's next
``GetLeague`` gives it one (:func:`ensure_public_id`: the index, then the league's head, one
compare-and-set); every other read leaves it as it is.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

from truco_server.ports.documents import Documents
from truco_server.services.leagues.documents import (
    CAS_ATTEMPTS,
    LeagueDoc,
    StoredLeague,
    load_league,
    save_league,
)
from truco_server.services.leagues.errors import LeagueNotFound

PUBLIC = "league-public"
"""Document kind of the index from a public id to its league id."""
PUBLIC_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")
"""The form of a public id (anything else is not looked up)."""
_LABEL = b"truco league public id v1"


def public_id_of(doc: LeagueDoc) -> str:
    """The league's public id, from its secret (see the module docstring)."""
    mac = hmac.new(bytes.fromhex(doc.deal_key), _LABEL, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


async def index_public_id(documents: Documents, doc: LeagueDoc) -> None:
    """Give ``doc`` its public id and write the index entry that finds it (before the league
    document itself is written)."""
    doc.public_id = public_id_of(doc)
    # version 0: create it; an entry already there is this league's (the id is derived)
    await documents.put(PUBLIC, doc.public_id, 0, doc.league_id.encode())


async def ensure_public_id(documents: Documents, stored: StoredLeague) -> LeagueDoc:
    """The league, with a public id: one is given to a league stored before public ids."""
    for _ in range(CAS_ATTEMPTS):
        if stored.doc.public_id:
            return stored.doc
        await index_public_id(documents, stored.doc)
        if await save_league(documents, stored):
            return stored.doc
        again = await load_league(documents, stored.doc.league_id)
        if again is None:
            raise LeagueNotFound(f"no league {stored.doc.league_id[:64]!r}")
        stored = again
    return stored.doc  # pragma: no cover - 20 lost races: shown without an id this time


async def find_public(documents: Documents, public_id: str) -> StoredLeague:
    """The league whose public id this is; NOT_FOUND otherwise (the same answer for a
    malformed id, an unknown one and an index entry its league does not confirm)."""
    missing = LeagueNotFound(f"no league with public id {public_id[:32]!r}")
    if not PUBLIC_ID.match(public_id):
        raise missing
    got = await documents.get(PUBLIC, public_id)
    if got is None:
        raise missing
    stored = await load_league(documents, got[1].decode())
    if stored is None or not hmac.compare_digest(stored.doc.public_id, public_id):
        raise missing
    return stored
