// Colyseus 0.16 (@colyseus/core, @colyseus/ws-transport, @colyseus/schema 3) hosting the peer
// game (game.mjs): one room per match, its state a schema whose hands are view fields (a
// client's StateView holds only its own seat, so each hand goes to its owner only); the
// automatic 50 ms patch tick is off and a patch goes out after every move.
//
//   node colyseus_server.mjs --port 2567
import { Room, Server } from "@colyseus/core";
import { ArraySchema, StateView, schema } from "@colyseus/schema";
import { WebSocketTransport } from "@colyseus/ws-transport";
import { newState, play, shuffle } from "./game.mjs";

const port = Number(process.argv[process.argv.indexOf("--port") + 1] || 2567);

const Seat = schema({ hand: { type: ["string"], view: true }, score: "number" }, "Seat");
const Table = schema(
  { seats: [Seat], table: ["string"], next: "number", moves: "number", winner: "number" },
  "Table",
);

class TrickRoom extends Room {
  maxClients = 2;
  patchRate = null; // no tick: broadcastPatch() after each move

  onCreate() {
    this.game = newState(shuffle(Math.random));
    const state = new Table();
    for (let s = 0; s < 2; s++) state.seats.push(new Seat({ hand: new ArraySchema(...this.game.hands[s]), score: 0 }));
    state.next = 0;
    state.moves = 0;
    state.winner = -1;
    this.state = state;
    this.onMessage("play", (client, card) => this.move(client, card));
  }

  onJoin(client) {
    const seat = this.clients.length - 1;
    client.userData = { seat };
    client.view = new StateView();
    client.view.add(this.state.seats[seat]);
    if (this.clients.length === 2) this.lock();
  }

  move(client, card) {
    const seat = client.userData.seat;
    if (!play(this.game, seat, card, () => shuffle(Math.random))) return;
    const state = this.state;
    for (let s = 0; s < 2; s++) {
      sync(state.seats[s].hand, this.game.hands[s]);
      state.seats[s].score = this.game.scores[s];
    }
    sync(state.table, this.game.table.map(([, c]) => c));
    state.next = this.game.next;
    state.moves = this.game.moves;
    state.winner = this.game.winner === null ? -1 : this.game.winner;
    this.broadcastPatch();
  }
}
/** Make the ArraySchema ``target`` hold ``cards`` (changed in place: the patch carries only
 * what changed, and a view keeps seeing the same collection). */
function sync(target, cards) {
  for (let i = target.length - 1; i >= 0; i--) if (!cards.includes(target[i])) target.splice(i, 1);
  for (const card of cards) if (!target.includes(card)) target.push(card);
}

const server = new Server({ transport: new WebSocketTransport(), greet: false });
server.define("trick", TrickRoom);
await server.listen(port, "127.0.0.1");
console.log(`colyseus listening on ${port}`);
