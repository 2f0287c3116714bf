// boardgame.io 0.50.2 hosting the peer game (game.mjs): its Server (Koa, the lobby API and
// socket.io on one port) with its default in-memory storage. Each player's view strips the
// other's hand (PlayerView.STRIP_SECRETS: `players` keeps only the viewer's entry).
//
//   node bgio_server.mjs --port 8000
import { createRequire } from "node:module";
import { newState, play, shuffle } from "./game.mjs";

const require = createRequire(import.meta.url); // boardgame.io's entry points are CommonJS folders
const { Server, Origins } = require("boardgame.io/server");
const { PlayerView, INVALID_MOVE } = require("boardgame.io/core");

const port = Number(process.argv[process.argv.indexOf("--port") + 1] || 8000);

// G: the public table and scores; players[seat].hand the secret hands.
function toG(state) {
  return {
    players: { 0: { hand: state.hands[0] }, 1: { hand: state.hands[1] } },
    table: state.table,
    next: state.next,
    scores: state.scores,
    moves: state.moves,
    winner: state.winner,
  };
}

export const TrickGame = {
  name: "trick",
  minPlayers: 2,
  maxPlayers: 2,
  setup: ({ random }) => toG(newState(shuffle(() => random.Number()))),
  turn: {
    minMoves: 1,
    maxMoves: 1,
    order: { first: ({ G }) => G.next, next: ({ G }) => G.next },
  },
  moves: {
    play: {
      move: ({ G, playerID, random }, card) => {
        const state = {
          hands: [G.players[0].hand, G.players[1].hand],
          table: G.table,
          next: G.next,
          scores: G.scores,
          moves: G.moves,
          winner: G.winner,
        };
        if (!play(state, Number(playerID), card, () => shuffle(() => random.Number()))) return INVALID_MOVE;
        // G is an immer draft: write the new values into it
        G.players[0].hand = state.hands[0];
        G.players[1].hand = state.hands[1];
        Object.assign(G, { table: state.table, next: state.next, moves: state.moves, winner: state.winner });
      },
      client: false, // the server decides (it deals with its own randomness)
    },
  },
  endIf: ({ G }) => (G.winner !== null ? { winner: String(G.winner) } : undefined),
  playerView: PlayerView.STRIP_SECRETS,
};

const server = Server({ games: [TrickGame], origins: [Origins.LOCALHOST] });
await server.run({ port, callback: () => console.log(`boardgame.io listening on ${port}`) });
