// Plays one whole two-seat match over REST/JSON with Node's fetch, streaming each seat's
// observations as Server-Sent Events (the credential in the Authorization header).
//
//   TRUCO_URL=http://127.0.0.1:8080 TRUCO_API_KEY=... npm run rest
//
// Same shape as grpc_match.ts, no generated code: JSON bodies use protobuf's JSON mapping
// (lowerCamelCase names, enum names, 64-bit integers as strings).
import { randomUUID } from "node:crypto";

const base = process.env.TRUCO_URL ?? "http://127.0.0.1:8080";
const apiKey = process.env.TRUCO_API_KEY ?? "";
const preset = process.env.TRUCO_PRESET ?? "paulista";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

class ApiError extends Error {
  constructor(
    readonly http: number,
    readonly status: Json,
  ) {
    super(`HTTP ${http}: ${status.message ?? ""}`);
  }
}

async function call(method: string, path: string, token: string, body?: Json): Promise<Json> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(base + path, { method, headers, body: body && JSON.stringify(body) });
  const data = (await res.json()) as Json;
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

/** Server-Sent Events from a fetch body: yields {event, data} per blank-line-terminated block. */
async function* sse(body: AsyncIterable<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "message";
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, "");
      buffer = buffer.slice(nl + 1);
      if (line === "") {
        if (data.length) yield { event, data: data.join("\n") };
        event = "message";
        data = [];
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
    }
  }
}

async function playSeat(matchId: string, token: string): Promise<number> {
  let actions = 0;
  const res = await fetch(`${base}/v1/matches/${matchId}:streamObservations`, {
    headers: { accept: "text/event-stream", authorization: `Bearer ${token}` },
  });
  if (!res.ok || res.body === null) throw new ApiError(res.status, (await res.json()) as Json);
  for await (const { event, data } of sse(res.body)) {
    if (event === "end") break;
    if (event === "rpc_error") throw new Error(`stream error: ${data}`);
    if (event !== "update") continue; // heartbeat
    const obs = (JSON.parse(data) as Json).update.observation as Json;
    if (obs.matchState !== "MATCH_STATE_ACTIVE") break;
    const legal = (obs.legalActions ?? []) as Json[];
    if (legal.length === 0) continue;
    const action = legal[Math.floor(Math.random() * legal.length)];
    try {
      await call("POST", `/v1/matches/${matchId}/actions`, token, {
        requestId: randomUUID(),
        expectedVersion: obs.version,
        action,
      });
      actions += 1;
    } catch (err) {
      // 409 STALE_VERSION / 400 NOT_YOUR_TURN: the next update says what is legal now
      if (!(err instanceof ApiError) || ![400, 409].includes(err.http)) throw err;
    }
  }
  return actions;
}

const created = await call("POST", "/v1/matches", apiKey, {
  requestId: randomUUID(),
  rules: { preset },
  players: 2,
});
const matchId = created.match.matchId as string;
const tokens = (created.seatCredentials as Json[]).map((c) => c.token as string);
console.error(`created ${matchId} (${created.match.rules.preset}), seats: ${tokens.length}`);

const perSeat = await Promise.all(tokens.map((token) => playSeat(matchId, token)));
const match = (await call("GET", `/v1/matches/${matchId}`, tokens[0] ?? "")).match as Json;
console.log(
  JSON.stringify({
    transport: "rest",
    matchId,
    state: match.state,
    winnerTeam: match.result?.winnerTeam ?? null,
    scores: match.result?.scores ?? [],
    actions: perSeat,
  }),
);
