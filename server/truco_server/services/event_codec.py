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
* ``\\x01`` + raw deflate (``wbits=-12``) with :data:`EVENT_DICT_V1` as the preset dictionary
  (events of the first vocabulary, before the typed payloads; decoded, never written);
* ``\\x02`` + the same with :data:`EVENT_DICT_V2` (the typed payloads' field names, and the
  commit time ``t`` in milliseconds since the match was created).

A dictionary is part of the storage format: never change one; add a new tag byte and a new
dictionary instead, and keep decoding the old ones. ``EVENT_DICT_V2`` is one typical stored
event of each kind, family and reason from random matches of several presets, the most
frequent kinds last (deflate reaches the end of a dictionary most cheaply); it must stay
within the 4 KiB window.
"""

from __future__ import annotations

import zlib

__all__ = ["EVENT_DICT_V1", "EVENT_DICT_V2", "pack", "unpack"]

TAG_V1 = b"\x01"
TAG_V2 = b"\x02"
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


EVENT_DICT_V2 = (
    b'{"kind":"match_cancelled","reason":"","t":123456}'
    b'{"kind":"hand_of_eleven_decision","play":true,"seat":1,"t":126590,"team":1}'
    b'{"card":"11o","hidden":["card"],"kind":"card_discarded","private_to":[0],"seat":0,"t":496812}'
    b'{"kind":"match_created","players":2,"preset":"argentine","seats":[{"display_name":"ana","kind":"'
    b'bot","seat":0,"team":0},{"display_name":"seat 1","kind":"human","seat":1,"team":1}],"t":507030}'
    b'{"games_won":[1,0],"kind":"match_ended","t":485436,"winner_team":0}'
    b'{"game_number":1,"games_won":[1,0],"kind":"game_ended","t":411354,"winner_team":0}'
    b'{"family":"envido","kind":"points_declared","points":7,"seat":0,"t":342004}'
    b'{"cards":["7c","6e","4o"],"count":3,"kind":"cards_revealed","public":true,"reason":"envido","sea'
    b't":0,"t":542831}'
    b'{"cards":["5c","11c","2c"],"count":3,"kind":"cards_revealed","public":true,"reason":"flor","seat'
    b'":1,"t":294187}'
    b'{"kind":"trick_ended","t":701170,"tied":true,"trick_index":0,"winner_seat":null,"winner_team":nu'
    b"ll}"
    b'{"kind":"trick_ended","t":75417,"tied":false,"trick_index":0,"winner_seat":2,"winner_team":0}'
    b'{"family":"envido","kind":"bet_won","points":5,"t":778783,"winner_seat":0,"winner_team":0}'
    b'{"family":"flor","kind":"bet_won","points":3,"t":1450,"winner_seat":1,"winner_team":1}'
    b'{"accepted":false,"family":"envido","kind":"call_answered","seat":1,"t":714275,"value":5}'
    b'{"accepted":true,"family":"envido","kind":"call_answered","seat":0,"t":631352,"value":7}'
    b'{"accepted":false,"family":"truco","kind":"call_answered","seat":0,"t":754967,"value":3}'
    b'{"accepted":true,"family":"truco","kind":"call_answered","seat":1,"t":785909,"value":3}'
    b'{"kind":"folded","seat":0,"t":818845,"team":0}'
    b'{"kind":"hand_ended","points":1,"reason":"folded","t":197330,"winner_team":1}'
    b'{"kind":"hand_ended","points":3,"reason":"declined","t":306249,"winner_team":1}'
    b'{"kind":"hand_ended","points":12,"reason":"tricks","t":446194,"winner_team":1}'
    b'{"dealer":1,"deck_commitment":"","game_number":1,"hand_number":1,"kind":"hand_started","mano":0,'
    b'"special":null,"t":563598,"turn_up":null}'
    b'{"dealer":0,"deck_commitment":"","game_number":1,"hand_number":4,"kind":"hand_started","mano":1,'
    b'"special":"eleven","t":308092,"turn_up":null}'
    b'{"games_won":[0,0],"kind":"score_changed","scores":[0,1],"t":776134}'
    b'{"cancels":null,"family":"truco","kind":"call_made","name":"truco","responder":0,"seat":1,"t":57'
    b'5731,"value_if_accepted":2,"value_if_declined":1}'
    b'{"cancels":null,"family":"envido","kind":"call_made","name":"envido","responder":1,"seat":0,"t":'
    b'204295,"value_if_accepted":2,"value_if_declined":1}'
    b'{"cancels":null,"family":"envido","kind":"call_made","name":"real_envido","responder":0,"seat":1'
    b',"t":173087,"value_if_accepted":5,"value_if_declined":2}'
    b'{"cancels":null,"family":"envido","kind":"call_made","name":"falta_envido","responder":1,"seat":'
    b'0,"t":567314,"value_if_accepted":14,"value_if_declined":5}'
    b'{"cancels":null,"family":"truco","kind":"call_made","name":"retruco","responder":1,"seat":0,"t":'
    b'353871,"value_if_accepted":3,"value_if_declined":2}'
    b'{"cancels":null,"family":"truco","kind":"call_made","name":"six","responder":0,"seat":1,"t":4024'
    b'7,"value_if_accepted":6,"value_if_declined":3}'
    b'{"cancels":null,"family":"truco","kind":"call_made","name":"twelve","responder":0,"seat":3,"t":1'
    b'6249,"value_if_accepted":12,"value_if_declined":9}'
    b'{"cancels":"envido","family":"flor","kind":"call_made","name":"flor","responder":null,"seat":1,"'
    b't":46856,"value_if_accepted":3,"value_if_declined":3}'
    b'{"cancels":null,"family":"truco","kind":"call_made","name":"vale_cuatro","responder":0,"seat":1,'
    b'"t":847664,"value_if_accepted":4,"value_if_declined":3}'
    b'{"card":"3e","face_down":false,"kind":"card_played","seat":0,"t":336696,"trick_index":0}'
    b'{"card":"6D","face_down":true,"hidden":["card"],"kind":"card_played","private_to":[2],"seat":2,"'
    b't":817618,"trick_index":1}'
    b'{"cards":["12o","1o","10b"],"count":3,"hidden":["cards"],"kind":"cards_dealt","private_to":[0],"'
    b'seat":0,"t":496853}'
)


_PRIMED = zlib.compressobj(9, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, EVENT_DICT_V2)
"""A compressor that has read the dictionary and nothing else: a copy of it costs less than
half of a new one given the dictionary, and compresses to the same bytes."""


def pack(raw: bytes) -> bytes:
    """The stored form of one event's canonical JSON (compressed when that is shorter)."""
    co = _PRIMED.copy()
    packed = co.compress(raw) + co.flush()
    return TAG_V2 + packed if len(packed) + 1 < len(raw) else raw


def unpack(blob: bytes) -> bytes:
    """The JSON text of a stored event (inverse of :func:`pack`; plain JSON passes through)."""
    tag = blob[:1]
    if tag in (TAG_V2, TAG_V1):
        do = zlib.decompressobj(_WBITS, zdict=EVENT_DICT_V2 if tag == TAG_V2 else EVENT_DICT_V1)
        return do.decompress(blob[1:]) + do.flush()
    return blob
