"""The stream hub's reads (the poll of every followed stream, the blocking read of the remote
ones): each kept packed and changed a stream at a time."""

from __future__ import annotations

from hiredis import pack_command

from truco_server.stores.redis.feed import _XRead


def test_a_read_kept_up_to_date_is_the_one_hiredis_packs() -> None:
    """The hub keeps its XREADs packed and changes one stream's piece at a time (a stream
    followed or left, a cursor moved): always the bytes hiredis packs for the same command,
    streams in the order the hub holds them, with or without a BLOCK."""
    poll = _XRead(500)
    held: dict[str, int] = {}

    def expected() -> bytes:
        order = poll._mids
        assert sorted(order) == sorted(held)
        keys = [f"t:{{{m}}}:log".encode() for m in order]
        return pack_command(("XREAD", "COUNT", 500, "STREAMS", *keys, *[f"{held[m]}-0" for m in order]))

    def blocking(block: int) -> bytes:
        order = poll._mids
        keys = [f"t:{{{m}}}:log".encode() for m in order]
        ids = [f"{held[m]}-0" for m in order]
        return pack_command(("XREAD", "COUNT", 500, "BLOCK", block, "STREAMS", *keys, *ids))

    for i, mid in enumerate(["m1", "m2", "m3", "m4"]):
        poll.add(mid, f"t:{{{mid}}}:log".encode(), i * 10)
        held[mid] = i * 10
    assert poll.packed() == expected()
    assert poll.packed(1000) == blocking(1000) and poll.packed(7) == blocking(7)
    poll.add("m2", b"t:{m2}:log", 99)  # already held: nothing changes
    assert poll.packed() == expected() and len(poll) == 4 and "m2" in poll
    poll.move("m2", 12345)
    held["m2"] = 12345
    assert poll.packed() == expected()
    poll.remove("m1")  # the last stream takes its place
    del held["m1"]
    assert poll.packed() == expected() and poll.packed(50) == blocking(50) and "m1" not in poll
    poll.remove("m3")
    del held["m3"]
    poll.move("m1", 7)  # no longer followed: nothing changes
    poll.remove("m1")
    assert poll.packed() == expected()
    poll.remove("m4")
    poll.remove("m2")
    held.clear()
    assert poll.packed() == pack_command(("XREAD", "COUNT", 500, "STREAMS"))
