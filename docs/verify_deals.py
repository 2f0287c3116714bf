"""Check the deals of a finished Truco match with SHA-256 alone (docs/fairness.md).

    python3 verify_deals.py RECORD.json    # exit 0: every deal checks out; 1: the first fault

RECORD.json is a match's record as `truco record` writes it (the JSON of truco.v1.MatchRecord;
the body of GET /v1/matches/{id}/record works too). Checked: the seed against the hash
published at creation, the mixed seed, every hand's deck, salt and commitment, and that every
card a seat played or discarded was dealt to that seat in that hand and left its hand once.
Not checked: whether the calls, answers and plays were legal, and the score (that needs the
rules: `truco verify` checks them).
"""

import base64
import hashlib
import json
import sys
from typing import Any

SUITS = {"french40": "CHSD", "spanish40": "ebco"}
RANKS = {"french40": "4 5 6 7 Q J K A 2 3", "spanish40": "1 2 3 4 5 6 7 10 11 12"}


def full_deck(name: str) -> list[str]:
    if name == "spanish22":
        return ["1e", "1b"] + [r + s for s in "ebco" for r in "34567"]
    return [r + s for s in SUITS[name] for r in RANKS[name].split()]


def sha256(*parts: bytes) -> bytes:
    return hashlib.sha256(b"".join(parts)).digest()


def shuffle(seed: bytes, hand: int, cards: list[str]) -> list[str]:
    """Fisher-Yates over `cards`, indices from the SHA-256 counter stream of hand `hand`."""
    deck, block = list(cards), 0
    words: list[int] = []
    for i in range(len(deck) - 1, 0, -1):
        while True:
            if not words:
                digest = sha256(seed, b"deck", hand.to_bytes(8, "big"), block.to_bytes(8, "big"))
                words = [int.from_bytes(digest[w : w + 4], "big") for w in range(0, 32, 4)]
                block += 1
            x = words.pop(0)
            if x < 2**32 - 2**32 % (i + 1):  # rejection sampling: no modulo bias
                break
        j = x % (i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def dealt(deck: list[str], dealer: int, rules: dict[str, Any]) -> list[list[str]]:
    """Each seat's cards: one at a time from the mano (the dealer's left), three rounds."""
    n = rules["players"]
    mano = (dealer + 1) % n
    hands: list[list[str]] = [[] for _ in range(n)]
    for k in range(3):
        for i in range(n):
            hands[(mano + i) % n].append(deck[k * n + i])
    if rules["play_mode"] == "carancho":  # the mano gets a fourth card and discards one
        hands[mano].append(deck[3 * n])
    return hands


def check(record: dict[str, Any]) -> None:
    """Print what holds; raise ValueError at the first fault."""
    if record.get("format") != "truco-match-record/1":
        raise ValueError("not a truco-match-record/1 file")
    match, reveal = record["match"], record.get("reveal")
    if reveal is None:
        raise ValueError("the match is not over: the record has no seed")
    fair, rules, hands = match["fairness"], match["effectiveRules"], record.get("hands", [])
    seed = base64.b64decode(reveal["seed"])
    if hashlib.sha256(seed).hexdigest() != fair["seedHash"]:
        raise ValueError("sha256(seed) is not the seed hash published at creation")
    print(f"seed: its sha256 is the published hash; deals from {fair['dealSource']}")
    client = [base64.b64decode(c["seed"]) for c in fair.get("clientSeeds", [])]
    mixed = sha256(b"truco-mix/1", seed, *(sha256(c) for c in client))
    if mixed != base64.b64decode(reveal["mixedSeed"]):
        raise ValueError("the mixed seed is not mix(seed, client seeds)")
    print(f"mixed seed: the seed mixed with {len(client)} client seeds")
    cards, deals = full_deck(rules["deck"]), reveal.get("deals", [])
    if rules["clean_deck"] and deals:  # the deck without the cards that rule removes
        cards = [c for c in cards if c in deals[0]["cards"]]
    if len(deals) != len(hands):
        raise ValueError(f"{len(deals)} revealed deals for {len(hands)} hands")
    seats_cards: list[list[list[str]]] = []
    for k, (hand, deal) in enumerate(zip(hands, deals, strict=True), 1):
        operator = k <= fair.get("operatorDecks", 0)
        deck = deal["cards"] if operator else shuffle(mixed, k, cards)
        if deal.get("operatorDeck", False) != operator or sorted(deck) != sorted(cards):
            raise ValueError(f"hand {k}: the deck is not marked as it was given, or not the deck")
        if deal["cards"] != deck:
            raise ValueError(f"hand {k}: the revealed deck is not the shuffle of the mixed seed")
        salt = hashlib.sha256(mixed + b"salt" + k.to_bytes(8, "big")).hexdigest()
        commitment = hashlib.sha256(f"{salt}:{' '.join(deck)}".encode()).hexdigest()
        if (deal["salt"], deal["commitment"], hand["deckCommitment"]) != (salt, commitment, commitment):
            raise ValueError(f"hand {k}: the salt or the commitment does not match the deck")
        seats_cards.append(dealt(deck, hand["dealer"], rules))
    print(f"deals: {len(deals)} decks, salts and commitments ({fair.get('operatorDecks', 0)} operator decks)")
    # A step is played in the last hand started at or before the previous step's version.
    starts = [int(h["version"]) for h in hands]
    held, current, before, plays = None, 0, starts[0] if starts else 0, 0
    for step in record.get("steps", []):
        while current < len(starts) and starts[current] <= before:
            held, current = [list(c) for c in seats_cards[current]], current + 1
        before, action = int(step["version"]), step.get("action", {})
        play = action.get("playCard") or action.get("discard")
        if play is None:
            continue
        seat, where = step["seat"], f"hand {current}, version {step['version']}"
        hand = held[seat] if held is not None else []
        if "slot" in play:  # a blind play: the card in that position of what the seat holds
            card = hand.pop(play["slot"]) if 0 <= play["slot"] < len(hand) else None
        else:
            card = play.get("card") if play.get("card") in hand else None
            if card is not None:
                hand.remove(card)
        if card is None:
            raise ValueError(f"{where}: seat {seat} played a card it was not dealt or had played")
        plays += 1
    print(f"plays: each of {plays} cards played or discarded was dealt to its seat, once")


if __name__ == "__main__":
    try:
        with open(sys.argv[1], encoding="utf-8") as f:
            data = json.load(f)
        if "format" not in data and "record" in data:  # the body of GET .../record
            data = data["record"]
        check(data)
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        print(f"FAIL: {exc}")
        sys.exit(1)
    print("OK: every deal checks out")
