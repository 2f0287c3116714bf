"""Generate the golden playthroughs of the presets: ``tests/golden/<case>-<n>.json``.

Each file holds one full match played by a seeded ``random.Random`` driver (randomness lives
here, never in the engine):

* ``record`` — the match record (rules, first dealer, every deal and action), replayable with
  ``truco replay FILE`` after extracting it (or ``truco replay``);
* ``transcript`` — for every step, the events it caused as every viewer receives them:
  ``public`` is the spectator's copy, ``private`` maps each seat whose copy differs to its
  copy (its own dealt cards, its face-down cards, partners' cards at the hand of eleven);
* ``final`` — the final match state (``MatchState.to_dict()``).

``tests/engine/test_golden.py`` replays every record and compares the transcript and the final
state exactly. A failure means the engine's behaviour changed. Regenerate only on purpose,
after checking that the change is intended (and say so in the commit)::

    .venv/bin/python tests/golden/make_golden.py          # rewrite every file
    .venv/bin/python tests/golden/make_golden.py --check  # compare only, exit 1 on a difference

Then review ``git diff tests/golden``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from truco_engine import (  # noqa: E402
    Event,
    Match,
    MatchRecord,
    MatchState,
    apply,
    deal,
    get_rules,
    legal_actions,
    new_match,
    to_act,
)
from truco_engine.actions import Action  # noqa: E402
from truco_engine.scoring import ENVIDO_CALLS  # noqa: E402


@dataclass(frozen=True)
class Case:
    """One golden case: a preset (``NAME-Np``) with house rules, the runs recorded (each run
    ``n`` is a seed), and what the driver may do besides the defaults."""

    preset: str
    runs: tuple[int, ...] = (1,)
    overrides: dict[str, Any] = field(default_factory=dict)
    raise_envido: bool = False
    """Answer an envido with a raise (envido, real envido, falta envido) 15 % of the time."""


CASES: dict[str, Case] = {
    "paulista-2p": Case("paulista-2p", (1, 2)),
    "paulista-4p": Case("paulista-4p", (1, 2)),
    "paulista-6p": Case("paulista-6p"),
    "mineiro-2p": Case("mineiro-2p", (1, 2)),
    "mineiro-4p": Case("mineiro-4p"),
    "manilha-velha-4p": Case("manilha-velha-4p"),
    "argentine-2p": Case("argentine-2p", (1, 2)),
    "argentine-4p": Case("argentine-4p"),
    "argentine-30-2p": Case("argentine-30-2p"),
    "uruguayan-2p": Case("uruguayan-2p"),
    "gaucho-4p": Case("gaucho-4p"),
    "valencian-4p": Case("valencian-4p"),
    "argentine-3p": Case("argentine-3p"),
    "carancho-3p": Case("carancho-3p"),
    "pica-pica-6p": Case("pica-pica-6p"),
    # Whole-match structures (tests/engine/test_golden_matches.py checks that each file
    # shows what it is here for; the run numbers were picked for that):
    # best of three (seed 000), with a redeal after three tied tricks on the way;
    "paulista-best-of-3-2p": Case("paulista-2p", (17,), {"games_to_win": 2}),
    # pica-pica at eight (the head-to-head pairs when the facing seat is a partner);
    "pica-pica-8p": Case("pica-pica-8p"),
    # a game, and the match, ending in the middle of a hand on an accepted falta envido.
    "argentine-falta-2p": Case("argentine-2p", (64,), raise_envido=True),
}
"""Case name (the files are ``NAME-N.json``) and what it records."""

MAX_STEPS = 3000


def seed_of(case: str, n: int) -> int:
    return zlib.crc32(f"{case}/{n}".encode())


def play_match(case: str, n: int) -> MatchRecord:
    """One match of ``case`` played by the seeded random driver: a call is answered with
    accept (60 %), decline (25 %) or a raise (15 %); on its turn a seat calls truco 8 % of
    the time, envido 8 % where it is legal, else plays a random card (face down included
    where legal), or any legal action when no card may be played (flor, discard). Only the
    seat the game waits for acts (out-of-turn calls are pinned by the unit tests)."""
    spec = CASES[case]
    rng = random.Random(seed_of(case, n))
    rules = get_rules(spec.preset, **spec.overrides)
    m = Match(rules)
    deck = list(rules.deck_cards)
    hands = 0
    for _ in range(MAX_STEPS):
        if m.state.phase == "over":
            return m.record
        if m.state.phase == "deal":
            hands += 1
            rng.shuffle(deck)
            m.deal(deck, salt=f"golden-{case}-{n}-{hands}")
            continue
        seat = to_act(m.state)[0]
        options = legal_actions(m.state, seat)
        legal = {a.kind: a for a in options}
        plays = [a for a in options if a.kind == "play"]
        x = rng.random()
        if "accept" in legal:
            kind = "accept" if x < 0.6 or len(legal) == 1 else "decline" if x < 0.85 else "truco"
            raises = [a for a in options if a.kind in ENVIDO_CALLS]
            if kind == "truco" and spec.raise_envido and raises:
                action = raises[rng.randrange(len(raises))]
            else:
                action = legal.get(kind, legal["accept"])
        elif "truco" in legal and x < 0.08:
            action = legal["truco"]
        elif "envido" in legal and x < 0.16:
            action = legal["envido"]
        elif plays:
            action = plays[rng.randrange(len(plays))]
        else:  # must sing flor, discard (carancho), …: any legal action
            action = options[rng.randrange(len(options))]
        m.act(seat, action)
    raise AssertionError(f"{case}-{n}: the match did not end")


def views(e: Event, players: int) -> dict[str, Any]:
    public = e.redact(None).to_dict()
    private = {}
    for seat in range(players):
        mine = e.redact(seat).to_dict()
        if mine != public:
            private[str(seat)] = mine
    out: dict[str, Any] = {"public": public}
    if private:
        out["private"] = private
    return out


def transcript(record: MatchRecord) -> tuple[list[dict[str, Any]], MatchState]:
    """Replay ``record`` step by step; return the per-viewer transcript and the final state."""
    state = new_match(record.rules, record.first_dealer)
    out: list[dict[str, Any]] = []
    for step in record.steps:
        if "deal" in step:
            state, events = deal(state, step["deal"], step.get("salt", ""))
            label = "deal"
        else:
            action = Action.from_dict(step["action"])
            state, events = apply(state, int(step["seat"]), action)
            label = f"{step['seat']}: {action.text()}"
        out.append({"step": label, "events": [views(e, record.rules.players) for e in events]})
    return out, state


def golden(case: str, n: int) -> dict[str, Any]:
    record = play_match(case, n)
    trans, final = transcript(record)
    return {"case": case, "record": record.to_dict(), "transcript": trans, "final": final.to_dict()}


def dump(data: dict[str, Any]) -> str:
    # One step per line keeps the files small and their diffs readable.
    lines = ["{", f' "case": {json.dumps(data["case"])},']
    lines.append(f' "record": {json.dumps(data["record"], sort_keys=True, ensure_ascii=False)},')
    lines.append(' "transcript": [')
    steps = [json.dumps(s, sort_keys=True, ensure_ascii=False) for s in data["transcript"]]
    lines.append(",\n".join("  " + s for s in steps))
    lines.append(" ],")
    lines.append(f' "final": {json.dumps(data["final"], sort_keys=True, ensure_ascii=False)}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def files() -> list[tuple[str, int, Path]]:
    return [(case, n, HERE / f"{case}-{n}.json") for case, spec in CASES.items() for n in spec.runs]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare with the files, write nothing")
    args = p.parse_args(argv)
    bad = 0
    for case, n, path in files():
        text = dump(golden(case, n))
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"differs: {path.name}")
                bad += 1
        else:
            path.write_text(text)
            print(f"wrote {path.name} ({len(text) // 1024} KiB)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
