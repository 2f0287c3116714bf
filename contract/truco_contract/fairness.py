"""Provably fair deals: every hand's deck order derives from one secret match seed.

* The seed is 32 bytes from :func:`secrets.token_bytes` (a CSPRNG) unless the match's
  creator supplies one (tests, duplicate tournaments).
* Hand ``k`` (1-based, counted over the whole match) is shuffled by Fisher–Yates driven by
  a SHA-256 counter stream: ``sha256(seed || "deck" || k || counter)``; each index is drawn
  by rejection sampling, so there is no modulo bias.
* Its salt is ``sha256(seed || "salt" || k)`` in hex; the engine publishes
  ``sha256(salt + ":" + " ".join(deck))`` when the hand starts.
* When the match ends the seed is revealed (``match_revealed`` event): anyone can recompute
  every deck order and check it against the commitments published during play.

``docs/fairness.md`` spells this out for verifiers.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence

SEED_BYTES = 32


def new_seed() -> bytes:
    """A fresh secret match seed from the operating system's CSPRNG."""
    return secrets.token_bytes(SEED_BYTES)


class _Stream:
    def __init__(self, seed: bytes, hand: int) -> None:
        self._prefix = seed + b"deck" + hand.to_bytes(8, "big")
        self._counter = 0
        self._buf = b""

    def u32(self) -> int:
        if len(self._buf) < 4:
            self._buf += hashlib.sha256(self._prefix + self._counter.to_bytes(8, "big")).digest()
            self._counter += 1
        value, self._buf = int.from_bytes(self._buf[:4], "big"), self._buf[4:]
        return value

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
