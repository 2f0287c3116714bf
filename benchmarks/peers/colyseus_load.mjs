// Colyseus's own client (colyseus.js) against colyseus_server.mjs: ``--matches`` concurrent
// matches, each a room created by one client and joined by id by the other; each seat plays a
// random card of its hand (the only one its view shows) whenever the state says it is its
// turn; a finished match is replaced by a new one. Prints one JSON line (loadlib.mjs).
//
//   node colyseus_load.mjs --url ws://127.0.0.1:2567 --matches 200 --seconds 8 --pid <server pid>
import { Client } from "colyseus.js";
import { countMoves, measure, options } from "./loadlib.mjs";

const opts = options();
const client = new Client(opts.url);

function playRoom(room, seat, figures, onOver) {
  let moved = -1;
  let last = 0;
  const look = (state) => {
    if (seat === 0 && state.moves > last) {
      countMoves(figures, state.moves - last);
      last = state.moves;
    }
    if (state.winner >= 0 || figures.stop) return onOver(state.winner >= 0);
    if (state.next !== seat || state.moves === moved) return;
    const hand = state.seats[seat] && state.seats[seat].hand;
    if (!hand || hand.length === 0) return;
    moved = state.moves;
    room.send("play", hand[Math.floor(Math.random() * hand.length)]);
  };
  room.onStateChange(look);
  if (room.state && room.state.seats) look(room.state); // the state it joined with
}

await measure(opts, async (slot, figures) => {
  while (!figures.stop) {
    const first = await client.create("trick");
    const second = await client.joinById(first.roomId);
    await new Promise((resolve) => {
      let done = false;
      const over = (won) => {
        if (done) return;
        done = true;
        if (won && figures.measuring) figures.finished += 1; // the state that ended it: either room's
        first.leave();
        second.leave();
        resolve();
      };
      playRoom(first, 0, figures, over);
      playRoom(second, 1, figures, over);
    });
  }
});
