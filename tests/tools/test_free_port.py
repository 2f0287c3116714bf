"""``free_port`` picks ports that no outgoing connection can take before the caller binds them.

A port the kernel hands out for ``bind(("127.0.0.1", 0))`` comes from the range it also uses
for the local ports of outgoing connections, so a worker that connects to Redis before it
binds the port a test picked for it could find that port taken by its own connection
("address already in use"). ``free_port`` picks below that range.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from truco_tools import redis_proc
from truco_tools.redis_proc import free_port


def test_free_ports_are_below_the_outgoing_connections_range_and_bindable() -> None:
    low = redis_proc._ephemeral_low()
    ports = {free_port() for _ in range(50)}
    assert all(redis_proc._LOWEST <= p < low for p in ports), (sorted(ports), low)
    assert len(ports) > 40  # chosen at random, not one port again and again
    for port in list(ports)[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_an_outgoing_connection_never_takes_a_free_port() -> None:
    """The connections' local ports all fall in the kernel's range; none is a picked port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        picked = {free_port() for _ in range(20)}
        clients = [socket.create_connection(server.getsockname()) for _ in range(50)]
        try:
            local = {c.getsockname()[1] for c in clients}
        finally:
            for c in clients:
                c.close()
    assert not local & picked
    assert all(p >= redis_proc._ephemeral_low() for p in local)


def test_without_room_below_the_range_it_asks_the_kernel(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    kernels = redis_proc._ephemeral_low()
    squeezed = tmp_path / "ip_local_port_range"
    squeezed.write_text(f"{redis_proc._LOWEST + 10}\t60999\n")
    monkeypatch.setattr(redis_proc, "_EPHEMERAL", squeezed)
    port = free_port()
    assert port >= kernels  # the kernel's pick: from its own range
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
    unreadable = tmp_path / "missing"
    monkeypatch.setattr(redis_proc, "_EPHEMERAL", unreadable)
    assert redis_proc._ephemeral_low() == 32768
