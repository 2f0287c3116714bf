"""The wire contract between the server and its clients: ``truco.v1``.

Neither the server nor the clients own it; both import it, and nothing else converts:

* :mod:`truco_contract.pb` — the generated ``truco.v1`` messages (the only importer of the
  generated ``truco`` package, which ``scripts/gen_proto.sh`` produces from ``proto/``);
* :mod:`truco_contract.codec` — the one codec between the match's and the engine's types
  (:mod:`truco_match`, :mod:`truco_engine`) and ``truco.v1``;
* :mod:`truco_contract.json_mapping` — protobuf's JSON mapping, strict (REST bodies, exports);
* :mod:`truco_contract.record_file` — a match record's export file;
* :mod:`truco_contract.leagues` — league rows and their CSV and JSON exports.
"""
