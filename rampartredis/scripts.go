package rampartredis

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// The shared record of one breaker is a hash at KEYS[1]:
//
//	gen    the fleet-wide generation, +1 on every change
//	state  "open" or "closed" (a missing record is closed, generation 0)
//	until  when an open record's cool-down ends, in ms on Redis's own
//	       clock, or -1 for no end; replicas never see it, only the
//	       remaining duration computed by the script
//	cause  the text of the failure that tripped it
//	by     the id of the replica that wrote it
//
// KEYS[2] is the probe claim of the current HalfOpen round (SET NX PX),
// KEYS[3] the quorum's sorted set of reporting replicas (score: ms),
// KEYS[4] the count of failures reported while the record is closed
// (expiring one failure window after the first), KEYS[5] the set of the
// replicas that reported them. Every key carries the same hash tag, so
// one script touches one slot.
//
// Each script replies with the record as {won, gen, state, remaining ms
// (-1: no end; <= 0: the cool-down has ended), cause, by, claim ms}.

// now and the record's fields, read at the start of every script.
const scriptHead = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = redis.call('HMGET', KEYS[1], 'gen', 'state', 'until', 'cause', 'by')
local gen = tonumber(r[1]) or 0
local state = r[2] or 'closed'
local untl = tonumber(r[3]) or 0
local cause = r[4] or ''
local by = r[5] or ''
local function remaining()
  if state ~= 'open' then return 0 end
  if untl < 0 then return -1 end
  local rem = untl - now
  if rem <= 0 then return 0 end
  return rem
end
-- write makes the record's next generation: state to ('open' or
-- 'closed'), cool-down cd ms (-1: no end), written by id; it sets the
-- expiry (ttl ms past the cool-down), clears the round's claim and the
-- evidence and publishes on channel ch, and returns the winner's reply.
local function write(to, cd, why, id, ttl, ch)
  gen = gen + 1
  state = to
  by = id
  if to == 'open' then
    cause = why
    if cd < 0 then untl = -1 else untl = now + cd; ttl = ttl + cd end
    redis.call('DEL', KEYS[3])
  else
    untl = 0
    cause = ''
  end
  redis.call('HSET', KEYS[1], 'gen', gen, 'state', state, 'until', untl, 'cause', cause, 'by', by)
  if untl < 0 then redis.call('PERSIST', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ttl) end
  redis.call('DEL', KEYS[2], KEYS[4], KEYS[5])
  local rem = remaining()
  redis.call('PUBLISH', ch, gen .. '|' .. state .. '|' .. rem .. '|' .. by .. '|' .. cause)
  return {1, gen, state, rem, cause, by, 0}
end
`

// transitionScript publishes a replica's own transition in one round
// trip. ARGV: expected generation, "open" or "closed", cool-down ms (-1:
// no end), cause, replica id, quorum, quorum window ms, record ttl ms,
// channel, claim token ("" for none).
//
// An open wins over a closed record (a trip is news; with a quorum K > 1,
// only once K distinct replicas reported within the window). Over an
// open record only a verdict counts: an open (the round's probe failed)
// or a close (it succeeded) wins only for the generation the replica
// knew and only while the claim it carries holds (fencing: a verdict
// that arrives after its claim lapsed, or a probe made without one,
// changes nothing). The winner writes, sets the expiry, clears the probe
// claim and publishes; a loser gets the current record to adopt.
var transitionScript = redis.NewScript(transitionSource)

const transitionSource = scriptHead + `
local expect = tonumber(ARGV[1])
local to = ARGV[2]
local win = false
local function held()
  return gen == expect and ARGV[10] ~= '' and redis.call('GET', KEYS[2]) == ARGV[10]
end
if to == 'open' then
  local k = tonumber(ARGV[6])
  if k > 1 then
    redis.call('ZADD', KEYS[3], now, ARGV[5])
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[7]))
    redis.call('PEXPIRE', KEYS[3], ARGV[7])
  end
  if state == 'closed' then
    win = k <= 1 or redis.call('ZCARD', KEYS[3]) >= k
  else
    win = held()
  end
else
  win = state == 'open' and held()
end
if not win then
  return {0, gen, state, remaining(), cause, by, 0}
end
return write(to, tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[8]), ARGV[9])
`

// evidenceScript reports failures a replica's breaker counted while
// Closed. ARGV: failures, failure window ms, fleet-wide failures that
// open the record, quorum, replica id, cool-down ms, cause, record ttl
// ms, channel.
//
// Over a closed record it adds the failures to the fleet's count, which
// expires one window after its first failure; once the count reaches the
// threshold (with a quorum K > 1: and K distinct replicas reported), the
// record opens, as a trip would, for the cool-down. Over an open record
// it counts nothing: the replica gets the record to adopt. The reply's
// last field is the fleet's count.
var evidenceScript = redis.NewScript(evidenceSource)

const evidenceSource = scriptHead + `
if state ~= 'closed' then
  return {0, gen, state, remaining(), cause, by, 0}
end
local n = tonumber(ARGV[1])
local total = redis.call('INCRBY', KEYS[4], n)
if total == n then redis.call('PEXPIRE', KEYS[4], ARGV[2]) end
local enough = total >= tonumber(ARGV[3])
if tonumber(ARGV[4]) > 1 then
  redis.call('SADD', KEYS[5], ARGV[5])
  redis.call('PEXPIRE', KEYS[5], redis.call('PTTL', KEYS[4]))
  enough = enough and redis.call('SCARD', KEYS[5]) >= tonumber(ARGV[4])
end
if not enough then
  return {0, gen, state, 0, cause, by, total}
end
return write('open', tonumber(ARGV[6]), ARGV[7], ARGV[5], tonumber(ARGV[8]), ARGV[9])
`

// readScript reads the record, with the remaining cool-down on Redis's
// clock.
var readScript = redis.NewScript(scriptHead + `
return {0, gen, state, remaining(), cause, by, 0}
`)

// claimScript claims the probe of the current HalfOpen round: it wins
// when the record is still the open record of the expected generation,
// its cool-down has ended, and no other replica holds the claim (SET NX
// PX); a replica that holds it already wins again, which renews the
// claim for the full claim ms. ARGV: expected generation, claim token,
// claim ms. A loser gets the record and how long the current claim still
// holds (ms).
var claimScript = redis.NewScript(claimSource)

const claimSource = scriptHead + `
local rem = remaining()
if state ~= 'open' or gen ~= tonumber(ARGV[1]) or rem ~= 0 then
  return {0, gen, state, rem, cause, by, 0}
end
local me = ARGV[2]
if redis.call('SET', KEYS[2], me, 'NX', 'PX', ARGV[3]) then
  return {1, gen, state, 0, cause, by, tonumber(ARGV[3])}
end
if redis.call('GET', KEYS[2]) == me then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return {1, gen, state, 0, cause, by, tonumber(ARGV[3])}
end
return {0, gen, state, 0, cause, by, redis.call('PTTL', KEYS[2])}
`

// releaseScript gives up a claim of the HalfOpen round that no call came
// to use: it deletes the claim only while it holds the caller's token, so
// that another replica can claim the round at once. ARGV: claim token.
var releaseScript = redis.NewScript(releaseSource)

const releaseSource = scriptHead + `
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
end
return {0, gen, state, remaining(), cause, by, 0}
`

// readManyScript reads the records of many breakers at once, with the
// remaining cool-down on Redis's clock: KEYS are their state hashes (on a
// single node: keys of different slots), and the reply holds one record
// per key, each as readScript replies.
var readManyScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local r = redis.call('HMGET', key, 'gen', 'state', 'until', 'cause', 'by')
  local state = r[2] or 'closed'
  local untl = tonumber(r[3]) or 0
  local rem = 0
  if state == 'open' then
    if untl < 0 then rem = -1 elseif untl > now then rem = untl - now end
  end
  out[i] = {0, tonumber(r[1]) or 0, state, rem, r[4] or '', r[5] or '', 0}
end
return out
`)

// workerSources are the sources of the scripts a Shared's worker runs by
// SHA.
var workerSources = []string{evidenceSource, transitionSource, claimSource, releaseSource}

// loadScripts loads the workers' scripts on every node of client, within
// ctx: on a Cluster on its Redis replicas too, because Redis (from 7.0)
// does not replicate its script cache, and a Redis replica that takes
// over from its master would otherwise answer the first scripts NOSCRIPT.
// The hub calls it when Redis did not know its read script (Redis was
// started or restarted, or a node took over): otherwise the first report
// or transition of each replica would take two round trips (EVALSHA,
// NOSCRIPT, then EVAL), and the first failure reports of an outage are
// the path that opens the fleet. Errors are ignored: a script Redis does
// not know is still sent again with its body.
func loadScripts(ctx context.Context, client redis.UniversalClient) {
	load := func(ctx context.Context, c redis.Cmdable) error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, src := range workerSources {
				p.ScriptLoad(ctx, src)
			}
			return nil
		})
		return err
	}
	// A Cluster or a Ring: every node.
	if c, ok := client.(interface {
		ForEachShard(context.Context, func(context.Context, *redis.Client) error) error
	}); ok {
		_ = c.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return load(ctx, c) })
		return
	}
	_ = load(ctx, client)
}
