package rampartredis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/nilvalue"
)

// Defaults of [QuotaConfig]'s zero fields.
const (
	DefaultSlice           = 100 * time.Millisecond
	DefaultQuotaTimeout    = 50 * time.Millisecond
	DefaultQuotaMaxBackoff = time.Second
)

// Unreachable says what a [Quota] admits while Redis cannot be reached.
type Unreachable uint8

const (
	// LocalShare admits this replica's share of the quota: Limit divided
	// by the number of live replicas Redis last reported (or by
	// QuotaConfig.Replicas before Redis has answered once). The fleet
	// stays near its quota while the replicas are the same. It is the
	// zero Unreachable.
	LocalShare Unreachable = iota
	// Refuse admits nothing until Redis answers again: the limiter's
	// limit and burst are zero, so the ratelimit layer refuses every call
	// at once. Use it where exceeding the quota costs more than refusing.
	Refuse
)

// QuotaConfig configures [NewQuota]. Every zero field selects a
// documented default, except Key and Limit.
type QuotaConfig struct {
	// Key names the quota: every replica that shares it uses the same Key.
	// Required.
	Key string
	// Limit is the fleet-wide rate, in calls per second. Required: it must
	// be positive and finite.
	Limit rate.Limit
	// Slice is how often each replica reports its demand and receives its
	// share (one script call per Slice, never one per call). Shorter
	// follows changes of demand faster at more Redis commands. Zero means
	// [DefaultSlice] (100ms); negative is an error.
	Slice time.Duration
	// Timeout bounds each Redis command. Zero means [DefaultQuotaTimeout]
	// (50ms); negative is an error.
	Timeout time.Duration
	// Unreachable says what to admit while Redis cannot be reached. The
	// zero value is [LocalShare].
	Unreachable Unreachable
	// MaxBackoff caps the wait between attempts while Redis fails: it
	// starts at Slice and doubles. Zero means [DefaultQuotaMaxBackoff]
	// (1s); negative is an error.
	MaxBackoff time.Duration
	// Replicas is the number of replicas assumed when Redis has never
	// answered, for LocalShare. Zero means 1 (the whole quota); negative
	// is an error.
	Replicas int
	// Prefix starts every Redis key; empty means [DefaultPrefix]. Both keys
	// carry the hash tag {Key}.
	Prefix string
	// ID identifies this replica; empty means a random one.
	ID string
	// Clock, when set, is the time the Quota runs on: its Slice and
	// backoff timers, and the times at which it reads and sets its
	// limiter. Nil means the system's clock. The Limiter of a Quota with a
	// Clock counts tokens on that Clock's monotonic reading
	// ([clock.MonotonicTime]): give the ratelimit layer the same Clock
	// (ratelimit.Config.Clock), or pass clock.MonotonicTime(c) to the
	// limiter's methods whose names end in At. Redis still runs on real
	// time: each command is bounded by Timeout on the system's clock, and
	// a replica stays in the division for three Slices of Redis's clock
	// after its last lease.
	Clock clock.Clock
}

// Quota is a rate limit shared by every replica of a fleet: together they
// admit Limit calls per second. It hands out the quota as rates: each
// replica's local [rate.Limiter] gets a share, set again every Slice by
// one Redis script that records the replica's demand and divides the
// quota among the live replicas by max-min fairness (a replica that uses
// less than an equal share gets what it uses plus an equal part of the
// rest; the others split the remainder equally). Admission is local: a
// call never waits for Redis. Pass [Quota.Limiter] to ratelimit.NewLayer.
//
// Precision: with steady demand the shares add up to Limit and each
// replica's limiter admits its share exactly (a token bucket: over a
// window of T seconds a replica with share r admits r·T calls, give or
// take the one it was accruing when the window began), so the fleet
// admits Limit·T give or take one call per replica, at any share: 8
// replicas sharing 10 calls a second admit 96 to 104 of 100 over 10
// seconds, and sharing 8 (one call a second each) exactly 80. A change
// of demand (a replica starting, stopping, or growing) is followed
// within about one Slice, and a change of Limit ([Quota.SetLimit]) at
// once on the replica told. Each replica's local burst is its share of
// one Slice (at least 1). A replica that stops reporting drops out of the
// division after three Slices; a stall of Redis or of the whole fleet
// (no lease for more than a Slice) is not counted against anyone. A replica's bucket starts with half a
// token, so that replicas starting together add no burst above the quota
// and a window that starts with them is counted without bias.
//
// A call already waiting for its token (rate.Limiter's Wait, the
// ratelimit layer's Wait mode) when the share changes keeps the due time
// it was given at the old share, as x/time/rate's reservations do: after
// a raise, each replica's next call comes up to one token of the old
// share late.
//
// Redis's round trip per call (github.com/go-redis/redis_rate's GCRA) is
// exact at any instant but adds a round trip to every call and, with
// Redis down, must either fail or admit every call; a Quota spends one
// round trip per Slice and degrades as [Unreachable] says.
//
// A nil or zero Quota (one that [NewQuota] did not return) limits
// nothing: Close and SetLimit return an error, Stats is zero and Limiter
// nil.
type Quota struct {
	client redis.UniversalClient
	cfg    QuotaConfig
	keys   []string
	lim    *rate.Limiter

	// ctx ends at Close: it cancels a lease in flight.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts the armed and running slice timers, for Close.
	wg sync.WaitGroup

	commands, failures atomic.Int64

	// mu is held through each lease (a slice's, or SetLimit's) and
	// guards what follows.
	mu       sync.Mutex
	closed   bool
	timer    clock.Timer   // the next slice's
	armed    uint64        // timers armed so far: only the latest leases
	wait     time.Duration // until the next lease: Slice, or the backoff
	limit    rate.Limit    // the fleet-wide limit this replica divides
	share    float64       // the current share, calls per second
	replicas int           // live replicas Redis last reported
	tokens   float64       // the limiter's tokens at the last lease
	at       time.Time     // when tokens was read
}

// quotaScript records a replica's demand (calls per second, -1 for more
// than it has) and returns its share as a string and the number of live
// replicas. ARGV: id, demand, limit, liveness ms, Slice ms. A gap of more
// than a Slice between two leases of the fleet is a stall (of Redis, or
// of the whole fleet), not a departure: every replica was late and went
// on admitting at its share, so the gap is not counted against anyone
// (their last leases move forward by it). Counted, the first lease after
// a stall longer than the liveness would find itself alone and take the
// whole Limit while the others still held their shares. The keys outlive
// the liveness (100 times) for the same reason; they only clean up after
// a fleet that is gone.
var quotaScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = tonumber(ARGV[4])
local newest = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #newest == 2 then
  local gap = now - tonumber(newest[2])
  if gap > tonumber(ARGV[5]) then
    local all = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
    for i = 1, #all, 2 do
      redis.call('ZADD', KEYS[2], tonumber(all[i + 1]) + gap, all[i])
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - live)) do
  redis.call('HDEL', KEYS[1], id)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - live)
redis.call('PEXPIRE', KEYS[1], 100 * live)
redis.call('PEXPIRE', KEYS[2], 100 * live)
local all = redis.call('HGETALL', KEYS[1])
local ds = {}
for i = 2, #all, 2 do
  local d = tonumber(all[i])
  if d < 0 then d = math.huge end
  ds[#ds + 1] = d
end
table.sort(ds)
local mine = tonumber(ARGV[2])
if mine < 0 then mine = math.huge end
local left, n, level = tonumber(ARGV[3]), #ds, nil
for i, d in ipairs(ds) do
  local fair = left / (n - i + 1)
  if d > fair then level = fair break end
  left = left - d
end
local share
if level == nil then share = mine + left / n
elseif mine >= level then share = level
else share = mine end
return {string.format('%.3f', share), n}
`)

// NewQuota returns a Quota and arms its slice timer. It asks Redis for a
// first share (bounded by Timeout) before returning; if Redis does not
// answer, the Quota starts as Unreachable says and keeps asking. It
// returns an error for a nil client, a client whose commands ignore their
// context (see [Share]), or a bad field (naming it).
func NewQuota(client redis.UniversalClient, cfg QuotaConfig) (*Quota, error) {
	if err := nilvalue.Field("rampartredis: QuotaConfig.Clock", cfg.Clock); err != nil {
		return nil, err
	}
	if err := checkClient(client); err != nil {
		return nil, err
	}
	switch {
	case cfg.Key == "":
		return nil, errors.New("rampartredis: QuotaConfig.Key must not be empty")
	case !finite(cfg.Limit):
		return nil, fmt.Errorf("rampartredis: QuotaConfig.Limit must be positive and finite, got %s", limitString(cfg.Limit))
	case cfg.Slice < 0:
		return nil, fmt.Errorf("rampartredis: QuotaConfig.Slice must be >= 0 (0 means %v), got %v", DefaultSlice, cfg.Slice)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("rampartredis: QuotaConfig.Timeout must be >= 0 (0 means %v), got %v", DefaultQuotaTimeout, cfg.Timeout)
	case cfg.MaxBackoff < 0:
		return nil, fmt.Errorf("rampartredis: QuotaConfig.MaxBackoff must be >= 0 (0 means %v), got %v", DefaultQuotaMaxBackoff, cfg.MaxBackoff)
	case cfg.Unreachable > Refuse:
		return nil, fmt.Errorf("rampartredis: QuotaConfig.Unreachable must be LocalShare or Refuse, got %d", cfg.Unreachable)
	case cfg.Replicas < 0:
		return nil, fmt.Errorf("rampartredis: QuotaConfig.Replicas must be >= 0 (0 means 1), got %d", cfg.Replicas)
	}
	cfg.Slice = orDefault(cfg.Slice, DefaultSlice)
	cfg.Timeout = orDefault(cfg.Timeout, DefaultQuotaTimeout)
	cfg.MaxBackoff = orDefault(cfg.MaxBackoff, DefaultQuotaMaxBackoff)
	cfg.Replicas = orDefault(cfg.Replicas, 1)
	cfg.Prefix = orDefault(cfg.Prefix, DefaultPrefix)
	cfg.ID = orDefault(cfg.ID, randomID())
	tag := cfg.Prefix + "{" + cfg.Key + "}:"
	q := &Quota{
		client:   client,
		cfg:      cfg,
		keys:     []string{tag + "demand", tag + "seen"},
		limit:    cfg.Limit,
		replicas: cfg.Replicas,
		wait:     cfg.Slice,
	}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	q.mu.Lock()
	defer q.mu.Unlock()
	q.next(-1) // demand unknown until the first slice
	return q, nil
}

// finite reports whether l is a usable Limit: positive and finite.
func finite(l rate.Limit) bool { return l > 0 && l != rate.Inf && !math.IsInf(float64(l), 1) }

// limitString formats l for an error: rate.Inf by its name, not as the
// largest float64 it is.
func limitString(l rate.Limit) string {
	if l == rate.Inf {
		return "rate.Inf"
	}
	return fmt.Sprint(float64(l))
}

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Limiter returns the replica's local limiter, whose limit and burst the
// Quota sets every Slice. Pass it to ratelimit.NewLayer as Config.Limiter;
// do not change its limit or burst yourself. It is nil for a Quota that
// [NewQuota] did not return.
func (q *Quota) Limiter() *rate.Limiter {
	if q == nil {
		return nil
	}
	return q.lim
}

// errNotQuota is the error of a method called on a Quota that NewQuota
// did not return.
var errNotQuota = errors.New("rampartredis: the Quota was not returned by NewQuota")

// ErrQuotaClosed is returned by [Quota.SetLimit] once the Quota is closed.
var ErrQuotaClosed = errors.New("rampartredis: the Quota is closed")

// SetLimit changes the fleet-wide rate (calls per second) that this
// replica divides with the others and leases its new share at once,
// bounded by Timeout, before it returns; the next slice comes a Slice
// later. Each replica divides the limit it was given, so tell every
// replica (a configuration push): until they all have the new limit,
// each gets its share of the limit it knows, and the fleet admits
// between the old and the new. It returns an error for a limit that is
// not positive and finite, [ErrQuotaClosed] after Close, and an error for
// a Quota that NewQuota did not return. Safe for concurrent use.
func (q *Quota) SetLimit(limit rate.Limit) error {
	if q == nil || q.lim == nil {
		return errNotQuota
	}
	if !finite(limit) {
		return fmt.Errorf("rampartredis: Quota.SetLimit: the limit must be positive and finite, got %s", limitString(limit))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrQuotaClosed
	}
	if q.timer.Stop() {
		q.wg.Done()
	}
	q.limit = limit
	q.wait = q.cfg.Slice
	q.next(q.demand())
	return nil
}

// Close stops the Quota's slice timer and waits for a lease in flight.
// The limiter keeps its last share. It does not close the client.
// Calling it again does nothing; Close of a Quota that [NewQuota] did not
// return is an error.
func (q *Quota) Close() error {
	if q == nil || q.lim == nil {
		return errNotQuota
	}
	q.cancel()
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		if q.timer.Stop() {
			q.wg.Done()
		}
	}
	q.mu.Unlock()
	q.wg.Wait()
	return nil
}

// QuotaStats are a [Quota]'s counts and its current share, as
// [Quota.Stats] returns them.
type QuotaStats struct {
	// Commands is the number of Redis commands the Quota has sent: one
	// script call per Slice (and one in NewQuota), failed ones included.
	Commands int64
	// Failures is the number of those commands that failed (an error or
	// no answer within Timeout); each one set the limiter to the share
	// Unreachable says.
	Failures int64
	// Share is the rate the replica's limiter admits now, in calls per
	// second: its share of Limit from Redis's last answer, or the
	// Unreachable share after a failure.
	Share rate.Limit
}

// Stats returns the counts so far; zero for a Quota that [NewQuota] did
// not return. Safe for concurrent use.
func (q *Quota) Stats() QuotaStats {
	if q == nil || q.lim == nil {
		return QuotaStats{}
	}
	return QuotaStats{Commands: q.commands.Load(), Failures: q.failures.Load(), Share: q.lim.Limit()}
}

// slice runs when the slice timer number n fires: one lease, and the
// next timer, unless the Quota is closed or SetLimit armed a newer timer
// while this one waited for q.mu. With a supplied Clock it runs on the
// goroutine that moves the clock.
func (q *Quota) slice(n uint64) {
	defer q.wg.Done()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || n != q.armed {
		return
	}
	q.next(q.demand())
}

// next leases with demand and arms the timer of the next slice: a Slice
// later, or after the backoff while Redis fails. q.mu is held.
func (q *Quota) next(demand float64) {
	if q.lease(demand) {
		q.wait = q.cfg.Slice
	} else {
		q.wait = min(2*q.wait, max(q.cfg.MaxBackoff, q.cfg.Slice))
	}
	q.armed++
	n := q.armed
	f := func() { q.slice(n) }
	q.wg.Add(1)
	if q.cfg.Clock == nil {
		q.timer = time.AfterFunc(q.wait, f)
	} else {
		q.timer = q.cfg.Clock.AfterFunc(q.wait, f)
	}
}

// now is the time of the limiter's tokens.
func (q *Quota) now() time.Time { return clock.MonotonicTime(q.cfg.Clock) }

// demand estimates the calls per second this replica wanted during the
// last slice from its limiter's tokens: -1 (more than its share) when the
// bucket ran dry; half its share (at least one call a second) when the
// bucket is full, since a full bucket hides how much was used; else what
// it used, with a tenth more and one call of headroom so that growth
// shows.
func (q *Quota) demand() float64 {
	now := q.now()
	tokens := q.lim.TokensAt(now)
	dt := now.Sub(q.at).Seconds()
	switch {
	case tokens < 1 || dt <= 0:
		return -1
	case tokens >= float64(q.lim.Burst()):
		return max(q.share/2, 1)
	}
	used := q.share*dt + q.tokens - tokens
	return max(used/dt, 0)*1.1 + 1
}

// lease reports demand and sets the limiter to the share Redis returns,
// or to the Unreachable share when Redis does not answer; it reports
// whether Redis answered. q.mu is held.
func (q *Quota) lease(demand float64) bool {
	ctx, cancel := context.WithTimeout(q.ctx, q.cfg.Timeout)
	defer cancel()
	q.commands.Add(1)
	live := 3 * q.cfg.Slice.Milliseconds()
	v, err := quotaScript.Run(ctx, q.client, q.keys, q.cfg.ID, strconv.FormatFloat(demand, 'g', -1, 64),
		strconv.FormatFloat(float64(q.limit), 'g', -1, 64), max(live, 1), max(q.cfg.Slice.Milliseconds(), 1)).Slice()
	share := 0.0
	if err == nil && len(v) == 2 {
		s, _ := v[0].(string)
		n, _ := v[1].(int64)
		share, err = strconv.ParseFloat(s, 64)
		if n > 0 {
			q.replicas = int(n)
		}
	} else if err == nil {
		err = fmt.Errorf("rampartredis: unexpected quota reply %v", v)
	}
	if err != nil {
		if q.ctx.Err() != nil {
			return false
		}
		q.failures.Add(1)
		reloadSlots(q.client)
		share = 0
		if q.cfg.Unreachable == LocalShare {
			share = float64(q.limit) / float64(q.replicas)
		}
	}
	q.set(share)
	return err == nil
}

// set gives the limiter a share (calls per second) and a burst of one
// Slice of it, at least 1 (0 for a share of 0).
func (q *Quota) set(share float64) {
	now := q.now()
	burst := 0
	if share > 0 {
		burst = max(1, int(math.Ceil(share*q.cfg.Slice.Seconds())))
	}
	if q.lim == nil {
		// The first share. The bucket starts with half a token: a replica
		// that joins admits nothing at once, so replicas that start
		// together add no burst above the fleet's quota, and its first
		// token comes half a token's time later, so that a window that
		// starts now counts r·T calls on average, not r·T - 1/2. (The
		// bucket is emptied half a token's time ago.)
		q.lim = rate.NewLimiter(rate.Limit(share), burst)
		half := time.Duration(0)
		if share > 0 {
			half = time.Duration(0.5 / share * float64(time.Second))
		}
		q.lim.AllowN(now.Add(-half), burst)
	} else {
		q.lim.SetLimitAt(now, rate.Limit(share))
		q.lim.SetBurstAt(now, burst)
	}
	q.share, q.tokens, q.at = share, q.lim.TokensAt(now), now
}
