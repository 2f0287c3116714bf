"""How ``truco play``, ``truco watch`` and ``truco demo`` draw a table: cards, actions,
events and the whole view of one seat, as text (with colours when the terminal has them)."""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Sequence

import truco_engine as te
from truco_engine.ranking import MANILHA_BASE
from truco_kit.actions import Action
from truco_kit.observation import Event, Observation
from truco_match.events import MatchCancelled

SUITS = {"C": "♣", "H": "♥", "S": "♠", "D": "♦", "e": "⚔", "b": "♣", "c": "♥", "o": "◆"}
SUIT_WORDS = {"e": "espadas", "b": "bastos", "c": "copas", "o": "oros"}
FRENCH_SUIT_WORDS = {"C": "clubs", "H": "hearts", "S": "spades", "D": "diamonds"}
RED = {"H", "D", "c", "o"}


class Style:
    """ANSI styling (disabled with ``color=False`` or the NO_COLOR environment variable)."""

    def __init__(self, color: bool | None = None) -> None:
        if color is None:
            color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        self.color = color

    def _w(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def bold(self, t: str) -> str:
        return self._w("1", t)

    def dim(self, t: str) -> str:
        return self._w("2", t)

    def red(self, t: str) -> str:
        return self._w("31", t)

    def green(self, t: str) -> str:
        return self._w("32", t)

    def yellow(self, t: str) -> str:
        return self._w("33", t)

    def card(self, code: str | None) -> str:
        """A card as its API code followed by its suit symbol (``7e⚔``, ``4C♣``): what is
        shown is what is typed."""
        if not code:
            return "??"
        text = card_label(code)
        return self.red(text) if code[-1] in RED else text


def card_label(code: str) -> str:
    """``7e`` -> ``7e⚔``: the code the API (and the ``play`` prompt) uses, then the symbol."""
    return code + SUITS.get(code[-1], "")


def suit_legend(rules: te.RuleSet | None) -> str:
    """The suit letters of the deck in use, as the API's card codes spell them (docs/cards.md)."""
    spanish = rules is not None and rules.deck != te.Deck.FRENCH40
    if spanish:
        names = ", ".join(f"{k} {SUITS[k]} {v}" for k, v in SUIT_WORDS.items())
        return f"Suits: {names}. Type a card by its code: 7e, 12c, 1b."
    names = ", ".join(f"{k} {SUITS[k]} {v}" for k, v in FRENCH_SUIT_WORDS.items())
    return f"Suits: {names}. Type a card by its code: 4C, 7H, AS."


def top_cards(obs: Observation) -> dict[str, str]:
    """The cards of the hand that outrank every plain card this hand, with what they are
    called: ``manilha`` where a turned-up card (vira, muestra) or a fixed list makes them,
    ``top card`` for the fixed top four of the River Plate games (1e, 1b, 7e, 7o)."""
    if obs.rules is None:
        return {}
    strengths = obs.strengths()
    word = "manilha" if obs.rules.deck == te.Deck.FRENCH40 or obs.turn_up else "top card"
    return {c: word for c in obs.my_cards if c and strengths.get(c, 0) >= MANILHA_BASE}


def card_boxes(
    cards: Sequence[str | None],
    style: Style,
    numbered: bool = False,
    marks: Collection[str] = (),
) -> list[str]:
    """Cards drawn as three text rows of boxes (``None``: a face-down card); a card in
    ``marks`` gets a star (the hand's manilhas or top cards)."""
    if not cards:
        return ["(none)"]
    top, mid, bot = [], [], []
    for c in cards:
        label = "▒▒▒" if c is None else card_label(c) + ("★" if c in marks else "")
        pad = label.center(5)
        shown = style.red(pad) if c is not None and c[-1] in RED else pad
        top.append("┌─────┐")
        mid.append(f"│{shown}│")
        bot.append("└─────┘")
    rows = [" ".join(top), " ".join(mid), " ".join(bot)]
    if numbered:
        rows.append(" ".join(f"   {i + 1}   " for i in range(len(cards))))
    return rows


def next_truco_name(obs: Observation) -> str:
    """The name of the truco-ladder step a ``truco`` action would call now."""
    r = obs.rules
    if r is None:
        return "TRUCO"
    names = list(r.truco_call_names)
    if obs.pending is not None and obs.pending.kind == "truco" and obs.pending.name in names:
        i = names.index(obs.pending.name) + 1
    elif obs.hand_value in r.truco_ladder:
        i = list(r.truco_ladder).index(obs.hand_value) + 1
    else:
        i = 0
    return names[min(i, len(names) - 1)].replace("_", " ").upper()


def action_label(a: Action, style: Style, obs: Observation | None = None) -> str:
    if a.kind == "truco" and obs is not None:
        return f"call {next_truco_name(obs)}"
    if a.kind == "play":
        if a.slot is not None:
            return f"play card #{a.slot + 1} (blind)"
        return f"play {style.card(a.card)}" + (" face down" if a.face_down else "")
    if a.kind == "discard":
        return f"discard {style.card(a.card)}"
    return {
        "truco": "call TRUCO (raise)",
        "accept": "accept (quiero)",
        "decline": "decline (no quiero)",
        "fold": "fold (al mazo)",
        "envido": "call ENVIDO",
        "real_envido": "call REAL ENVIDO",
        "falta_envido": "call FALTA ENVIDO",
        "flor": "sing FLOR",
        "contraflor": "CONTRAFLOR",
        "contraflor_al_resto": "CONTRAFLOR AL RESTO",
    }.get(a.kind, a.kind)


class Names:
    def __init__(self, names: Sequence[str], me: int | None) -> None:
        self.names = list(names)
        self.me = me

    def __call__(self, seat: int | None) -> str:
        if seat is None:
            return "—"
        if seat == self.me:
            return "You"
        return self.names[seat] if 0 <= seat < len(self.names) and self.names[seat] else f"Seat {seat}"


def describe_event(e: Event, names: Names, style: Style) -> str | None:
    """One line of narration for an event (``None``: not worth a line)."""
    p = e.payload
    who = names(e.seat)
    if isinstance(p, te.HandStarted):
        extra = f", vira {style.card(p.turn_up)}" if p.turn_up else ""
        return style.bold(f"— Hand {p.hand_number} (dealer {names(p.dealer)}{extra}) —")
    if isinstance(p, te.CardPlayed):
        return f"{who} played " + (style.card(p.card) if p.card else "a card face down")
    if isinstance(p, te.CallMade):
        return style.yellow(f"{who}: {p.name.replace('_', ' ').upper()}!")
    if isinstance(p, te.CallAnswered):
        return f"{who}: " + ("quiero (accepted)" if p.accepted else "no quiero (declined)")
    if isinstance(p, te.TrickEnded):
        if p.tied:
            return f"Trick {p.trick_index + 1} tied (parda)"
        return f"Trick {p.trick_index + 1} won by {names(p.winner_seat)}"
    if isinstance(p, te.PointsDeclared):
        return f"{who}: " + (f"{p.points} points" if p.points is not None else "son buenas")
    if isinstance(p, te.BetWon):
        return f"{p.family.value.capitalize()} to team {p.winner_team} (+{p.points})"
    if isinstance(p, te.HandOfElevenDecision):
        return f"{who} " + ("plays the hand of eleven" if p.play else "refuses the hand of eleven")
    if isinstance(p, te.Folded):
        return f"{who} folded"
    if isinstance(p, te.HandEnded):
        if p.winner_team is None:
            return "Hand ended: nobody scores"
        return style.green(f"Hand ended: team {p.winner_team} +{p.points} ({p.reason.value})")
    if isinstance(p, te.CardsRevealed) and p.cards:
        return f"{who} shows " + " ".join(style.card(c) for c in p.cards)
    if isinstance(p, te.GameEnded):
        return style.bold(f"Game {p.game_number} won by team {p.winner_team}")
    if isinstance(p, te.MatchEnded):
        return style.bold(f"Match won by team {p.winner_team}")
    if isinstance(p, MatchCancelled):
        return style.red(f"Match cancelled: {p.reason}")
    return None


def render(obs: Observation, names: Names, style: Style) -> str:
    """The table as text."""
    lines: list[str] = []
    title = f"Truco · {obs.preset} · game {obs.game_number} · hand {obs.hand_number}"
    lines.append(style.bold(f"══ {title} " + "═" * max(0, 60 - len(title))))
    teams: dict[int, list[int]] = {}
    for seat, t in enumerate(obs.seat_teams):
        teams.setdefault(t, []).append(seat)
    score = "   ".join(
        f"{' & '.join(names(s) for s in seats)}: "
        + style.bold(str(obs.scores[t] if t < len(obs.scores) else 0))
        for t, seats in sorted(teams.items())
    )
    lines.append(f" Score  {score}   (to {obs.target_points})")
    info = f" Hand value: {obs.hand_value}"
    if obs.turn_up:
        info = f" Vira: {style.card(obs.turn_up)}   " + info
    lines.append(info)
    for i, trick in enumerate(obs.tricks):
        plays = "  ".join(f"{names(p.seat)} {style.card(p.card) if p.card else '▒▒'}" for p in trick.plays)
        result = ""
        if trick.tied:
            result = " → tied"
        elif trick.winner_seat is not None:
            result = f" → {names(trick.winner_seat)}"
        if plays or result:
            lines.append(f" Trick {i + 1}: {plays}{result}")
    if obs.pending is not None:
        p = obs.pending
        lines.append(
            style.yellow(
                f" Pending: {p.name.replace('_', ' ').upper()} by {names(p.by_seat)}"
                f" (accept: {p.value_if_accepted}, decline: {p.value_if_declined})"
            )
        )
    others = [s for s in range(obs.players) if s != obs.seat]
    lines.append(
        " Cards in hand: "
        + ", ".join(f"{names(s)} {obs.hand_sizes[s]}" for s in others if s < len(obs.hand_sizes))
    )
    for s, cards in obs.revealed.items():
        lines.append(f" {names(s)} shows: " + " ".join(style.card(c) for c in cards))
    if obs.seat is not None:
        if obs.hidden_count:
            lines.append(f" Your cards: {obs.hidden_count} face down (iron hand: you play blind)")
        else:
            lines.append(" Your cards:")
            marks = top_cards(obs)
            lines.extend("   " + row for row in card_boxes(list(obs.my_cards), style, marks=marks))
            for word in sorted(set(marks.values())):
                shown = " ".join(style.card(c) for c, w in marks.items() if w == word)
                lines.append(style.yellow(f" ★ {word}: {shown} (beats every plain card this hand)"))
            lines.append(style.dim(" " + suit_legend(obs.rules)))
    if obs.is_over:
        w = obs.winner_team
        lines.append(style.bold(" Match over." + (f" Winner: team {w}" if w is not None else "")))
    elif obs.whose_turn is not None and obs.seat not in obs.awaited:
        lines.append(style.dim(f" Waiting for {names(obs.whose_turn)}…"))
    return "\n".join(lines)
