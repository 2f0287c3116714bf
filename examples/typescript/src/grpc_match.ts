// Plays one whole two-seat match over gRPC from Node, with the client generated from
// proto/truco/v1 by buf (protoc-gen-es) and Connect-ES speaking the gRPC protocol over HTTP/2.
//
//   TRUCO_GRPC=127.0.0.1:50051 TRUCO_API_KEY=... npm run grpc
//
// An operator key creates the match; then each seat runs its own loop with its own seat
// credential: it streams what that seat may see and, whenever the seat has legal actions,
// submits one of them chosen at random. Prints one JSON line with the result.
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { MatchState } from "./gen/truco/v1/match_pb.js";
import { MatchService } from "./gen/truco/v1/match_service_pb.js";

const address = process.env.TRUCO_GRPC ?? "127.0.0.1:50051";
const apiKey = process.env.TRUCO_API_KEY ?? "";
const preset = process.env.TRUCO_PRESET ?? "paulista";

const transport = createGrpcTransport({ baseUrl: `http://${address}` });
const client: Client<typeof MatchService> = createClient(MatchService, transport);
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

/** Errors a seat expects now and then: another update moved the match on first. */
const RETRYABLE = new Set([Code.Aborted, Code.FailedPrecondition]);

async function playSeat(matchId: string, token: string): Promise<number> {
  let actions = 0;
  // The stream sends the seat's observation first, then one update per change, until the
  // match is over (heartbeats in between while nothing happens).
  for await (const msg of client.streamObservations({ matchId }, bearer(token))) {
    if (msg.message.case !== "update") continue;
    const obs = msg.message.value.observation;
    if (obs === undefined) continue;
    if (obs.matchState !== MatchState.ACTIVE) break;
    if (obs.legalActions.length === 0) continue;
    const action = obs.legalActions[Math.floor(Math.random() * obs.legalActions.length)];
    try {
      await client.submitAction(
        { matchId, requestId: randomUUID(), expectedVersion: obs.version, action },
        bearer(token),
      );
      actions += 1;
    } catch (err) {
      const e = ConnectError.from(err);
      if (!RETRYABLE.has(e.code)) throw e;
      // stale or not our turn any more: the next update says what is legal now
    }
  }
  return actions;
}

const created = await client.createMatch(
  { requestId: randomUUID(), rules: { preset }, players: 2 },
  apiKey ? bearer(apiKey) : {},
);
const matchId = created.match?.matchId ?? "";
const tokens = created.seatCredentials.map((c) => c.token);
console.error(`created ${matchId} (${created.match?.rules?.preset}), seats: ${tokens.length}`);

const perSeat = await Promise.all(tokens.map((token) => playSeat(matchId, token)));
const final = await client.getMatch({ matchId }, bearer(tokens[0] ?? ""));
const match = final.match;
console.log(
  JSON.stringify({
    transport: "grpc",
    matchId,
    state: match ? `MATCH_STATE_${MatchState[match.state]}` : "unknown",
    winnerTeam: match?.result?.winnerTeam ?? null,
    scores: match?.result?.scores ?? [],
    actions: perSeat,
  }),
);
