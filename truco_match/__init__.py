"""The match: everything that decides what happens to a match beyond one hand of Truco, as
pure functions over frozen data (no I/O, no clock of its own, no randomness but the seed it
is given).

* :mod:`truco_match.table` — every step of a match (start, join, act, clock expiry, add time,
  re-issue, adjudicate, abort, cancel) and the deals and the reveal they make due;
* :mod:`truco_match.timeout` — the move made for a seat out of time or away: the one that
  gives its side the least;
* :mod:`truco_match.lifecycle` — a match's lifecycle settings (clock, join window, idle
  timeout, disconnect grace, spectators) and its lifecycle state (:class:`~.lifecycle.Life`);
* :mod:`truco_match.events` — the payloads the service adds to a match's log beside the
  engine's, what a viewer receives of each (:class:`~.events.EventView`) and the redaction;
* :mod:`truco_match.views` — what one viewer sees of a match at one version;
* :mod:`truco_match.fairness` — how a seed becomes each hand's deck order and salt;
* :mod:`truco_match.records` and :mod:`truco_match.verify` — a match's record, its replay
  and the verifier anyone can run on it;
* :mod:`truco_match.matches` — a match's public description;
* :mod:`truco_match.operator_events` — what an operator is told of its matches.

The server commits what these functions return; the SDK's local runner plays the same
functions in-process; :mod:`truco_contract` encodes their types for the wire.
"""
