"""The league job's step for an arena (:mod:`truco_server.leagues.arena`): pair the waiting
entrants as a new wave, or finish once the time is up and the last match in play is over.

An arena's waves are stored as rounds: ``LeagueDoc.round`` is the last wave paired, each
wave's pairings and tables are parts ``p:<wave>.<table>`` keyed ``r<wave>.t<table>`` like a
round's, so steps 1-4 of the job (create, assign, collect, rate) are the same, over every
pairing still in play instead of the current round's. The step is written with the same
compare-and-set as every other step: two workers that both see entrants waiting compute the
same wave (the pairing is a pure function of the results and of who is in play), and only
one write of it is stored.
"""

from __future__ import annotations

import structlog

from truco_server.leagues import arena_over, busy, waiting_entrants
from truco_server.services.leagues.documents import LeagueDoc, PairingDoc, State, TableDoc

log = structlog.get_logger("truco.leagues")


def arena_step(doc: LeagueDoc, now: float) -> bool:
    """Step 5 of a running arena (``False``: nothing to do now)."""
    if doc.state != State.RUNNING:
        return False
    live = doc.live_pairings()
    if arena_over(now, doc.ends_at):
        if live:  # the matches in play finish and count
            return False
        doc.state = State.FINISHED
        doc.emit("league.finished", now, rounds=doc.round)
        log.info("arena finished", league_id=doc.league_id, waves=doc.round)
        return True
    event = doc.event()
    playing = busy(p.pairing() for p in live)
    waiting = waiting_entrants(event.entrants, doc.withdrawn(), playing)
    paired = event.arena_pairings(doc.round + 1, doc.results(), waiting, others_playing=bool(playing))
    if not paired:
        return False
    doc.round += 1
    for pairing in paired:
        pd = PairingDoc(pairing.round, pairing.table, pairing.first, pairing.second, pairing.label)
        for dt in event.tables(pairing):
            doc.tables[dt.key] = TableDoc(dt.key, dt.deal_set, list(dt.sides))
            pd.tables.append(dt.key)
        doc.pairings.append(pd)
    doc.emit("round.paired", now, round=doc.round, pairings=len(paired), byes=0)
    log.info("arena wave paired", league_id=doc.league_id, wave=doc.round, pairings=len(paired))
    return True


def next_due_ms(doc: LeagueDoc, now_ms: int, poll_ms: int) -> int:
    """A running arena is looked at by its fallback poll, and at its end time if that comes
    first (then it pairs nothing more, and finishes when no match is in play)."""
    end_ms = round(doc.ends_at * 1000)
    if doc.state == State.RUNNING and now_ms < end_ms:
        return min(now_ms + poll_ms, end_ms)
    return now_ms + poll_ms
