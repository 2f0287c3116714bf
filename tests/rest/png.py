"""A minimal PNG reader (8-bit greyscale/RGB/RGBA, non-interlaced) for screenshot checks."""

from __future__ import annotations

import struct
import zlib
from collections import Counter

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """(width, height, channels, rows of raw pixel bytes)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in _CHANNELS or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, color {color}, interlace {interlace})")
            channels = _CHANNELS[color]
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        ftype, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 0xFF
            elif ftype == 4:
                line[i] = (line[i] + _paeth(a, b, c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def color_histogram(data: bytes, step: int = 2) -> Counter[bytes]:
    """Counts of pixel colors, sampling every `step`-th pixel of every `step`-th row."""
    width, _, channels, rows = read_png(data)
    counts: Counter[bytes] = Counter()
    for row in rows[::step]:
        for x in range(0, width, step):
            counts[row[x * channels : x * channels + min(channels, 3)]] += 1
    return counts
