"""A settable clock for code that takes ``clock: Callable[[], float]``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FakeClock:
    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
