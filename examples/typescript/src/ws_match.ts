// Plays one whole two-seat match over the player connection on a WebSocket from Node: one
// socket to GET /v1/connect on the HTTP port, subprotocol truco.v1+proto (binary frames, each
// one ConnectRequest or ConnectResponse of the code generated from proto/ by buf).
//
//   TRUCO_URL=http://127.0.0.1:8080 TRUCO_API_KEY=... npm run ws
//
// An operator key creates the match over REST; then both seats ride the one socket, each
// subscribed with its own seat credential. Whenever a seat's observation awaits it, it sends
// one of its legal actions, chosen at random; the action's result (or its typed error, a
// google.rpc.Status) comes back on the same socket. Prints one JSON line with the result.
// Node 22 and browsers have a global WebSocket; the `ws` package is the same API on Node 18/20.
import { randomUUID } from "node:crypto";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import WebSocket from "ws";
import { MatchState } from "./gen/truco/v1/match_pb.js";
import { ConnectRequestSchema, ConnectResponseSchema } from "./gen/truco/v1/match_service_pb.js";
import type { Observation } from "./gen/truco/v1/observation_pb.js";

const base = process.env.TRUCO_URL ?? "http://127.0.0.1:8080";
const apiKey = process.env.TRUCO_API_KEY ?? "";
const preset = process.env.TRUCO_PRESET ?? "paulista";

/** google.rpc.Code values a seat expects now and then: another update moved the match on. */
const RETRYABLE = new Set([9 /* FAILED_PRECONDITION */, 10 /* ABORTED */]);

const res = await fetch(`${base}/v1/matches`, {
  method: "POST",
  headers: { "content-type": "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
  body: JSON.stringify({ requestId: randomUUID(), rules: { preset }, players: 2 }),
});
if (!res.ok) throw new Error(`CreateMatch: HTTP ${res.status} ${await res.text()}`);
const created = (await res.json()) as { match: { matchId: string }; seatCredentials: { token: string }[] };
const matchId = created.match.matchId;
const tokens = created.seatCredentials.map((c) => c.token);
console.error(`created ${matchId} (${preset}), seats: ${tokens.length}`);

const ws = new WebSocket(`${base.replace(/^http/, "ws")}/v1/connect`, ["truco.v1+proto"]);
await new Promise((resolve, reject) => {
  ws.once("open", resolve);
  ws.once("error", reject);
});
const send = (init: MessageInitShape<typeof ConnectRequestSchema>) =>
  ws.send(toBinary(ConnectRequestSchema, create(ConnectRequestSchema, init)));

const actions = tokens.map(() => 0);
const actedAt = new Map<number, bigint>(); // seat -> the version it last acted on
let nextActionId = 1n;

/** Subscription ids are seat + 1. Act if the seat is awaited and has not acted on this version. */
function consider(seat: number, obs: Observation | undefined): void {
  if (!obs || obs.matchState !== MatchState.ACTIVE || !obs.awaited.includes(seat)) return;
  if (actedAt.get(seat) === obs.version || obs.legalActions.length === 0) return;
  actedAt.set(seat, obs.version);
  const action = obs.legalActions[Math.floor(Math.random() * obs.legalActions.length)];
  const request = { matchId, requestId: randomUUID(), expectedVersion: obs.version, action };
  send({
    message: { case: "action", value: { subscriptionId: BigInt(seat + 1), actionId: nextActionId++, request } },
  });
}

await new Promise<void>((resolve, reject) => {
  let ended = 0;
  ws.on("message", (data: Buffer) => {
    const msg = fromBinary(ConnectResponseSchema, new Uint8Array(data));
    const seat = Number(msg.message.value?.subscriptionId ?? 0n) - 1;
    switch (msg.message.case) {
      case "update": {
        const inner = msg.message.value.message?.message;
        if (inner?.case === "update") consider(seat, inner.value.observation);
        break; // heartbeats: nothing to do
      }
      case "result": // the action's answer; its observation stands for the seat's next update
        actions[seat] = (actions[seat] ?? 0) + 1;
        consider(seat, msg.message.value.response?.observation);
        break;
      case "error": {
        const status = msg.message.value.status;
        if (!RETRYABLE.has(status?.code ?? 0)) reject(new Error(`action refused: ${status?.code} ${status?.message}`));
        break; // stale or not our turn any more: the next update says what is legal now
      }
      case "ended": {
        const status = msg.message.value.status;
        if (status && status.code !== 0) reject(new Error(`subscription ended: ${status.code} ${status.message}`));
        else if (++ended === tokens.length) resolve(); // the match is over for every seat
        break;
      }
    }
  });
  ws.on("close", (code, reason) => reject(new Error(`socket closed: ${code} ${reason.toString()}`)));
  tokens.forEach((token, seat) =>
    send({ message: { case: "subscribe", value: { subscriptionId: BigInt(seat + 1), token, matchId } } }),
  );
});
ws.close(1000);

const final = await fetch(`${base}/v1/matches/${matchId}`, { headers: { authorization: `Bearer ${tokens[0]}` } });
const match = ((await final.json()) as { match: Record<string, any> }).match; // eslint-disable-line @typescript-eslint/no-explicit-any
console.log(
  JSON.stringify({
    transport: "websocket",
    matchId,
    state: match.state,
    winnerTeam: match.result?.winnerTeam ?? null,
    scores: match.result?.scores ?? [],
    actions,
  }),
);
