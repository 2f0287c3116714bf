"""Compact encoding of the stored events: canonical JSON, raw-deflated with a preset
dictionary.

An event is 60-170 bytes of JSON, too short for plain zlib to gain anything, but most of it
(field names, kinds, call names) repeats from event to event. Deflate with a preset
dictionary made of typical events brings the mean to about 20 bytes, so the event log of
a live match costs a fifth of the Redis memory for the same number of events (see
docs/storage.md, "Memory per match").

Format of a stored blob:

* ``{...}`` -- plain JSON (matches written before this encoding, or an event the
  dictionary does not help, such as ``match_revealed``);
* ``\\x01`` + raw deflate (``wbits=-12``) with :data:`EVENT_DICT_V1` as the preset dictionary.

The dictionary is part of the storage format: never change it; add a ``V2`` with a new tag
byte instead, and keep decoding ``V1``.
"""

from __future__ import annotations

import zlib

__all__ = ["EVENT_DICT_V1", "pack", "unpack"]

TAG_V1 = b"\x01"
_WBITS = -12  # 4 KiB window: the dictionary fits; a small window keeps compressobj cheap
_MEM_LEVEL = 4

EVENT_DICT_V1 = (
    b'{"kind":"match_cancelled","reason":""}'
    b'{"kind":"head_to_head_started","index":1,"mano":0,"pair":[0,3]}'
    b'{"cards":["7e","1e","3o"],"kind":"cards_shown","reason":"hand_of_eleven","seat":2,'
    b'"hidden":["cards"],"private_to":[0,2]}'
    b'{"kind":"eleven_decided","play":true,"seat":0,"side":0}'
    b'{"card":"4C","kind":"card_discarded","seat":0,"hidden":["card"],"private_to":[0]}'
    b'{"call":"flor","cancels":"envido","family":"flor","kind":"called","responder":null,'
    b'"seat":0,"value_if_accepted":3,"value_if_declined":3}'
    b'{"call":"contraflor_al_resto","family":"flor","kind":"called","responder":1,"seat":0,'
    b'"value_if_accepted":6,"value_if_declined":4}'
    b'{"answer":"accept","family":"flor","kind":"answered","seat":1,"value":4}'
    b'{"kind":"match_created","players":2,"preset":"paulista","seats":[{"kind":"human",'
    b'"name":"seat 0"},{"kind":"bot","name":"seat 1"}]}'
    b'{"game":1,"games":[0,1],"kind":"game_ended","side":1}'
    b'{"games":[1,0],"kind":"match_ended","side":0}'
    b'{"cards":["6c","6e","3o"],"kind":"cards_revealed","reason":"envido","seat":1}'
    b'{"family":"flor","kind":"points_declared","points":33,"seat":2}'
    b'{"family":"envido","kind":"points_declared","points":null,"seat":1}'
    b'{"family":"envido","kind":"bet_won","points":2,"seat":1,"side":1}'
    b'{"family":"envido","kind":"bet_won","points":1,"seat":null,"side":0}'
    b'{"call":"real_envido","family":"envido","kind":"called","responder":0,"seat":1,'
    b'"value_if_accepted":5,"value_if_declined":2}'
    b'{"call":"falta_envido","family":"envido","kind":"called","responder":1,"seat":0,'
    b'"value_if_accepted":15,"value_if_declined":5}'
    b'{"call":"envido","family":"envido","kind":"called","responder":0,"seat":1,'
    b'"value_if_accepted":2,"value_if_declined":1}'
    b'{"kind":"folded","seat":0,"side":0}'
    b'{"answer":"decline","family":"envido","kind":"answered","seat":0,"value":1}'
    b'{"kind":"hand_ended","points":3,"reason":"declined","side":0}'
    b'{"kind":"hand_ended","points":1,"reason":"folded","side":1}'
    b'{"card":"2D","face_down":true,"hidden":["card"],"kind":"card_played","private_to":[1],'
    b'"seat":1,"trick":2}'
    b'{"call":"six","family":"truco","kind":"called","responder":1,"seat":0,'
    b'"value_if_accepted":6,"value_if_declined":3}'
    b'{"call":"retruco","family":"truco","kind":"called","responder":1,"seat":0,'
    b'"value_if_accepted":3,"value_if_declined":2}'
    b'{"answer":"accept","family":"truco","kind":"answered","seat":0,"value":3}'
    b'{"answer":"decline","family":"truco","kind":"answered","seat":1,"value":1}'
    b'{"call":"truco","family":"truco","kind":"called","responder":0,"seat":1,'
    b'"value_if_accepted":3,"value_if_declined":1}'
    b'{"kind":"trick_ended","side":null,"tied":true,"trick":1,"winner":null}'
    b'{"kind":"trick_ended","side":0,"tied":false,"trick":2,"winner":0}'
    b'{"kind":"hand_ended","points":1,"reason":"tricks","side":1}'
    b'{"games":[0,0],"kind":"score","scores":[3,1]}'
    b'{"commitment":"","dealer":1,"game":1,"hand":2,"kind":"hand_started","mano":0,'
    b'"special":null,"turn_up":"QH"}'
    b'{"cards":["JC","5D","2C"],"hidden":["cards"],"kind":"cards_dealt","private_to":[0],"seat":0}'
    b'{"cards":["1e","7o","12c"],"hidden":["cards"],"kind":"cards_dealt","private_to":[1],"seat":1}'
    b'{"card":"5D","face_down":false,"kind":"card_played","seat":0,"trick":1}'
    b'{"card":"QC","face_down":false,"kind":"card_played","seat":1,"trick":1}'
)


def pack(raw: bytes) -> bytes:
    """The stored form of one event's canonical JSON (compressed when that is shorter)."""
    co = zlib.compressobj(9, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, EVENT_DICT_V1)
    packed = co.compress(raw) + co.flush()
    return TAG_V1 + packed if len(packed) + 1 < len(raw) else raw


def unpack(blob: bytes) -> bytes:
    """The JSON text of a stored event (inverse of :func:`pack`; plain JSON passes through)."""
    if blob[:1] == TAG_V1:
        do = zlib.decompressobj(_WBITS, zdict=EVENT_DICT_V1)
        return do.decompress(blob[1:]) + do.flush()
    return blob
