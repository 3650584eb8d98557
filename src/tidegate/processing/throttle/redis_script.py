"""The Lua script deciding one batch atomically on Redis (see `redis_store.py`).

Keys: KEYS[1] the watermark (a string), KEYS[2] the index of live buckets (a sorted
set, member = bucket id, score = newest admission + window), KEYS[3] a hash holding
every small bucket inline, KEYS[4..] one list key per bucket of the batch, used only
by busy buckets (bucket id = list key without its first `cut` bytes).

A bucket is a sequence of runs, oldest first: admissions in the same millisecond share
a run `time:count`, so none is lost and none needs a member of its own. A small bucket
is one hash field, `total|time:count,time:count,...`; reading and rewriting all of
them costs one HMGET and one HSET per batch, whatever the number of buckets. A bucket
whose runs outgrow `spill` bytes moves to its own list (hash field `L`) of elements
`time:count:cumulative` (`cumulative` numbers admissions since the list started, so
the live total is `cum(back) - cum(front) + count(front)`, read at the two ends).

ARGV: window_ms, threshold, max_keys, ttl_grace_ms, mode, now, spill, cut, then one
group per run of consecutive events of one bucket: its KEYS index, its event count
and, in mode `e`, its event time. Modes: `s` server time (Redis TIME, one timeline for
every worker), `c` the client's time `now` for the whole batch, `e` event time.

Returns {watermark, keys tracked, result per group}, a result being the number of the
group's events admitted (its first ones), or -1 when the key was new and the key cap
was reached (all its events pass, unrecorded).
"""

from __future__ import annotations

import hashlib
from typing import Final

__all__ = ["THROTTLE_SCRIPT", "THROTTLE_SCRIPT_SHA"]

THROTTLE_SCRIPT: Final = r"""
local window = tonumber(ARGV[1])
local threshold = tonumber(ARGV[2])
local max_keys = tonumber(ARGV[3])
local grace = tonumber(ARGV[4])
local mode = ARGV[5]
local spill = tonumber(ARGV[7])
local cut = tonumber(ARGV[8])
local wkey, ikey, hkey = KEYS[1], KEYS[2], KEYS[3]
local eager = mode == 'e'

local function fmt(n) return string.format('%d', n) end
local function parse3(run)
  local t, c, cum = string.match(run, '^(%d+):(%d+):(%d+)$')
  return tonumber(t), tonumber(c), tonumber(cum)
end

local W = tonumber(redis.call('GET', wkey) or '0')
local reading = nil
if mode == 's' then
  local now = redis.call('TIME')
  reading = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
elseif mode == 'c' then
  reading = tonumber(ARGV[6])
end
if reading ~= nil and reading > W then W = reading end
local cutoff = W - window

-- Inline buckets of this batch, read in one go.
local fields, vals = {}, {}
local nkeys = #KEYS
for i = 4, nkeys do fields[i] = string.sub(KEYS[i], cut + 1) end
for s = 4, nkeys, 4000 do
  local e = math.min(s + 3999, nkeys)
  local part = redis.call('HMGET', hkey, unpack(fields, s, e))
  for j = 1, #part do vals[s + j - 1] = part[j] end
end

local function clamp(t)
  -- Only if the watermark was lost: never judge a bucket before its own past.
  if t > W then
    W = t
    cutoff = W - window
  end
end

local B = {}

local function load(i)
  local b = {key = KEYS[i], field = fields[i], list = false, total = 0, last = nil,
             n = 0, off = 0, ft = 0, fc = 0, bt = 0, bc = 0, cum = 0, merge = 0,
             pt = {}, pc = {}, ph = 1, np = 0, dirty = false, body = '', pos = 1, send = 0}
  local v = vals[i]
  if v == 'L' then
    b.list = true
    local len = redis.call('LLEN', b.key)
    if len > 0 then
      local bt, bc, bcum = parse3(redis.call('LINDEX', b.key, -1))
      clamp(bt)
      local ft, fc, fcum = bt, bc, bcum
      if len > 1 then ft, fc, fcum = parse3(redis.call('LINDEX', b.key, 0)) end
      b.n = len
      b.ft, b.fc = ft, fc
      b.bt, b.bc, b.cum = bt, bc, bcum
      b.last = bt
      b.total = bcum - fcum + fc
    end
  elseif v then
    local bar = string.find(v, '|', 1, true)
    -- the newest run starts after the last comma ('.*' backtracks from the end once)
    local ts = string.match(v, '^.*,()') or (bar + 1)
    local lt, lc = string.match(v, '^(%d+):(%d+)', ts)
    lt = tonumber(lt)
    clamp(lt)
    local ft, fc = string.match(v, '^(%d+):(%d+)', bar + 1)
    b.total = tonumber(string.sub(v, 1, bar - 1))
    b.body, b.pos, b.send = v, bar + 1, #v
    b.ts, b.bt, b.bc = ts, lt, tonumber(lc)
    b.ft, b.fc = tonumber(ft), tonumber(fc)
    b.last = lt
  end
  B[i] = b
  return b
end

-- Forget runs that left the window: stored ones first (oldest), then this batch's.
local function trim(b)
  if b.list then
    while b.n > 0 and b.ft <= cutoff do
      b.total = b.total - b.fc
      b.n = b.n - 1
      b.off = b.off + 1
      b.dirty = true
      if b.n > 0 then
        local ft, fc = parse3(redis.call('LINDEX', b.key, b.off))
        b.ft, b.fc = ft, fc
      elseif b.merge > 0 then
        b.total = b.total - b.merge
        b.merge = 0
      end
    end
  else
    while b.pos <= b.send and b.ft <= cutoff do
      b.total = b.total - b.fc
      b.dirty = true
      local comma = string.find(b.body, ',', b.pos, true)
      if comma == nil or comma > b.send then
        b.pos = b.send + 1
      else
        b.pos = comma + 1
        local ft, fc = string.match(b.body, '^(%d+):(%d+)', b.pos)
        b.ft, b.fc = tonumber(ft), tonumber(fc)
      end
    end
  end
  local stored_left = (b.list and b.n > 0) or ((not b.list) and b.pos <= b.send)
  if not stored_left then
    while b.ph <= b.np and b.pt[b.ph] <= cutoff do
      b.total = b.total - b.pc[b.ph]
      b.ph = b.ph + 1
    end
  end
  if b.total == 0 then b.last = nil end
end

local live = nil      -- buckets live before this batch (modes s and c)
local created = 0     -- buckets this batch brought (back) to life
local index = {}      -- index updates, written at the end (modes s and c)

local out = {0, 0}
local stride = 2
if eager then stride = 3 end
local g = 2
for a = 9, #ARGV, stride do
  local i = tonumber(ARGV[a])
  local count = tonumber(ARGV[a + 1])
  if eager then
    local t = tonumber(ARGV[a + 2])
    if t > W then
      W = t
      cutoff = W - window
    end
  end
  local b = B[i] or load(i)
  trim(b)
  local result = nil
  local fresh = b.total == 0
  if fresh then
    local tracked
    if eager then
      tracked = redis.call('ZCOUNT', ikey, '(' .. fmt(W), '+inf')
    else
      if live == nil then live = redis.call('ZCOUNT', ikey, '(' .. fmt(W), '+inf') end
      tracked = live + created
    end
    if tracked >= max_keys then result = -1 end
  end
  if result == nil then
    local admit = threshold - b.total
    if admit > count then admit = count end
    if admit > 0 then
      if fresh then created = created + 1 end
      if b.last == W then
        if b.ph <= b.np and b.pt[b.np] == W then
          b.pc[b.np] = b.pc[b.np] + admit
        elseif b.list then
          b.merge = b.merge + admit
        else
          -- the newest stored run is now: move it into this batch's runs
          if b.ts > b.pos then b.send = b.ts - 2 else b.send = b.pos - 1 end
          b.np = b.np + 1
          b.pt[b.np] = W
          b.pc[b.np] = b.bc + admit
        end
      else
        b.np = b.np + 1
        b.pt[b.np] = W
        b.pc[b.np] = admit
        b.last = W
        if eager then
          redis.call('ZADD', ikey, W + window, b.field)
        else
          index[i] = W + window
        end
      end
      b.total = b.total + admit
      b.dirty = true
    else
      admit = 0
    end
    result = admit
  end
  g = g + 1
  out[g] = result
end

local ref = reading or W
local hset, hdel = {}, {}
for i, b in pairs(B) do
  if b.dirty then
    local ttl = grace + 1
    if b.last ~= nil then ttl = b.last + window - ref + grace end
    if ttl < 1 then ttl = 1 end
    if b.list then
      if b.total == 0 then
        redis.call('DEL', b.key)
        hdel[#hdel + 1] = b.field
      else
        if b.off > 0 then redis.call('LTRIM', b.key, b.off, -1) end
        local cum = b.cum
        if b.merge > 0 and b.n > 0 then
          cum = cum + b.merge
          redis.call('LSET', b.key, -1, fmt(b.bt) .. ':' .. fmt(b.bc + b.merge) .. ':' .. fmt(cum))
        end
        local runs = {}
        for p = b.ph, b.np do
          cum = cum + b.pc[p]
          runs[#runs + 1] = fmt(b.pt[p]) .. ':' .. fmt(b.pc[p]) .. ':' .. fmt(cum)
          if #runs >= 1000 then
            redis.call('RPUSH', b.key, unpack(runs))
            runs = {}
          end
        end
        if #runs > 0 then redis.call('RPUSH', b.key, unpack(runs)) end
        redis.call('PEXPIRE', b.key, ttl)
      end
    elseif b.total == 0 then
      hdel[#hdel + 1] = b.field
    else
      local parts = {}
      if b.pos <= b.send then parts[1] = string.sub(b.body, b.pos, b.send) end
      for p = b.ph, b.np do parts[#parts + 1] = fmt(b.pt[p]) .. ':' .. fmt(b.pc[p]) end
      local runs = table.concat(parts, ',')
      if #runs <= spill then
        hset[#hset + 1] = b.field
        hset[#hset + 1] = fmt(b.total) .. '|' .. runs
      else
        -- A busy bucket: keep its runs in a list of its own from now on.
        redis.call('DEL', b.key)
        local cum, chunk = 0, {}
        for t, c in string.gmatch(runs, '(%d+):(%d+)') do
          cum = cum + tonumber(c)
          chunk[#chunk + 1] = t .. ':' .. c .. ':' .. fmt(cum)
          if #chunk >= 1000 then
            redis.call('RPUSH', b.key, unpack(chunk))
            chunk = {}
          end
        end
        if #chunk > 0 then redis.call('RPUSH', b.key, unpack(chunk)) end
        redis.call('PEXPIRE', b.key, ttl)
        hset[#hset + 1] = b.field
        hset[#hset + 1] = 'L'
      end
    end
  end
end
for s = 1, #hset, 4000 do
  redis.call('HSET', hkey, unpack(hset, s, math.min(s + 3999, #hset)))
end
for s = 1, #hdel, 4000 do
  redis.call('HDEL', hkey, unpack(hdel, s, math.min(s + 3999, #hdel)))
end
if not eager then
  local zadd = {}
  for i, score in pairs(index) do
    zadd[#zadd + 1] = score
    zadd[#zadd + 1] = fields[i]
    if #zadd >= 4000 then
      redis.call('ZADD', ikey, unpack(zadd))
      zadd = {}
    end
  end
  if #zadd > 0 then redis.call('ZADD', ikey, unpack(zadd)) end
end

-- Forget buckets whose window emptied (a bounded number per batch; the rest later).
local gone = redis.call('ZRANGEBYSCORE', ikey, '-inf', fmt(W), 'LIMIT', 0, 2000)
if #gone > 0 then
  redis.call('HDEL', hkey, unpack(gone))
  redis.call('ZREM', ikey, unpack(gone))
end
local keep = window + grace + (W - ref)
redis.call('SET', wkey, fmt(W), 'PX', keep)
redis.call('PEXPIRE', ikey, keep)
redis.call('PEXPIRE', hkey, keep)
out[1] = W
out[2] = redis.call('ZCOUNT', ikey, '(' .. fmt(W), '+inf')
return out
"""

THROTTLE_SCRIPT_SHA: Final = hashlib.sha1(
    THROTTLE_SCRIPT.encode(), usedforsecurity=False
).hexdigest()
