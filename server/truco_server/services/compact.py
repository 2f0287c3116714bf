"""Compact stored forms: canonical JSON raw-deflated with a preset dictionary.

A stored event is 60-170 bytes of JSON, too short for plain zlib to gain anything, but most
of it (field names, kinds, call names) repeats from event to event; a match's metadata is
about 1.4 KB of JSON, nearly all of it the rule set's field names and values. Deflate with a
preset dictionary of typical content brings an event to about 20 bytes and the metadata to
140-160 (docs/storage.md, "Memory per match").

Formats (the first byte tells them apart):

* an event: ``\x03`` + its commit time (ms after the match's creation) as a varint (a
  negative one as its 64-bit two's complement, as protobuf writes an ``int64``) + raw deflate
  (``wbits=-12``) with :data:`EVENT_DICT_V2` of its JSON without the time, at a level that
  depends on its size (:data:`LARGE_EVENT`): the deflated bytes of an event that comes again
  (a card played, a trick's end, a score) are the same every time, so a writer may keep them
  (``stored.entry_bytes``). Read, as written before: ``{...}``, plain JSON with the time as
  ``t``; ``\x02`` + the same deflate of that JSON;
* the metadata: ``{...}`` -- plain JSON; ``\x01`` + raw deflate (``wbits=-15``) with
  :data:`META_DICT_V1`.

A dictionary is part of the storage format: never change one; add a new tag byte and a new
dictionary instead, and keep decoding the old ones. ``EVENT_DICT_V2`` is one typical stored
event of each kind, family and reason from random matches of several presets, the most
frequent kinds last (deflate reaches the end of a dictionary most cheaply); it must stay
within the 4 KiB window. ``META_DICT_V1`` and ``META_DICT_V2`` are the metadata of one match of
each of six presets with the per-match values blanked, their rule sets without and with the
house-rule fields (docs/rules/house-rules.md).
"""

from __future__ import annotations

import zlib

from truco_contract.codec import wire

__all__ = [
    "EVENT_DICT_V2",
    "META_DICT_V1",
    "META_DICT_V2",
    "deflate_event",
    "inflate_event",
    "pack_event",
    "pack_meta",
    "split_event",
    "unpack_event",
    "unpack_meta",
]

EVENT_TAG = b"\x03"
EVENT_TAG_V2 = b"\x02"
META_TAG = b"\x02"
META_TAG_V1 = b"\x01"
_EVENT_WBITS = -12  # 4 KiB window: the dictionary fits; a small window keeps compressobj cheap
_EVENT_MEM_LEVEL = 4
_META_WBITS = -15

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

META_DICT_V1 = (
    b'{"created_at":0.0,"cred_key":"","deck_orders":[],"first_dealer":null,"format":3,"labels":{},"lif'
    b'ecycle":{"idle_timeout":86400000},"match_id":"","owner":"acme","request_fingerprint":"","rules":'
    b'{"all_tricks_tied":"mano","base_value":1,"clean_deck":false,"contraflor":true,"contraflor_al_res'
    b'to":"falta","contraflor_value":6,"deck":"spanish22","envido":true,"envido_with_flor":false,"extr'
    b'a_manilhas":[],"face_down_from_trick":0,"falta_envido":"game","flor":false,"flor_accepted_value"'
    b':4,"flor_mandatory":true,"flor_value":3,"fold":true,"fold_concedes_envido":false,"fold_on_envido'
    b'":"declined","games_to_win":2,"halves":false,"hand_of_eleven_at":null,"hand_of_eleven_refusal":1'
    b',"hand_of_eleven_value":3,"iron_hand":false,"lead_after_tie":"nearest_to_mano","name":"valencian'
    b'","partner_flor":"voided","pica_pica":false,"pieza_values":"tables","play_mode":"teams","players'
    b'":4,"ranking":"valencian","show_envido_cards":true,"target_points":12,"three_never_manilha":fals'
    b'e,"truco_call_names":["truc","retruc","quatre_val"],"truco_game_call":"joc_fora","truco_ladder":'
    b'[2,3,4],"truco_out_of_turn":false},"seats":[{"display_name":"seat 0","kind":"human","seat":0,"te'
    b'am":0},{"display_name":"seat 1","kind":"human","seat":1,"team":1},{"display_name":"seat 2","kind'
    b'":"human","seat":2,"team":0},{"display_name":"seat 3","kind":"human","seat":3,"team":1}],"seed":'
    b'"","source":"server_seed"}{"created_at":0.0,"cred_key":"","deck_orders":[],"first_dealer":null,"'
    b'format":3,"labels":{},"lifecycle":{"idle_timeout":86400000},"match_id":"","owner":"acme","reques'
    b't_fingerprint":"","rules":{"all_tricks_tied":"mano","base_value":1,"clean_deck":false,"contraflo'
    b'r":true,"contraflor_al_resto":"falta","contraflor_value":6,"deck":"spanish40","envido":true,"env'
    b'ido_with_flor":false,"extra_manilhas":[],"face_down_from_trick":0,"falta_envido":"game","flor":t'
    b'rue,"flor_accepted_value":4,"flor_mandatory":true,"flor_value":3,"fold":true,"fold_concedes_envi'
    b'do":false,"fold_on_envido":"declined","games_to_win":2,"halves":false,"hand_of_eleven_at":null,"'
    b'hand_of_eleven_refusal":1,"hand_of_eleven_value":3,"iron_hand":false,"lead_after_tie":"nearest_t'
    b'o_mano","name":"gaucho","partner_flor":"voided","pica_pica":false,"pieza_values":"tables","play_'
    b'mode":"teams","players":4,"ranking":"argentine","show_envido_cards":true,"target_points":12,"thr'
    b'ee_never_manilha":false,"truco_call_names":["truco","retruco","vale_quatro"],"truco_game_call":n'
    b'ull,"truco_ladder":[2,3,4],"truco_out_of_turn":false},"seats":[{"display_name":"seat 0","kind":"'
    b'human","seat":0,"team":0},{"display_name":"seat 1","kind":"human","seat":1,"team":1},{"display_n'
    b'ame":"seat 2","kind":"human","seat":2,"team":0},{"display_name":"seat 3","kind":"human","seat":3'
    b',"team":1}],"seed":"","source":"server_seed"}{"created_at":0.0,"cred_key":"","deck_orders":[],"f'
    b'irst_dealer":null,"format":3,"labels":{},"lifecycle":{"idle_timeout":86400000},"match_id":"","ow'
    b'ner":"acme","request_fingerprint":"","rules":{"all_tricks_tied":"mano","base_value":1,"clean_dec'
    b'k":false,"contraflor":true,"contraflor_al_resto":"falta","contraflor_value":6,"deck":"spanish40"'
    b',"envido":true,"envido_with_flor":false,"extra_manilhas":[],"face_down_from_trick":0,"falta_envi'
    b'do":"half","flor":true,"flor_accepted_value":4,"flor_mandatory":true,"flor_value":3,"fold":true,'
    b'"fold_concedes_envido":false,"fold_on_envido":"declined","games_to_win":1,"halves":true,"hand_of'
    b'_eleven_at":null,"hand_of_eleven_refusal":1,"hand_of_eleven_value":3,"iron_hand":false,"lead_aft'
    b'er_tie":"nearest_to_mano","name":"uruguayan","partner_flor":"voided","pica_pica":false,"pieza_va'
    b'lues":"tables","play_mode":"teams","players":2,"ranking":"muestra","show_envido_cards":true,"tar'
    b'get_points":30,"three_never_manilha":false,"truco_call_names":["truco","retruco","vale_cuatro"],'
    b'"truco_game_call":null,"truco_ladder":[2,3,4],"truco_out_of_turn":false},"seats":[{"display_name'
    b'":"seat 0","kind":"human","seat":0,"team":0},{"display_name":"seat 1","kind":"human","seat":1,"t'
    b'eam":1}],"seed":"","source":"server_seed"}{"created_at":0.0,"cred_key":"","deck_orders":[],"firs'
    b't_dealer":null,"format":3,"labels":{},"lifecycle":{"idle_timeout":86400000},"match_id":"","owner'
    b'":"acme","request_fingerprint":"","rules":{"all_tricks_tied":"mano","base_value":1,"clean_deck":'
    b'false,"contraflor":true,"contraflor_al_resto":"falta","contraflor_value":6,"deck":"spanish40","e'
    b'nvido":true,"envido_with_flor":false,"extra_manilhas":[],"face_down_from_trick":0,"falta_envido"'
    b':"game","flor":true,"flor_accepted_value":4,"flor_mandatory":true,"flor_value":3,"fold":true,"fo'
    b'ld_concedes_envido":false,"fold_on_envido":"hand","games_to_win":1,"halves":false,"hand_of_eleve'
    b'n_at":null,"hand_of_eleven_refusal":1,"hand_of_eleven_value":3,"iron_hand":false,"lead_after_tie'
    b'":"nearest_to_mano","name":"argentine","partner_flor":"first","pica_pica":false,"pieza_values":"'
    b'tables","play_mode":"teams","players":2,"ranking":"argentine","show_envido_cards":true,"target_p'
    b'oints":15,"three_never_manilha":false,"truco_call_names":["truco","retruco","vale_cuatro"],"truc'
    b'o_game_call":null,"truco_ladder":[2,3,4],"truco_out_of_turn":false},"seats":[{"display_name":"se'
    b'at 0","kind":"human","seat":0,"team":0},{"display_name":"seat 1","kind":"human","seat":1,"team":'
    b'1}],"seed":"","source":"server_seed"}{"created_at":0.0,"cred_key":"","deck_orders":[],"first_dea'
    b'ler":null,"format":3,"labels":{},"lifecycle":{"idle_timeout":86400000},"match_id":"","owner":"ac'
    b'me","request_fingerprint":"","rules":{"all_tricks_tied":"redeal","base_value":2,"clean_deck":fal'
    b'se,"contraflor":true,"contraflor_al_resto":"falta","contraflor_value":6,"deck":"french40","envid'
    b'o":false,"envido_with_flor":false,"extra_manilhas":[],"face_down_from_trick":2,"falta_envido":"g'
    b'ame","flor":false,"flor_accepted_value":4,"flor_mandatory":true,"flor_value":3,"fold":false,"fol'
    b'd_concedes_envido":false,"fold_on_envido":"declined","games_to_win":1,"halves":false,"hand_of_el'
    b'even_at":10,"hand_of_eleven_refusal":2,"hand_of_eleven_value":4,"iron_hand":true,"lead_after_tie'
    b'":"tied_trick_opener","name":"mineiro","partner_flor":"first","pica_pica":false,"pieza_values":"'
    b'tables","play_mode":"teams","players":4,"ranking":"fixed_mineiro","show_envido_cards":true,"targ'
    b'et_points":12,"three_never_manilha":false,"truco_call_names":["truco","six","ten","twelve"],"tru'
    b'co_game_call":null,"truco_ladder":[4,6,10,12],"truco_out_of_turn":true},"seats":[{"display_name"'
    b':"seat 0","kind":"human","seat":0,"team":0},{"display_name":"seat 1","kind":"human","seat":1,"te'
    b'am":1},{"display_name":"seat 2","kind":"human","seat":2,"team":0},{"display_name":"seat 3","kind'
    b'":"human","seat":3,"team":1}],"seed":"","source":"server_seed"}{"created_at":0.0,"cred_key":"","'
    b'deck_orders":[],"first_dealer":null,"format":3,"labels":{},"lifecycle":{"idle_timeout":86400000}'
    b',"match_id":"","owner":"acme","request_fingerprint":"","rules":{"all_tricks_tied":"redeal","base'
    b'_value":1,"clean_deck":false,"contraflor":true,"contraflor_al_resto":"falta","contraflor_value":'
    b'6,"deck":"french40","envido":false,"envido_with_flor":false,"extra_manilhas":[],"face_down_from_'
    b'trick":2,"falta_envido":"game","flor":false,"flor_accepted_value":4,"flor_mandatory":true,"flor_'
    b'value":3,"fold":false,"fold_concedes_envido":false,"fold_on_envido":"declined","games_to_win":1,'
    b'"halves":false,"hand_of_eleven_at":11,"hand_of_eleven_refusal":1,"hand_of_eleven_value":3,"iron_'
    b'hand":true,"lead_after_tie":"tied_trick_opener","name":"paulista","partner_flor":"first","pica_p'
    b'ica":false,"pieza_values":"tables","play_mode":"teams","players":2,"ranking":"vira","show_envido'
    b'_cards":true,"target_points":12,"three_never_manilha":false,"truco_call_names":["truco","six","n'
    b'ine","twelve"],"truco_game_call":null,"truco_ladder":[3,6,9,12],"truco_out_of_turn":true},"seats'
    b'":[{"display_name":"seat 0","kind":"human","seat":0,"team":0},{"display_name":"seat 1","kind":"h'
    b'uman","seat":1,"team":1}],"seed":"","source":"server_seed"}'
)


META_DICT_V2 = (
    b'{"created_at":0.0,"cred_key":"","deck_orders":[],"first_dealer":null,"format":3,"labels":{},"life'
    b'cycle":{"idle_timeout":86400000},"match_id":"","owner":"acme","request_fingerprint":"","rules":{"'
    b'all_tricks_tied":"mano","base_value":1,"clean_deck":false,"contraflor":true,"contraflor_al_resto"'
    b':"falta","contraflor_value":6,"deck":"spanish22","envido":true,"envido_declined_plus_one":false,"'
    b'envido_with_flor":false,"extra_manilhas":[],"face_down_from_trick":0,"falta_after_envido_envido":'
    b'true,"falta_envido":"game","falta_envido_adds_chain":false,"falta_envido_by_winner":false,"flor":'
    b'false,"flor_accepted_value":4,"flor_mandatory":true,"flor_value":3,"fold":true,"fold_alone":false'
    b',"fold_concedes_envido":false,"fold_concedes_envido_after_truco":false,"fold_on_envido":"declined'
    b'","games_to_win":2,"halves":false,"hand_of_eleven_at":null,"hand_of_eleven_refusal":1,"hand_of_el'
    b'even_value":3,"iron_hand":false,"lead_after_tie":"nearest_to_mano","name":"valencian","partner_fl'
    b'or":"voided","pica_pica":false,"pieza_values":"tables","play_mode":"teams","players":4,"ranking":'
    b'"valencian","show_envido_cards":true,"target_points":12,"three_never_manilha":false,"truco_call_n'
    b'ames":["truc","retruc","quatre_val"],"truco_capped_at_game":false,"truco_game_call":"joc_fora","t'
    b'ruco_ladder":[2,3,4],"truco_out_of_turn":false},"seats":[{"display_name":"seat 0","kind":"human",'
    b'"seat":0,"team":0},{"display_name":"seat 1","kind":"human","seat":1,"team":1},{"display_name":"se'
    b'at 2","kind":"human","seat":2,"team":0},{"display_name":"seat 3","kind":"human","seat":3,"team":1'
    b'}],"seed":"","source":"server_seed"}{"created_at":0.0,"cred_key":"","deck_orders":[],"first_deale'
    b'r":null,"format":3,"labels":{},"lifecycle":{"idle_timeout":86400000},"match_id":"","owner":"acme"'
    b',"request_fingerprint":"","rules":{"all_tricks_tied":"mano","base_value":1,"clean_deck":false,"co'
    b'ntraflor":true,"contraflor_al_resto":"falta","contraflor_value":6,"deck":"spanish40","envido":tru'
    b'e,"envido_declined_plus_one":false,"envido_with_flor":false,"extra_manilhas":[],"face_down_from_t'
    b'rick":0,"falta_after_envido_envido":true,"falta_envido":"game","falta_envido_adds_chain":false,"f'
    b'alta_envido_by_winner":false,"flor":true,"flor_accepted_value":4,"flor_mandatory":true,"flor_valu'
    b'e":3,"fold":true,"fold_alone":false,"fold_concedes_envido":false,"fold_concedes_envido_after_truc'
    b'o":false,"fold_on_envido":"declined","games_to_win":2,"halves":false,"hand_of_eleven_at":null,"ha'
    b'nd_of_eleven_refusal":1,"hand_of_eleven_value":3,"iron_hand":false,"lead_after_tie":"nearest_to_m'
    b'ano","name":"gaucho","partner_flor":"voided","pica_pica":false,"pieza_values":"tables","play_mode'
    b'":"teams","players":4,"ranking":"argentine","show_envido_cards":true,"target_points":12,"three_ne'
    b'ver_manilha":false,"truco_call_names":["truco","retruco","vale_quatro"],"truco_capped_at_game":fa'
    b'lse,"truco_game_call":null,"truco_ladder":[2,3,4],"truco_out_of_turn":false},"seats":[{"display_n'
    b'ame":"seat 0","kind":"human","seat":0,"team":0},{"display_name":"seat 1","kind":"human","seat":1,'
    b'"team":1},{"display_name":"seat 2","kind":"human","seat":2,"team":0},{"display_name":"seat 3","ki'
    b'nd":"human","seat":3,"team":1}],"seed":"","source":"server_seed"}{"created_at":0.0,"cred_key":"",'
    b'"deck_orders":[],"first_dealer":null,"format":3,"labels":{},"lifecycle":{"idle_timeout":86400000}'
    b',"match_id":"","owner":"acme","request_fingerprint":"","rules":{"all_tricks_tied":"mano","base_va'
    b'lue":1,"clean_deck":false,"contraflor":true,"contraflor_al_resto":"falta","contraflor_value":6,"d'
    b'eck":"spanish40","envido":true,"envido_declined_plus_one":false,"envido_with_flor":false,"extra_m'
    b'anilhas":[],"face_down_from_trick":0,"falta_after_envido_envido":true,"falta_envido":"half","falt'
    b'a_envido_adds_chain":false,"falta_envido_by_winner":false,"flor":true,"flor_accepted_value":4,"fl'
    b'or_mandatory":true,"flor_value":3,"fold":true,"fold_alone":false,"fold_concedes_envido":false,"fo'
    b'ld_concedes_envido_after_truco":false,"fold_on_envido":"declined","games_to_win":1,"halves":true,'
    b'"hand_of_eleven_at":null,"hand_of_eleven_refusal":1,"hand_of_eleven_value":3,"iron_hand":false,"l'
    b'ead_after_tie":"nearest_to_mano","name":"uruguayan","partner_flor":"voided","pica_pica":false,"pi'
    b'eza_values":"tables","play_mode":"teams","players":2,"ranking":"muestra","show_envido_cards":true'
    b',"target_points":30,"three_never_manilha":false,"truco_call_names":["truco","retruco","vale_cuatr'
    b'o"],"truco_capped_at_game":false,"truco_game_call":null,"truco_ladder":[2,3,4],"truco_out_of_turn'
    b'":false},"seats":[{"display_name":"seat 0","kind":"human","seat":0,"team":0},{"display_name":"sea'
    b't 1","kind":"human","seat":1,"team":1}],"seed":"","source":"server_seed"}{"created_at":0.0,"cred_'
    b'key":"","deck_orders":[],"first_dealer":null,"format":3,"labels":{},"lifecycle":{"idle_timeout":8'
    b'6400000},"match_id":"","owner":"acme","request_fingerprint":"","rules":{"all_tricks_tied":"mano",'
    b'"base_value":1,"clean_deck":false,"contraflor":true,"contraflor_al_resto":"falta","contraflor_val'
    b'ue":6,"deck":"spanish40","envido":true,"envido_declined_plus_one":false,"envido_with_flor":false,'
    b'"extra_manilhas":[],"face_down_from_trick":0,"falta_after_envido_envido":true,"falta_envido":"gam'
    b'e","falta_envido_adds_chain":false,"falta_envido_by_winner":false,"flor":true,"flor_accepted_valu'
    b'e":4,"flor_mandatory":true,"flor_value":3,"fold":true,"fold_alone":false,"fold_concedes_envido":f'
    b'alse,"fold_concedes_envido_after_truco":false,"fold_on_envido":"hand","games_to_win":1,"halves":f'
    b'alse,"hand_of_eleven_at":null,"hand_of_eleven_refusal":1,"hand_of_eleven_value":3,"iron_hand":fal'
    b'se,"lead_after_tie":"nearest_to_mano","name":"argentine","partner_flor":"first","pica_pica":false'
    b',"pieza_values":"tables","play_mode":"teams","players":2,"ranking":"argentine","show_envido_cards'
    b'":true,"target_points":15,"three_never_manilha":false,"truco_call_names":["truco","retruco","vale'
    b'_cuatro"],"truco_capped_at_game":false,"truco_game_call":null,"truco_ladder":[2,3,4],"truco_out_o'
    b'f_turn":false},"seats":[{"display_name":"seat 0","kind":"human","seat":0,"team":0},{"display_name'
    b'":"seat 1","kind":"human","seat":1,"team":1}],"seed":"","source":"server_seed"}{"created_at":0.0,'
    b'"cred_key":"","deck_orders":[],"first_dealer":null,"format":3,"labels":{},"lifecycle":{"idle_time'
    b'out":86400000},"match_id":"","owner":"acme","request_fingerprint":"","rules":{"all_tricks_tied":"'
    b'redeal","base_value":2,"clean_deck":false,"contraflor":true,"contraflor_al_resto":"falta","contra'
    b'flor_value":6,"deck":"french40","envido":false,"envido_declined_plus_one":false,"envido_with_flor'
    b'":false,"extra_manilhas":[],"face_down_from_trick":2,"falta_after_envido_envido":true,"falta_envi'
    b'do":"game","falta_envido_adds_chain":false,"falta_envido_by_winner":false,"flor":false,"flor_acce'
    b'pted_value":4,"flor_mandatory":true,"flor_value":3,"fold":false,"fold_alone":false,"fold_concedes'
    b'_envido":false,"fold_concedes_envido_after_truco":false,"fold_on_envido":"declined","games_to_win'
    b'":1,"halves":false,"hand_of_eleven_at":10,"hand_of_eleven_refusal":2,"hand_of_eleven_value":4,"ir'
    b'on_hand":true,"lead_after_tie":"tied_trick_opener","name":"mineiro","partner_flor":"first","pica_'
    b'pica":false,"pieza_values":"tables","play_mode":"teams","players":4,"ranking":"fixed_mineiro","sh'
    b'ow_envido_cards":true,"target_points":12,"three_never_manilha":false,"truco_call_names":["truco",'
    b'"six","ten","twelve"],"truco_capped_at_game":false,"truco_game_call":null,"truco_ladder":[4,6,10,'
    b'12],"truco_out_of_turn":true},"seats":[{"display_name":"seat 0","kind":"human","seat":0,"team":0}'
    b',{"display_name":"seat 1","kind":"human","seat":1,"team":1},{"display_name":"seat 2","kind":"huma'
    b'n","seat":2,"team":0},{"display_name":"seat 3","kind":"human","seat":3,"team":1}],"seed":"","sour'
    b'ce":"server_seed"}{"created_at":0.0,"cred_key":"","deck_orders":[],"first_dealer":null,"format":3'
    b',"labels":{},"lifecycle":{"idle_timeout":86400000},"match_id":"","owner":"acme","request_fingerpr'
    b'int":"","rules":{"all_tricks_tied":"redeal","base_value":1,"clean_deck":false,"contraflor":true,"'
    b'contraflor_al_resto":"falta","contraflor_value":6,"deck":"french40","envido":false,"envido_declin'
    b'ed_plus_one":false,"envido_with_flor":false,"extra_manilhas":[],"face_down_from_trick":2,"falta_a'
    b'fter_envido_envido":true,"falta_envido":"game","falta_envido_adds_chain":false,"falta_envido_by_w'
    b'inner":false,"flor":false,"flor_accepted_value":4,"flor_mandatory":true,"flor_value":3,"fold":fal'
    b'se,"fold_alone":false,"fold_concedes_envido":false,"fold_concedes_envido_after_truco":false,"fold'
    b'_on_envido":"declined","games_to_win":1,"halves":false,"hand_of_eleven_at":11,"hand_of_eleven_ref'
    b'usal":1,"hand_of_eleven_value":3,"iron_hand":true,"lead_after_tie":"tied_trick_opener","name":"pa'
    b'ulista","partner_flor":"first","pica_pica":false,"pieza_values":"tables","play_mode":"teams","pla'
    b'yers":2,"ranking":"vira","show_envido_cards":true,"target_points":12,"three_never_manilha":false,'
    b'"truco_call_names":["truco","six","nine","twelve"],"truco_capped_at_game":false,"truco_game_call"'
    b':null,"truco_ladder":[3,6,9,12],"truco_out_of_turn":true},"seats":[{"display_name":"seat 0","kind'
    b'":"human","seat":0,"team":0},{"display_name":"seat 1","kind":"human","seat":1,"team":1}],"seed":"'
    b'","source":"server_seed"}'
)

_META_DICTS = {META_TAG_V1: META_DICT_V1, META_TAG: META_DICT_V2}

_PRIMED = zlib.compressobj(
    9, zlib.DEFLATED, _EVENT_WBITS, _EVENT_MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, EVENT_DICT_V2
)
"""A compressor that has read the event dictionary and nothing else: a copy of it costs less
than half of a new one given the dictionary, and compresses to the same bytes."""


_PRIMED_LARGE = zlib.compressobj(5, zlib.DEFLATED, _EVENT_WBITS, 8, zlib.Z_DEFAULT_STRATEGY, EVENT_DICT_V2)
"""The same for an event of more than :data:`LARGE_EVENT` bytes (a ``match_revealed``: every
deal of the match, 3-18 KB of JSON): level 5 with the default hash table takes a quarter of
the time of level 9 with the small one (about 0.1 against 0.4-0.5 ms for a paulista match's),
for a size within 3 % of it. Any level decodes the same way."""
LARGE_EVENT = 1024


def deflate_event(raw: bytes) -> bytes:
    """The deflated form of one event's canonical JSON (without its time)."""
    co = (_PRIMED if len(raw) <= LARGE_EVENT else _PRIMED_LARGE).copy()
    return co.compress(raw) + co.flush()


def pack_event(deflated: bytes, ms: int) -> bytes:
    """The stored form of an event: its :func:`deflate_event` bytes committed at ``ms``."""
    return EVENT_TAG + wire.varint(ms) + deflated


def split_event(blob: bytes) -> tuple[bytes, int] | None:
    """The deflated JSON and the commit time of an event stored in the current form;
    ``None`` for a form written before (:func:`unpack_event` reads those)."""
    if blob[:1] != EVENT_TAG:
        return None
    ms, at = wire.read_varint(blob, 1)
    return blob[at:], ms - (1 << 64) if ms >= 1 << 63 else ms


def inflate_event(deflated: bytes) -> bytes:
    """The JSON of :func:`deflate_event`'s bytes."""
    do = zlib.decompressobj(_EVENT_WBITS, zdict=EVENT_DICT_V2)
    return do.decompress(deflated) + do.flush()


def unpack_event(blob: bytes) -> tuple[bytes, int | None]:
    """The JSON of a stored event and its commit time; ``None`` for a form written before,
    whose JSON holds it as ``t`` (plain JSON passes through)."""
    parts = split_event(blob)
    if parts is not None:
        return inflate_event(parts[0]), parts[1]
    return (inflate_event(blob[1:]) if blob[:1] == EVENT_TAG_V2 else blob), None


def pack_meta(raw: bytes) -> bytes:
    """The compact form of a match's metadata (its canonical JSON)."""
    c = zlib.compressobj(9, zlib.DEFLATED, _META_WBITS, 9, zdict=META_DICT_V2)
    return META_TAG + c.compress(raw) + c.flush()


def unpack_meta(blob: bytes) -> bytes:
    """The JSON of a stored metadata blob (plain JSON passes through)."""
    zdict = _META_DICTS.get(blob[:1])
    if zdict is not None:
        d = zlib.decompressobj(_META_WBITS, zdict=zdict)
        return d.decompress(blob[1:]) + d.flush()
    return blob
