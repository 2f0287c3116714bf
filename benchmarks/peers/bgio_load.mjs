// boardgame.io's own clients against bgio_server.mjs: ``--matches`` concurrent matches, each
// created and joined through the lobby API (LobbyClient), each seat a boardgame.io Client over
// socket.io (SocketIO) that plays a random card of its hand whenever it is its turn; a finished
// match is replaced by a new one. Prints one JSON line (loadlib.mjs).
//
//   node bgio_load.mjs --url http://127.0.0.1:8000 --matches 200 --seconds 8 --pid <server pid>
import { createRequire } from "node:module";
import { countMoves, measure, options } from "./loadlib.mjs";

const require = createRequire(import.meta.url); // boardgame.io's entry points are CommonJS folders
const { Client, LobbyClient } = require("boardgame.io/client");
const { SocketIO } = require("boardgame.io/multiplayer");
const opts = options();
const lobby = new LobbyClient({ server: opts.url });

// The client side of the game: no moves run here (the server's are `client: false`).
const TrickClient = { name: "trick", minPlayers: 2, maxPlayers: 2, moves: { play: { move: () => {}, client: false } } };

function playMatch(matchID, credentials, figures) {
  return new Promise((resolve) => {
    const clients = [];
    let done = false;
    let last = 0;
    const moved = {};
    const finish = () => {
      if (done) return;
      done = true;
      for (const c of clients) c.stop();
      resolve();
    };
    for (const playerID of ["0", "1"]) {
      const client = Client({
        game: TrickClient,
        matchID,
        playerID,
        credentials: credentials[playerID],
        multiplayer: SocketIO({ server: opts.url, socketOpts: { transports: ["websocket"] } }),
        debug: false,
      });
      client.subscribe((state) => {
        if (!state || done) return;
        if (playerID === "0" && state.G.moves > last) {
          countMoves(figures, state.G.moves - last);
          last = state.G.moves;
        }
        if (state.ctx.gameover) {
          if (playerID === "0" && figures.measuring) figures.finished += 1;
          return finish();
        }
        if (figures.stop) return finish();
        if (state.ctx.currentPlayer !== playerID || state._stateID === moved[playerID]) return;
        moved[playerID] = state._stateID; // once per state: the move runs on the server only
        const hand = state.G.players[playerID].hand;
        if (hand.length) client.moves.play(hand[Math.floor(Math.random() * hand.length)]);
      });
      clients.push(client);
    }
    for (const c of clients) c.start();
  });
}

await measure(opts, async (slot, figures) => {
  while (!figures.stop) {
    const { matchID } = await lobby.createMatch("trick", { numPlayers: 2 });
    const credentials = {};
    for (const playerID of ["0", "1"]) {
      const joined = await lobby.joinMatch("trick", matchID, { playerID, playerName: `p${playerID}` });
      credentials[playerID] = joined.playerCredentials;
    }
    await playMatch(matchID, credentials, figures);
  }
});
