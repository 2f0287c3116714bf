"""The codec's one error: a message that does not describe a valid value."""

from __future__ import annotations


class DecodeError(ValueError):
    """A message that does not describe a valid value; ``field`` is the path of the culprit
    (``action.call_envido.kind``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
