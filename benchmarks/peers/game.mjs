// The peer game, the same on every platform: 40 cards (four suits of ten ranks), a secret
// hand of three for each of two players, one card per move; the higher rank wins the trick
// (a tie goes to the card led), the winner of a trick leads the next, a trick is a point, a
// new hand is dealt when both hands are empty, and the first to 15 points wins.

export const PLAYERS = 2;
export const HAND = 3;
export const TARGET = 15;
export const DECK = [];
for (const suit of ["S", "H", "D", "C"]) {
  for (let rank = 1; rank <= 10; rank++) DECK.push(`${rank}${suit}`);
}

export const rank = (card) => parseInt(card, 10);

/** The seat that wins a trick of [[seat, card], [seat, card]] (the first one led). */
export function trickWinner(table) {
  const [[leader, led], [other, answer]] = table;
  return rank(answer) > rank(led) ? other : leader;
}

/** Deal ``HAND`` cards to each seat from ``shuffled`` (a permutation of ``DECK``). */
export function deal(shuffled) {
  const hands = [];
  for (let s = 0; s < PLAYERS; s++) hands.push(shuffled.slice(s * HAND, (s + 1) * HAND));
  return hands;
}

/** A random permutation of the deck (Fisher-Yates) from ``random`` (returns [0, 1)). */
export function shuffle(random) {
  const cards = DECK.slice();
  for (let i = cards.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [cards[i], cards[j]] = [cards[j], cards[i]];
  }
  return cards;
}

/**
 * One move on a plain state {hands: [[..], [..]], table: [[seat, card]..], next, scores,
 * moves}: ``seat`` plays ``card``. Returns false (nothing changed) when the move is illegal.
 * ``redeal()`` gives a new shuffled deck when both hands are empty and nobody has won.
 */
export function play(state, seat, card, redeal) {
  if (state.next !== seat || state.winner !== null) return false;
  const hand = state.hands[seat];
  const at = hand.indexOf(card);
  if (at < 0) return false;
  hand.splice(at, 1);
  state.table.push([seat, card]);
  state.moves += 1;
  if (state.table.length < PLAYERS) {
    state.next = (seat + 1) % PLAYERS;
    return true;
  }
  const won = trickWinner(state.table);
  state.scores[won] += 1;
  state.table = [];
  state.next = won;
  if (state.scores[won] >= TARGET) {
    state.winner = won;
  } else if (state.hands.every((h) => h.length === 0)) {
    state.hands = deal(redeal());
  }
  return true;
}

export function newState(shuffled) {
  return { hands: deal(shuffled), table: [], next: 0, scores: [0, 0], moves: 0, winner: null };
}
