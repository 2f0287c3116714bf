"""Engine events as plain dicts, for assertions: ``data(event)`` is the payload's fields."""

from __future__ import annotations

from typing import Any

from truco_engine import Event
from truco_engine.events import payload_to_dict


def data(event: Event) -> dict[str, Any]:
    """The payload of ``event`` as a dict of its fields (tuples as lists, enums as strings)."""
    d = payload_to_dict(event.payload)
    del d["kind"]
    return d
