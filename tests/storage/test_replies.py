"""Redis replies in the adapter's shapes: an ``XREAD`` reply read raw from the connection (as
the stream hub reads it) comes out as redis-py's converted one does."""

from __future__ import annotations

from truco_server.stores.redis.replies import EVENT_FIELD, parse_raw_xread, parse_xread


def test_a_raw_xread_reply_reads_as_redis_py_s_converted_one() -> None:
    raw_resp2 = [
        [b"t:{m1}:log", [[b"3-0", [EVENT_FIELD, b"three"]], [b"4-0", [EVENT_FIELD, b"four", b"x", b"y"]]]],
        [b"t:{m2}:log", [[b"1-0", [EVENT_FIELD, b"one"]]]],
    ]
    converted = [
        (b"t:{m1}:log", [(b"3-0", {EVENT_FIELD: b"three"}), (b"4-0", {EVENT_FIELD: b"four", b"x": b"y"})]),
        (b"t:{m2}:log", [(b"1-0", {EVENT_FIELD: b"one"})]),
    ]
    assert parse_raw_xread(raw_resp2) == converted == parse_xread(converted)
    raw_resp3 = {key: entries for key, entries in raw_resp2}  # a map of streams
    assert parse_raw_xread(raw_resp3) == converted
    assert parse_raw_xread(None) == parse_raw_xread([]) == []  # nothing new (or unblocked)
