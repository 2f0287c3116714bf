"""Provably fair deals: every hand's deck order derives from a seed committed to in advance,
mixed with entropy the clients give.

* The seed is 32 bytes from :func:`secrets.token_bytes` (a CSPRNG) unless the match's
  creator supplies one (tests, duplicate tournaments; marked as such). Its SHA-256
  (:func:`seed_hash`) is published when the match is created, before any client seed is known.
* Client seeds (the creator's at creation, each seat's when it joins) are mixed in before
  the first deal: :func:`mix` gives the seed every deal is shuffled from.
* Hand ``k`` (1-based, counted over the whole match) is shuffled by Fisher–Yates driven by
  a SHA-256 counter stream: ``sha256(mixed || "deck" || k || counter)``; each index is drawn
  by rejection sampling, so there is no modulo bias.
* Its salt is ``sha256(mixed || "salt" || k)`` in hex; the engine publishes
  ``sha256(salt + ":" + " ".join(deck))`` when the hand starts.
* When the match is over the seed is revealed (``match_revealed`` event): anyone can check its
  hash, recompute the mixed seed, every deck order and salt, and compare them with the
  commitments published during play.

``docs/fairness.md`` spells this out for verifiers.
"""

from __future__ import annotations

import hashlib
import secrets
import struct
from collections.abc import Sequence

SEED_BYTES = 32


MIX_TAG = b"truco-mix/1"
MAX_CLIENT_SEED = 64
"""Longest client seed accepted, in bytes."""


def new_seed() -> bytes:
    """A fresh secret match seed from the operating system's CSPRNG."""
    return secrets.token_bytes(SEED_BYTES)


def seed_hash(seed: bytes) -> str:
    """The commitment to a seed published at creation: lowercase hex ``sha256(seed)``."""
    return hashlib.sha256(seed).hexdigest()


def mix(seed: bytes, client_seeds: Sequence[bytes]) -> bytes:
    """The seed the deals are shuffled from:
    ``sha256("truco-mix/1" || seed || sha256(c1) || sha256(c2) || ...)`` over the client
    seeds in the order they were given (hashing each first keeps their boundaries)."""
    h = hashlib.sha256(MIX_TAG + seed)
    for c in client_seeds:
        h.update(hashlib.sha256(c).digest())
    return h.digest()


_WORDS = struct.Struct(">8I")


class _Stream:
    """The 32-bit words of ``sha256(seed || "deck" || hand || counter)`` for counter 0, 1, ...
    (each digest read as eight big-endian words, in order)."""

    def __init__(self, seed: bytes, hand: int) -> None:
        self._prefix = seed + b"deck" + hand.to_bytes(8, "big")
        self._counter = 0
        self._words: list[int] = []
        """The current digest's words not yet taken, last first."""

    def u32(self) -> int:
        if not self._words:
            digest = hashlib.sha256(self._prefix + self._counter.to_bytes(8, "big")).digest()
            self._counter += 1
            self._words = list(_WORDS.unpack(digest))
            self._words.reverse()
        return self._words.pop()

    def below(self, n: int) -> int:
        limit = (1 << 32) - ((1 << 32) % n)
        while True:
            x = self.u32()
            if x < limit:
                return x % n


def deck_for_hand(seed: bytes, hand: int, cards: Sequence[str]) -> list[str]:
    """The deck order of hand ``hand`` (1-based) for a match seed."""
    deck = list(cards)
    stream = _Stream(seed, hand)
    for i in range(len(deck) - 1, 0, -1):
        j = stream.below(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def salt_for_hand(seed: bytes, hand: int) -> str:
    """The commitment salt of hand ``hand``."""
    return hashlib.sha256(seed + b"salt" + hand.to_bytes(8, "big")).hexdigest()
