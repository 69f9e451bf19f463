/**
 * Lua scripts of RedisOidcPayloads. A record and all of its index entries change in one script, so
 * an index never points at a record that says otherwise, even with concurrent writers.
 *
 * Record hash fields: p payload JSON, e expiry (epoch seconds, '' = none), c consumed-at, and the
 * values it is indexed under: u uid, uc user code, g grant id, a account id, cl client ids (JSON;
 * a and cl on Sessions and Grants only), each only when the record has it (records from before
 * 2026-11-30 may carry them empty).
 * Keys are built from the tenant's index prefix (ARGV[1], "<prefix>:<tenant>:oidx:"), so a script
 * can only touch keys of the tenant it was called for.
 *
 * Only the listed models (LISTED_MODELS: sessions and grants) are indexed by model: a sorted set
 * of every row that only listing reads. Access and refresh tokens, codes and interactions were
 * written into one too until issue 17, five commands of an upsert's eleven for a set nothing read;
 * entries left in those sets by earlier versions are never read again and leave with the set's
 * TTL.
 */
import { LISTED_MODELS } from '../types.js';
import { LuaScript } from './client.js';

/**
 * When a grant's set of artefacts is pruned (UPSERT's pruneGrant): past `from` members, every
 * `every`th addition checks `sample` random members; a sample with fewer than sample/4 to drop puts
 * the next check off until the set is half as large again.
 */
export const GRANT_PRUNE = { from: 32, every: 8, sample: 16 } as const;

/** `listed[model]` is true for the models with a per-model index (Lua table literal). */
const LISTED = `local listed = {${LISTED_MODELS.map((m) => `${m} = true`).join(', ')}}
`;

/**
 * A record's indexed values as HMGET(rec, unpack(FIELDS)) reads them (`old`).
 * unindexFrom(old, idx, model, id, keep) removes the index entries of `old` that `keep` (the values
 * the record is about to be written with, same order) does not carry again; keep = nil removes them
 * all. A re-save that keeps its uid, grant, account and clients (a session's on every silent
 * authorization) then removes nothing: its entries are renewed where they are (issue 17).
 */
const UNINDEX = `${LISTED}
local FIELDS = {'u', 'uc', 'g', 'a', 'cl'}
local function list(json)
  if not json or json == '' or json == '[]' then return {} end
  return cjson.decode(json)
end
local function dropped(old, keep, i) return old[i] and old[i] ~= '' and (not keep or keep[i] ~= old[i]) end
local function unindexFrom(old, idx, model, id, keep)
  if dropped(old, keep, 1) then
    local k = idx .. 'uid:' .. model .. ':' .. old[1]
    if redis.call('GET', k) == id then redis.call('DEL', k) end
  end
  if dropped(old, keep, 2) then
    local k = idx .. 'code:' .. model .. ':' .. old[2]
    if redis.call('GET', k) == id then redis.call('DEL', k) end
  end
  if dropped(old, keep, 3) then redis.call('SREM', idx .. 'grant:' .. old[3], model .. ':' .. id) end
  -- A record written again stays in its model's index: ZADD moves its score.
  if not keep and listed[model] then redis.call('ZREM', idx .. 'model:' .. model, id) end
  local owner = idx .. string.lower(model)
  if dropped(old, keep, 4) then redis.call('ZREM', owner .. '-account:' .. old[4], id) end
  if dropped(old, keep, 5) then
    local kept = {}
    if keep then for _, c in ipairs(list(keep[5])) do kept[c] = true end end
    for _, c in ipairs(list(old[5])) do
      if not kept[c] then redis.call('ZREM', owner .. '-client:' .. c, id) end
    end
  end
end
local function unindex(rec, idx, model, id)
  unindexFrom(redis.call('HMGET', rec, unpack(FIELDS)), idx, model, id, nil)
end
`;

/** pruneGrant(k, nk, recPrefix, grant, added): a grant's set kept bounded as its records expire. */
const PRUNE = `
-- A grant's set gains a member with every code and token issued under it, and Redis expires the
-- records without telling the set: a user who renews silently every few minutes would grow it by
-- two members a renewal for as long as the grant lives (memory flat under long load). Past
-- ${GRANT_PRUNE.from} members, every ${GRANT_PRUNE.every}th addition checks ${GRANT_PRUNE.sample} random picks (a negative count: repeats allowed,
-- and O(count) where a positive one copies a small set whole) and drops those whose record is
-- gone or no longer carries the grant (revokeGrantScript's own test, so it revokes the same).
-- A sample with fewer than ${GRANT_PRUNE.sample / 4} to drop means the set is mostly live (a refresh token's
-- rotations, consumed but kept until they expire): then the next check waits until the set is half
-- as large again (nk, "grant-prune:<grant>", dying with the set), so a large live set costs one
-- SCARD an addition and a GET every ${GRANT_PRUNE.every}th. The set stays a set, so an instance of an earlier
-- version reads and writes it as before (a rolling upgrade).
-- \`added\` members just joined the set (one by one in an upsert, together in consumeAndIssue): the
-- check runs when the size passed a multiple of ${GRANT_PRUNE.every}.
local function pruneGrant(k, nk, recPrefix, grant, added)
  local n = redis.call('SCARD', k)
  if n <= ${GRANT_PRUNE.from} or math.floor(n / ${GRANT_PRUNE.every}) == math.floor((n - added) / ${GRANT_PRUNE.every}) then return end
  local wait = tonumber(redis.call('GET', nk))
  if wait and n < wait then return end
  local dropped = 0
  for _, m in ipairs(redis.call('SRANDMEMBER', k, -${GRANT_PRUNE.sample})) do
    if redis.call('HGET', recPrefix .. m, 'g') ~= grant then dropped = dropped + redis.call('SREM', k, m) end
  end
  if dropped < ${GRANT_PRUNE.sample / 4} then
    local at = redis.call('EXPIRETIME', k)
    if at > 0 then redis.call('SET', nk, n + math.floor(n / 2), 'EXAT', at) else redis.call('SET', nk, n + math.floor(n / 2)) end
  end
end
`;

/**
 * upsert(rec, idx, model, id, payload, exp, now, uid, code, grant, acct, clients): writes one record
 * and its index entries (exp '' = none, now a number, clients a JSON array). Like the SQL upsert it
 * keeps the consumed flag.
 */
const UPSERT = `
${PRUNE}local function upsert(rec, idx, model, id, payload, expArg, now, uid, code, grant, acct, clients)
  local exp = tonumber(expArg)
  local old = redis.call('HMGET', rec, unpack(FIELDS))
  if exp and exp <= now then
    unindexFrom(old, idx, model, id, nil)
    redis.call('DEL', rec)
    return 0
  end
  -- Only the values a record has are stored: a payload past 64 bytes makes the hash a table, where
  -- each field costs ~75 bytes even when empty (an access token: 819 -> 528 bytes). A value the
  -- record no longer has is deleted; a missing field reads as empty everywhere.
  local stored = old[1] or old[2] or old[3] or old[4] or old[5]
  if not stored and uid == '' and code == '' and acct == '' and clients == '[]' then
    -- A new token or code, the common case: nothing to unindex, one call, no Lua tables.
    if grant ~= '' then redis.call('HSET', rec, 'p', payload, 'e', expArg, 'g', grant)
    else redis.call('HSET', rec, 'p', payload, 'e', expArg) end
  else
    local values = {uid, code, grant, acct, clients}
    if stored then unindexFrom(old, idx, model, id, values) end
    local set, gone = {'p', payload, 'e', expArg}, {}
    for i, name in ipairs(FIELDS) do
      local v = values[i]
      if v ~= '' and (name ~= 'cl' or v ~= '[]') then
        set[#set + 1] = name
        set[#set + 1] = v
      elseif old[i] then
        gone[#gone + 1] = name
      end
    end
    redis.call('HSET', rec, unpack(set))
    if #gone > 0 then redis.call('HDEL', rec, unpack(gone)) end
  end
  if exp then redis.call('EXPIREAT', rec, exp) else redis.call('PERSIST', rec) end

  -- An index key lives as long as its longest-lived entry: GT only ever extends it.
  local function cover(k, fresh)
    if not exp then redis.call('PERSIST', k)
    elseif fresh then redis.call('EXPIREAT', k, exp)
    else redis.call('EXPIREAT', k, exp, 'GT') end
  end
  local function pointer(k)
    if exp then redis.call('SET', k, id, 'EXAT', exp) else redis.call('SET', k, id) end
  end
  -- Sorted sets scored by expiry. A member already there only moves (a re-save); a new one first
  -- drops the expired members, and when it is then the only one the key's life is its own.
  local function zindex(k)
    if redis.call('ZADD', k, exp or '+inf', id) == 0 then return cover(k, false) end
    redis.call('ZREMRANGEBYSCORE', k, '-inf', now)
    cover(k, redis.call('ZCARD', k) == 1)
  end

  if uid ~= '' then pointer(idx .. 'uid:' .. model .. ':' .. uid) end
  if code ~= '' then pointer(idx .. 'code:' .. model .. ':' .. code) end
  if grant ~= '' then
    local k = idx .. 'grant:' .. grant
    local fresh = redis.call('EXISTS', k) == 0
    local member = model .. ':' .. id
    -- rec is "<prefix>:<tenant>:oidc:" .. member: the other members' records share its prefix.
    if redis.call('SADD', k, member) == 1 and not fresh then pruneGrant(k, idx .. 'grant-prune:' .. grant, string.sub(rec, 1, #rec - #member), grant, 1) end
    cover(k, fresh)
  end
  if listed[model] then zindex(idx .. 'model:' .. model) end
  -- Sessions and grants by account and client: 'session-account:<a>', 'grant-client:<c>', ...
  local owner = idx .. string.lower(model)
  if acct ~= '' then zindex(owner .. '-account:' .. acct) end
  for _, c in ipairs(list(clients)) do zindex(owner .. '-client:' .. c) end
  return 1
end

-- The row whose ROW_ARGS arguments start at ARGV[a]: model, id, payload, exp ('' = none), uid,
-- userCode, grantId, accountId, clientIds (JSON array).
local function upsertRow(rec, idx, now, a)
  return upsert(rec, idx, ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], now, ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7], ARGV[a + 8])
end
`;

/** How many ARGV one row takes in upsertScript and consumeAndUpsertScript (after idx and now). */
export const ROW_ARGS = 9;

/** KEYS the records; ARGV: idx, now, then ROW_ARGS per record, in KEYS' order (upsertRow). */
export const upsertScript = new LuaScript(`${UNINDEX}${UPSERT}
local now = tonumber(ARGV[2])
for i = 1, #KEYS do upsertRow(KEYS[i], ARGV[1], now, 3 + (i - 1) * ${ROW_ARGS}) end
return 1
`);

/** KEYS[1] record; ARGV: idx, model, id. */
export const destroyScript = new LuaScript(`${UNINDEX}
unindex(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return redis.call('DEL', KEYS[1])
`);

/**
 * consume(rec, at): marks the record consumed at `at`. Never creates a record that is not there (or
 * expired). 1 when this call consumed it, 0 when it was consumed already or is not there (inside
 * one script: atomic).
 */
const CONSUME = `
local function consume(rec, at)
  if redis.call('EXISTS', rec) == 0 then return 0 end
  return redis.call('HSETNX', rec, 'c', at)
end
`;

/** KEYS[1] record; ARGV: consumed-at. */
export const consumeScript = new LuaScript(`${CONSUME}
return consume(KEYS[1], ARGV[1])
`);

/**
 * KEYS[1] the record to consume, KEYS[2..] the records to write; ARGV: idx, now (the consumed-at
 * value too), then ROW_ARGS per record to write, in KEYS' order. Consumes as consumeScript does and
 * writes the records only when it did: 1, or 0 with nothing changed.
 */
export const consumeAndUpsertScript = new LuaScript(`${UNINDEX}${UPSERT}${CONSUME}
if consume(KEYS[1], ARGV[2]) == 0 then return 0 end
local now = tonumber(ARGV[2])
for i = 2, #KEYS do upsertRow(KEYS[i], ARGV[1], now, 3 + (i - 2) * ${ROW_ARGS}) end
return 1
`);

/** How many ARGV one record takes in consumeAndIssueScript (after idx and now). */
const ISSUE_ARGS = 4;

/**
 * consumeAndUpsertScript for the common case of the refresh grant and the code exchange (issue 17):
 * the records written are new, expire, and are indexed under their grant only (access and refresh
 * tokens, codes). With nothing to unindex, each is one HSET and one EXPIREAT, and the members of
 * one grant join its set in one SADD: about ten commands where the general script runs seventeen,
 * and none of its function definitions (Redis runs a script's body, definitions included, on
 * every call). KEYS[1] the record to consume, KEYS[2..] the records to write; ARGV: idx, now, then
 * ISSUE_ARGS per record in KEYS' order: payload, exp, grant id ('' = none), member ("<model>:<id>").
 * -1 with nothing changed when a record to write exists already (the caller then runs the general
 * script), else as consumeAndUpsertScript: 1, or 0 with nothing changed.
 */
export const consumeAndIssueScript = new LuaScript(`${PRUNE}${CONSUME}
if redis.call('EXISTS', unpack(KEYS, 2)) > 0 then return -1 end
if consume(KEYS[1], ARGV[2]) == 0 then return 0 end
local idx = ARGV[1]
local sets, order = {}, {}
for i = 2, #KEYS do
  local a = 3 + (i - 2) * ${ISSUE_ARGS}
  local rec, exp, grant, member = KEYS[i], tonumber(ARGV[a + 1]), ARGV[a + 2], ARGV[a + 3]
  if grant ~= '' then redis.call('HSET', rec, 'p', ARGV[a], 'e', ARGV[a + 1], 'g', grant)
  else redis.call('HSET', rec, 'p', ARGV[a], 'e', ARGV[a + 1]) end
  redis.call('EXPIREAT', rec, exp)
  if grant ~= '' then
    local set = sets[grant]
    if not set then
      set = {members = {}, exp = exp, recPrefix = string.sub(rec, 1, #rec - #member)}
      sets[grant] = set
      order[#order + 1] = grant
    end
    set.members[#set.members + 1] = member
    if exp > set.exp then set.exp = exp end
  end
end
-- As upsert's grant index: the set lives as long as its longest-lived member (GT only extends it).
for _, grant in ipairs(order) do
  local set, k = sets[grant], idx .. 'grant:' .. grant
  local fresh = redis.call('EXISTS', k) == 0
  local added = redis.call('SADD', k, unpack(set.members))
  if added > 0 and not fresh then pruneGrant(k, idx .. 'grant-prune:' .. grant, set.recPrefix, grant, added) end
  if fresh then redis.call('EXPIREAT', k, set.exp) else redis.call('EXPIREAT', k, set.exp, 'GT') end
end
return 1
`);

/**
 * KEYS[1] a secondary key (uid or user code); ARGV: the model's record prefix
 * ("<prefix>:<tenant>:oidc:<model>:"), the record field holding the looked-up value, the value.
 * Follows the pointer and reads the record in one round trip (two commands' worth of client work
 * and a round trip less on every userinfo and refresh, which find the session by uid: issue 17),
 * and checks the record still carries the value (it may have changed): {payload, expiry, consumed}
 * or nil.
 */
export const findByPointerScript = new LuaScript(`
local id = redis.call('GET', KEYS[1])
if not id then return nil end
local r = redis.call('HMGET', ARGV[1] .. id, 'p', 'e', 'c', ARGV[2])
if not r[1] or r[4] ~= ARGV[3] then return nil end
return {r[1], r[2], r[3]}
`);

/**
 * KEYS[1] grant set; ARGV: idx, record prefix ("<prefix>:<tenant>:oidc:"), grant id. Deletes every
 * artefact still carrying the grant (members are "<model>:<id>"), then the set.
 */
export const revokeGrantScript = new LuaScript(`${UNINDEX}
local idx, recPrefix, grant = ARGV[1], ARGV[2], ARGV[3]
local n = 0
for _, m in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local sep = string.find(m, ':', 1, true)
  local model, id = string.sub(m, 1, sep - 1), string.sub(m, sep + 1)
  local rec = recPrefix .. model .. ':' .. id
  if redis.call('HGET', rec, 'g') == grant then
    unindex(rec, idx, model, id)
    n = n + redis.call('DEL', rec)
  end
end
redis.call('DEL', KEYS[1], idx .. 'grant-prune:' .. grant)
return n
`);

/**
 * KEYS[1] the tenant's marker that its grants are indexed by account and client; ARGV: idx, record
 * prefix, now. Grants saved before those indexes existed carry no account or client on the record:
 * this indexes them once, from their payloads, so that a user's erasure finds every grant.
 */
export const indexOldGrantsScript = new LuaScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local idx, recPrefix, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local n = 0
local function zindex(k, id, e)
  local fresh = redis.call('EXISTS', k) == 0
  redis.call('ZADD', k, e == '' and '+inf' or e, id)
  if e == '' then redis.call('PERSIST', k)
  elseif fresh then redis.call('EXPIREAT', k, tonumber(e))
  else redis.call('EXPIREAT', k, tonumber(e), 'GT') end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', idx .. 'model:Grant', '(' .. now, '+inf')) do
  local rec = recPrefix .. 'Grant:' .. id
  local f = redis.call('HMGET', rec, 'p', 'e', 'a', 'cl')
  if f[1] and (not f[3] or f[3] == '') and (not f[4] or f[4] == '' or f[4] == '[]') then
    local ok, p = pcall(cjson.decode, f[1])
    if ok and type(p) == 'table' then
      local acct = type(p.accountId) == 'string' and p.accountId or ''
      local client = type(p.clientId) == 'string' and p.clientId or ''
      redis.call('HSET', rec, 'a', acct, 'cl', client ~= '' and ('[' .. cjson.encode(client) .. ']') or '[]')
      if acct ~= '' then zindex(idx .. 'grant-account:' .. acct, id, f[2] or '') end
      if client ~= '' then zindex(idx .. 'grant-client:' .. client, id, f[2] or '') end
      n = n + 1
    end
  end
end
redis.call('SET', KEYS[1], '1')
return n
`);
