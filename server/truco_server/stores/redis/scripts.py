"""The Lua scripts of the Redis adapter, each named by its SHA1 (what ``EVALSHA`` sends).

Each script touches keys of one slot only (its ``KEYS``, which share a hash tag), so every
script runs unchanged on one server, a Sentinel group's primary and a Redis Cluster. A
script runs without interleaving on the server: that is what makes a commit atomic
(DESIGN.md, invariant 2). The bodies are unchanged from the store they replace, so a rolling
update runs the same scripts under the same names; a script added since has a name of its
own.

The exceptions to "one slot" are made only for one server or a Sentinel group's primary
(where any key may be reached): :func:`guarded` runs a script only if the documents its write
belongs to exist (:mod:`.guards`); :data:`FEEDING_CREATE` and :data:`FEEDING_COMMIT` append a
create's or commit's operator events to the owner's stream in the same step.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

__all__ = [
    "ASSIGNMENT_PUT",
    "CHARGING_COMMIT",
    "CHARGING_FEEDING_COMMIT",
    "COMMIT",
    "CREATE",
    "DELIVERY_LOG_PUT_IF",
    "DOC_PUT",
    "DOC_PUT_PARTS",
    "FEEDING_COMMIT",
    "FEEDING_CREATE",
    "LOAD",
    "OUTBOX_DONE",
    "OUTBOX_TAKE",
    "QUEUE_ADD",
    "QUEUE_CLAIM",
    "QUEUE_DUE",
    "QUEUE_FINISH",
    "QUEUE_RELEASE",
    "TICKET_ADD",
    "TICKET_END",
    "TICKET_FORM",
    "TICKET_SETTLE",
    "WEBHOOK_PUT",
    "Script",
    "guarded",
    "spend_rate",
]


@dataclass(frozen=True, slots=True)
class Script:
    """A script: its name (for errors and metrics), its body and the body's SHA1."""

    name: str
    body: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.body.encode()).hexdigest())


CREATE = Script(
    "create",
    """
-- KEYS: match hash, events stream, record list, outbox list
-- ARGV: meta, state, status, owner, created_at, sort_key, summary, maxlen,
--       retention_ttl (0 = none), head, n_events, events..., n_outbox, outbox items...
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
local n = tonumber(ARGV[11])
for i = 1, n do
  redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[8], i .. '-0', 'e', ARGV[11 + i])
end
local m = tonumber(ARGV[12 + n])
for j = 1, m do redis.call('RPUSH', KEYS[4], ARGV[12 + n + j]) end
redis.call('HSET', KEYS[1], 'version', n, 'state', ARGV[2], 'meta', ARGV[1],
           'status', ARGV[3], 'owner', ARGV[4], 'created_at', ARGV[5],
           'updated_at', ARGV[5], 'sort_key', ARGV[6], 'summary', ARGV[7], 'head', ARGV[10])
local ttl = tonumber(ARGV[9])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
  if n > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
end
return n
""",
)

COMMIT = Script(
    "commit",
    """
-- KEYS: match hash, events stream, request records hash, record list, outbox list
-- ARGV: expected_version, state, request_id ('' = none), reply, request_ttl, maxlen,
--       status ('' = unchanged), retention_ttl (0 = status not terminal), updated_at,
--       summary ('' = unchanged), expected head ('' = not checked), new head,
--       doorbell channel ('' = none), record step ('' = none), n_events, events...,
--       n_outbox, outbox items...
-- Returns {0, new_version} | {1, recorded "<version>:<reply>"} | {2, current_version}
--       | {3} when the match does not exist (| {4, seconds} when its charging form's rate
--       is spent).
if redis.call('EXISTS', KEYS[1]) == 0 then return {3} end
if ARGV[3] ~= '' then
  local prev = redis.call('HGET', KEYS[3], ARGV[3])
  if prev then return {1, prev} end
end
local cur = tonumber(redis.call('HGET', KEYS[1], 'version'))
if cur ~= tonumber(ARGV[1]) then return {2, cur} end
if ARGV[11] ~= '' then
  local head = redis.call('HGET', KEYS[1], 'head')
  if head and head ~= ARGV[11] then return {2, cur} end
end
local n = tonumber(ARGV[15])
for i = 1, n do
  redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[6], (cur + i) .. '-0', 'e', ARGV[15 + i])
end
local m = tonumber(ARGV[16 + n])
for j = 1, m do redis.call('RPUSH', KEYS[5], ARGV[16 + n + j]) end
local newv = cur + n
redis.call('HSET', KEYS[1], 'version', newv, 'state', ARGV[2], 'updated_at', ARGV[9], 'head', ARGV[12])
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'status', ARGV[7]) end
if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], 'summary', ARGV[10]) end
if ARGV[14] ~= '' then redis.call('RPUSH', KEYS[4], ARGV[14]) end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[3], ARGV[3], newv .. ':' .. ARGV[4])
  redis.call('EXPIRE', KEYS[3], ARGV[5])
end
local ttl = tonumber(ARGV[8])
if ttl > 0 then
  for k = 1, 5 do redis.call('EXPIRE', KEYS[k], ttl) end
end
if ARGV[13] ~= '' and n > 0 then
  local lens, evs = {}, {}
  for i = 1, n do
    evs[i] = ARGV[15 + i]
    lens[i] = string.len(evs[i])
  end
  redis.call('SPUBLISH', ARGV[13], cur .. ':' .. table.concat(lens, ',') .. ':' .. table.concat(evs))
end
return {0, newv}
""",
)


def _feeding(script: Script, feed_at: str, key: int) -> Script:
    """``script`` that, when it succeeds (its last line, a ``return``), also appends operator
    events to their owner's stream, ``KEYS[key]``: from ARGV index ``feed_at`` (a Lua
    expression over the script's locals), the stream's approximate length bound, the number of
    events, then the events. For one server or a Sentinel group's primary only: the stream is
    in the operator's slot (``MatchLog.appends_feed``)."""
    body, _, last = script.body.rstrip().rpartition("\n")
    assert last.startswith("return "), script.name
    feed = f"""
local feed_at = {feed_at}
for f = 1, tonumber(ARGV[feed_at + 1]) do
  redis.call('XADD', KEYS[{key}], 'MAXLEN', '~', ARGV[feed_at], '*', 'e', ARGV[feed_at + 1 + f])
end
"""
    return Script(f"{script.name}_feeding", f"{body}{feed}{last}\n")


FEEDING_CREATE = _feeding(CREATE, "13 + n + m", 5)
"""CREATE, then the operator events of the creation (KEYS[5]: the owner's stream)."""
FEEDING_COMMIT = _feeding(COMMIT, "17 + n + m", 6)
"""COMMIT, then the operator events of the commit (KEYS[6]: the owner's stream)."""


def spend_rate(key: str, per_second: str, burst: str, cost: str, refused: str) -> str:
    """Lua that spends ``cost`` of the rate at ``key`` (the generic cell rate algorithm on the
    server's ``TIME``: the key holds the theoretical arrival time and expires when the
    allowance is full again), or, when it has not that much left, runs ``refused`` (a
    ``return``) with ``rate_wait``, the seconds until it would have. The arguments are Lua
    expressions."""
    return f"""
local rate_t = redis.call('TIME')
local rate_now = tonumber(rate_t[1]) + tonumber(rate_t[2]) / 1000000
local rate_per, rate_burst, rate_cost = tonumber({per_second}), tonumber({burst}), tonumber({cost})
local rate_tat = tonumber(redis.call('GET', {key}) or '0')
if rate_tat < rate_now then rate_tat = rate_now end
rate_tat = rate_tat + rate_cost / rate_per
local rate_wait = rate_tat - rate_now - rate_burst / rate_per
if rate_wait > 0.000001 then {refused} end
local rate_px = math.max(1, math.ceil((rate_tat - rate_now) * 1000))
redis.call('SET', {key}, string.format('%.6f', rate_tat), 'PX', rate_px)
"""


_WRITES_BEGIN = "local n = tonumber(ARGV[15])\n"
"""The first line of COMMIT after its checks (missing, duplicate, version, head)."""


def _charging(script: Script) -> Script:
    """COMMIT (or its feeding form) that, after its checks and before it writes, spends a rate:
    ``KEYS[#KEYS]``, its per-second, burst and cost the last three ARGV; when the rate is
    spent it writes nothing and answers ``{4, seconds to wait}``. One server or a Sentinel
    group's primary only: the rate is in a slot of its own (``MatchLog.charges``)."""
    head, found, tail = script.body.partition(_WRITES_BEGIN)
    assert found, script.name
    gate = spend_rate(
        "KEYS[#KEYS]", "ARGV[#ARGV - 2]", "ARGV[#ARGV - 1]", "ARGV[#ARGV]",
        "return {4, string.format('%.6f', rate_wait)}",
    )  # fmt: skip
    return Script(f"{script.name}_charging", f"{head}{gate}{found}{tail}")


CHARGING_COMMIT = _charging(COMMIT)
"""COMMIT spending the acting seat's rate of actions (``{4, wait}`` when it is spent)."""
CHARGING_FEEDING_COMMIT = _charging(FEEDING_COMMIT)
"""FEEDING_COMMIT spending the acting seat's rate of actions."""

LOAD = Script(
    "load",
    """
-- KEYS: match hash. Reply: its version, state, meta, status, updated_at and head (nil when absent)
return redis.call('HMGET', KEYS[1], 'version', 'state', 'meta', 'status', 'updated_at', 'head')
""",
)
"""A match's stored state, read as a script so that it goes with the batch of its event-loop
turn (:mod:`.batch`) instead of through redis-py's client: a new match's two subscriptions,
each loading it, cost the worker 0.1-0.2 ms less (docs/benchmarks.md, "The compiled
build")."""


OUTBOX_TAKE = Script(
    "outbox_take",
    """
-- KEYS: outbox list, relay lock.  ARGV: token, lease (ms), most items.
-- The outbox's first items and the lock, or false when another relay holds the lock.
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) == false then return false end
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[3]) - 1)
if #items == 0 then redis.call('DEL', KEYS[2]) end
return items
""",
)

OUTBOX_DONE = Script(
    "outbox_done",
    """
-- KEYS: outbox list, relay lock.  ARGV: token, items relayed.
-- Drops the relayed items and the lock, if the lock is still this relay's.
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('LTRIM', KEYS[1], tonumber(ARGV[2]), -1)
redis.call('DEL', KEYS[2])
return 1
""",
)

QUEUE_ADD = Script(
    "queue_add",
    """
-- KEYS: due zset, data hash of the item's shard.  ARGV: item, due (ms), mode, data.
-- mode 'lower': the item's due time becomes at most `due` (a new item is added), data
--   replaced when given; mode 'new': added only if the item has no data yet (returns 0
--   when it had: an item is queued once).
if ARGV[3] == 'new' then
  if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[4]) == 0 then return 0 end
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return 1
end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[4]) end
redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
return 1
""",
)

QUEUE_CLAIM = Script(
    "queue_claim",
    """
-- KEYS: due zset, data hash.  ARGV: now (ms), lease (ms), limit.
-- Items due by now, each pushed to now + lease (claimed until then); returns
-- {item, due score, lease score, data ('' = none), ...}.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0,
                       tonumber(ARGV[3]))
local out = {}
local lease = tonumber(ARGV[1]) + tonumber(ARGV[2])
for i = 1, #due, 2 do
  redis.call('ZADD', KEYS[1], 'XX', lease, due[i])
  out[#out + 1] = due[i]
  out[#out + 1] = due[i + 1]
  out[#out + 1] = lease
  out[#out + 1] = redis.call('HGET', KEYS[2], due[i]) or ''
end
return out
""",
)

QUEUE_FINISH = Script(
    "queue_finish",
    """
-- KEYS: due zset, data hash.  ARGV: item, lease it was claimed with, next due ('' = done:
--   drop it and its data), new data ('' = unchanged), mode.
-- mode 'lower': if the due time was lowered meanwhile (a commit registered an earlier
--   wakeup), the lower of the two stays; a missing item is re-added.  mode 'owned': nothing
--   happens unless the claim still holds (another reader took over an expired lease).
-- Returns 1 when the claim still held.
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
local held = cur and tonumber(cur) == tonumber(ARGV[2])
if not held then
  if ARGV[5] == 'owned' then return 0 end
  if ARGV[3] ~= '' then redis.call('ZADD', KEYS[1], 'LT', ARGV[3], ARGV[1]) end
  return 0
end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[4]) end
end
return 1
""",
)

QUEUE_RELEASE = Script(
    "queue_release",
    """
-- KEYS: due zset, data hash of the item's shard.  ARGV: item, data.
-- Drops the item and its data if its data is still ARGV[2] (nobody queued it again since).
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
""",
)

QUEUE_DUE = Script(
    "queue_due",
    """
-- KEYS: the due zsets of a queue's shards, all on this server.  ARGV: now (ms).
-- The indexes (0-based) of the shards with an item due by now.
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('ZCOUNT', key, '-inf', ARGV[1]) > 0 then out[#out + 1] = i - 1 end
end
return out
""",
)

WEBHOOK_PUT = Script(
    "webhook_put",
    """
-- KEYS: the operator's webhooks hash.  ARGV: webhook id, data, most webhooks.
-- Stores (or replaces) a webhook; 0 when the operator already has the most it may.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
""",
)

DOC_PUT = Script(
    "doc_put",
    """
-- KEYS: a document's hash (fields v = version, d = data).  ARGV: expected version, data.
-- Compare-and-set: writes the data and version + 1 only if the version is the expected one
-- (0: no document yet); returns 1 when written, 0 when the version differs.
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'v', v + 1, 'd', ARGV[2])
return 1
""",
)

DOC_PUT_PARTS = Script(
    "doc_put_parts",
    """
-- KEYS: a document's hash (field v = version, one field per part).  ARGV: expected version,
-- n, then n part names and data in turn, then the names of parts to remove.
-- Compare-and-set: only if the version is the expected one (0: no document yet), writes the
-- n parts, removes the others named and sets the version + 1; returns 1 when written, 0 when
-- the version differs. Fields go in chunks (a Lua call takes a bounded number of arguments).
-- Never run guarded: it reads its ARGV to the end.
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then
  return 0
end
local n = tonumber(ARGV[2])
local chunk = {}
for i = 3, 2 + 2 * n do
  chunk[#chunk + 1] = ARGV[i]
  if #chunk == 1000 then
    redis.call('HSET', KEYS[1], unpack(chunk))
    chunk = {}
  end
end
if #chunk > 0 then
  redis.call('HSET', KEYS[1], unpack(chunk))
end
chunk = {}
for i = 3 + 2 * n, #ARGV do
  chunk[#chunk + 1] = ARGV[i]
  if #chunk == 1000 then
    redis.call('HDEL', KEYS[1], unpack(chunk))
    chunk = {}
  end
end
if #chunk > 0 then
  redis.call('HDEL', KEYS[1], unpack(chunk))
end
redis.call('HSET', KEYS[1], 'v', v + 1)
return 1
""",
)

DELIVERY_LOG_PUT_IF = Script(
    "delivery_log_put_if",
    """
-- KEYS: a webhook's deliveries hash, their order zset, the operator's webhooks hash.
-- ARGV: delivery id, data, event time (ms), deliveries kept, webhook id.
-- Records a delivery's state (the oldest beyond the limit go) if the webhook is registered
-- (1); else drops the delivery log it left (0).
if redis.call('HEXISTS', KEYS[3], ARGV[5]) == 0 then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if extra > 0 then
  local old = redis.call('ZRANGE', KEYS[2], 0, extra - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, extra - 1)
  redis.call('HDEL', KEYS[1], unpack(old))
end
return 1
""",
)

ASSIGNMENT_PUT = Script(
    "assignment_put",
    """
-- KEYS: a bot's assignments hash.  ARGV: match id, data.  (Run guarded: see `guarded`.)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
""",
)

GONE = b"gone"
"""First element of a guarded script's reply when a document it requires is missing."""

_GUARD = """
-- Guard (scripts.guarded): ARGV[#ARGV] is where the guard's arguments start, after the
-- script's own: g, the number of required keys (the last g KEYS); m, the number of commands
-- to run first; each command as its word count, then its words. A required key missing:
-- {'gone', its position among them}, nothing written; else the commands, then the script.
local guard_at = tonumber(ARGV[#ARGV])
local guard_n = tonumber(ARGV[guard_at])
for guard_i = 1, guard_n do
  if redis.call('EXISTS', KEYS[#KEYS - guard_n + guard_i]) == 0 then return {'gone', guard_i} end
end
local guard_p = guard_at + 2
for _ = 1, tonumber(ARGV[guard_at + 1]) do
  local guard_c = tonumber(ARGV[guard_p])
  redis.call(unpack(ARGV, guard_p + 1, guard_p + guard_c))
  guard_p = guard_p + guard_c + 1
end
"""

_guarded: dict[str, Script] = {}


def guarded(script: Script) -> Script:
    """``script`` run only if the keys it is given after its own exist, after the commands
    that must precede it (its ``before``: on one server they join the same atomic step). For
    one server or a Sentinel group's primary only: the required keys are in other slots."""
    found = _guarded.get(script.sha)
    if found is None:
        found = _guarded[script.sha] = Script(f"{script.name}_if", _GUARD + script.body)
    return found


TICKET_ADD = Script(
    "ticket_add",
    """
-- KEYS: ticket hash, waiting zset, expiry zset, players hash (one pool's slot).
-- ARGV: ticket id, data, created (ms), expires (ms), most waiting, players (newline-separated),
--       n players, players...
-- {0}: added | {1, state, data, result, formation}: the id exists | {2, player, its ticket}:
-- a player has a live ticket | {3}: the line is full.
if redis.call('EXISTS', KEYS[1]) == 1 then
  local t = redis.call('HMGET', KEYS[1], 'state', 'data', 'result', 'formation')
  return {1, t[1] or '', t[2] or '', t[3] or '', t[4] or ''}
end
local n = tonumber(ARGV[7])
for i = 1, n do
  local other = redis.call('HGET', KEYS[4], ARGV[7 + i])
  if other then return {2, ARGV[7 + i], other} end
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return {3} end
redis.call('HSET', KEYS[1], 'state', 'waiting', 'data', ARGV[2], 'players', ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
for i = 1, n do redis.call('HSET', KEYS[4], ARGV[7 + i], ARGV[1]) end
return {0}
""",
)

_LEAVE = """
local function leave(ticket, id, players_key)
  local players = redis.call('HGET', ticket, 'players') or ''
  for p in string.gmatch(players, '[^\\n]+') do
    if redis.call('HGET', players_key, p) == id then redis.call('HDEL', players_key, p) end
  end
end
"""

TICKET_END = Script(
    "ticket_end",
    _LEAVE
    + """
-- KEYS: ticket hash, waiting zset, expiry zset, players hash.
-- ARGV: ticket id, new state, retention (s), now (ms; '' = whenever: a cancel).
-- Ends a waiting ticket (an expiry only once due); returns {state, data, result, formation}
-- afterwards, {} when there is no such ticket.
local t = redis.call('HMGET', KEYS[1], 'state', 'data', 'result', 'formation')
if not t[1] then return {} end
if t[1] == 'waiting' then
  local due = true
  if ARGV[4] ~= '' then
    local at = redis.call('ZSCORE', KEYS[3], ARGV[1])
    due = at ~= false and tonumber(at) <= tonumber(ARGV[4])
  end
  if due then
    redis.call('HSET', KEYS[1], 'state', ARGV[2])
    redis.call('ZREM', KEYS[2], ARGV[1])
    redis.call('ZREM', KEYS[3], ARGV[1])
    leave(KEYS[1], ARGV[1], KEYS[4])
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    t[1] = ARGV[2]
  end
end
return {t[1], t[2] or '', t[3] or '', t[4] or ''}
""",
)

TICKET_FORM = Script(
    "ticket_form",
    """
-- KEYS: waiting zset, expiry zset, formations hash, pending zset, the tickets' hashes...
-- ARGV: formation id, its data, now (ms), the tickets' ids... (in the order of their keys)
-- Takes every ticket into the formation if each waits unexpired (or is in this formation
-- already: a repeated call); else changes nothing. Returns the ids that did not.
local bad = {}
for i = 5, #KEYS do
  local id = ARGV[i - 1]
  local t = redis.call('HMGET', KEYS[i], 'state', 'formation')
  local ours = t[1] == 'forming' and t[2] == ARGV[1]
  local at = redis.call('ZSCORE', KEYS[2], id)
  local waits = t[1] == 'waiting' and at ~= false and tonumber(at) > tonumber(ARGV[3])
  if not (ours or waits) then bad[#bad + 1] = id end
end
if #bad > 0 then return bad end
for i = 5, #KEYS do
  local id = ARGV[i - 1]
  redis.call('HSET', KEYS[i], 'state', 'forming', 'formation', ARGV[1])
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
end
redis.call('HSETNX', KEYS[3], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[4], 'NX', ARGV[3], ARGV[1])
return bad
""",
)

TICKET_SETTLE = Script(
    "ticket_settle",
    _LEAVE
    + """
-- KEYS: formations hash, pending zset, players hash, the tickets' hashes...
-- ARGV: formation id, retention (s), the tickets' ids..., their results... (key order)
-- Marks the tickets matched with their results and drops the formation; 0 when it was
-- settled already.
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
local m = #KEYS - 3
for k = 1, m do
  local key, id = KEYS[3 + k], ARGV[2 + k]
  redis.call('HSET', key, 'state', 'matched', 'result', ARGV[2 + m + k])
  leave(key, id, KEYS[3])
  redis.call('EXPIRE', key, ARGV[2])
end
return 1
""",
)
