"""The contract between the server and its clients: what a match is on the wire.

Neither the server nor the clients own it; both import it, and nothing else converts:

* :mod:`truco_contract.pb` — the generated ``truco.v1`` messages (the only importer of the
  generated ``truco`` package, which ``scripts/gen_proto.sh`` produces from ``proto/``);
* :mod:`truco_contract.events` — the payloads the service adds to a match's log (created,
  cancelled, revealed) beside the engine's, and the event a viewer receives (:class:`EventView`);
* :mod:`truco_contract.views` — a viewer's observation at a version (:class:`SeatView`);
* :mod:`truco_contract.table` — a match's log as a pure function of its rules, seed and
  actions (the server commits it; the SDK's local runner plays it in-process);
* :mod:`truco_contract.fairness` — how a seed becomes each hand's deck order and salt;
* :mod:`truco_contract.codec` — the one codec between those types and ``truco.v1``.
"""
