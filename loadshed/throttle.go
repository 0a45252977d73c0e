package loadshed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/observe"
)

// Defaults for the zero fields of [ThrottleConfig].
const (
	// DefaultK is the SRE book's suggested multiplier: the backend may
	// refuse up to half of the requests before the client throttles.
	DefaultK = 2.0
	// DefaultWindow is the SRE book's two minutes of history.
	DefaultWindow = 2 * time.Minute
	// DefaultBuckets splits DefaultWindow into 10-second buckets.
	DefaultBuckets = 12
	// maxBuckets bounds the memory and the per-call cost of summing.
	maxBuckets = 1000
)

// ThrottleConfig configures a [Throttle]. The zero value is valid and gives
// the SRE book's parameters.
type ThrottleConfig struct {
	// K is how many requests per accepted request the client may send
	// before it throttles: with K = 2 it starts refusing once the backend
	// refuses more than half. Lower is more aggressive (the book mentions
	// 1.1); higher lets more doomed requests through. Zero means
	// [DefaultK]. It must be at least 1 and finite: below 1 the client
	// would refuse requests to a healthy backend.
	K float64
	// Window is how much history the counts cover. Zero means
	// [DefaultWindow]. It must not be negative.
	Window time.Duration
	// Buckets is how many equal periods Window is split into; the oldest
	// period's counts are dropped whole as time moves on, so the counts
	// cover between Window*(Buckets-1)/Buckets and Window of history. Zero
	// means [DefaultBuckets]. It must be between 0 and 1000, and at most
	// Window in nanoseconds.
	Buckets int
	// Rand returns a number in [0, 1) for each refusal decision. It is
	// called only when the refusal probability is above zero, and must be
	// safe for concurrent use. Nil means math/rand/v2's Float64. Supply one
	// to make decisions reproducible.
	Rand func() float64

	// Name names the Throttle in the events of the layers built with it.
	// Empty means unnamed.
	Name string

	// Observer, if not nil, is told about each call a layer built with the
	// Throttle refuses (an [observe.Refused] event with [ErrOverloaded]).
	// See package observe.
	Observer observe.Observer
}

// Throttle is client-side adaptive throttling, as described in the Google
// SRE book, chapter 21 "Handling Overload". It counts, over a sliding
// window, requests (every request the client attempted, including those
// it refused itself) and accepts (requests the backend handled), and
// refuses a new request locally with probability
//
//	max(0, (requests - K*accepts) / (requests + 1))
//
// While the backend accepts everything the probability is zero. As the
// backend refuses more, the client refuses more itself, which takes load
// off the backend without stopping traffic: enough requests still go
// through to see the backend recover, and as accepts rise the probability
// falls back to zero.
//
// That fall can be slow. Refused requests count as requests, so after a
// window that held only failures nearly every request is refused, accepts
// come back only through the few that pass, and the probability takes
// several windows to fall: in a synctest run at 100 requests per second, a
// 3-minute outage with the default 2-minute window left more than half the
// requests refused for another 11 minutes. A new Throttle that has seen one
// failed request refuses half (1/(1+1)). Choose a shorter Window for faster
// recovery, at the price of reacting to shorter blips, and combine the
// Throttle with a circuit breaker, whose probe notices recovery within its
// cool-down.
//
// A Throttle is shared state: every layer built with it, and every caller
// of [Throttle.Allow] and [Throttle.Record], adds to the same counts, so use
// one per backend. It is safe for concurrent use; counting is a few atomic
// operations, with a mutex taken only when a bucket rotates. A count that
// races a rotation may land in the neighbouring bucket.
//
// The zero Throttle has no window: Allow always returns true, Record counts
// nothing, Probability and Counts return zeros, and [NewThrottleLayer]
// refuses it. Make a Throttle with [NewThrottle]. A nil *Throttle is the
// same.
type Throttle struct {
	k       float64
	width   time.Duration // of one bucket
	rand    func() float64
	origin  time.Time  // bucket i covers [origin + i*width, origin + (i+1)*width)
	mu      sync.Mutex // serializes rotations
	buckets []bucket
	name    string
	obs     observe.Observer
}

type bucket struct {
	// period is the index of the period this bucket counts; it only grows.
	// A rotation zeroes the counts before publishing the new period, so a
	// counter that sees the new period adds to zeroed counts.
	period   atomic.Int64
	requests atomic.Int64
	accepts  atomic.Int64
}

// NewThrottle returns a Throttle with empty counts configured by cfg. It
// returns an error naming the first invalid field.
func NewThrottle(cfg ThrottleConfig) (*Throttle, error) {
	if cfg.K == 0 {
		cfg.K = DefaultK
	}
	if !(cfg.K >= 1) || math.IsInf(cfg.K, 1) {
		return nil, fmt.Errorf("loadshed: K must be >= 1 and finite (0 means DefaultK, %v), got %v", DefaultK, cfg.K)
	}
	if cfg.Window < 0 {
		return nil, fmt.Errorf("loadshed: Window must be >= 0 (0 means DefaultWindow, %v), got %v", DefaultWindow, cfg.Window)
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Buckets == 0 {
		cfg.Buckets = DefaultBuckets
	}
	if cfg.Buckets < 1 || cfg.Buckets > maxBuckets {
		return nil, fmt.Errorf("loadshed: Buckets must be between 0 and %d (0 means DefaultBuckets, %d), got %d", maxBuckets, DefaultBuckets, cfg.Buckets)
	}
	if time.Duration(cfg.Buckets) > cfg.Window {
		return nil, fmt.Errorf("loadshed: Buckets must be at most Window in nanoseconds (%d), got %d", cfg.Window, cfg.Buckets)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	return &Throttle{
		k:       cfg.K,
		width:   cfg.Window / time.Duration(cfg.Buckets),
		rand:    cfg.Rand,
		origin:  time.Now(),
		buckets: make([]bucket, cfg.Buckets),
		name:    cfg.Name,
		obs:     cfg.Observer,
	}, nil
}

// Allow decides whether to send a request. It returns false, and counts a
// request that was not accepted, with the probability given on [Throttle];
// the caller must then not send the request. When it returns true, the
// caller sends the request and reports the outcome with [Throttle.Record]
// (or reports nothing, if the caller itself gave up).
func (t *Throttle) Allow() bool {
	if t == nil || len(t.buckets) == 0 { // a nil or zero Throttle
		return true
	}
	period := t.period()
	if p := t.probability(period); p > 0 && t.rand() < p {
		t.bucket(period).requests.Add(1)
		return false
	}
	return true
}

// Record counts one request sent to the backend, and one accept if
// accepted is true. Accepted means the backend handled the request rather
// than refusing it for overload; see [NewThrottleLayer].
func (t *Throttle) Record(accepted bool) {
	if t == nil || len(t.buckets) == 0 { // a nil or zero Throttle
		return
	}
	b := t.bucket(t.period())
	b.requests.Add(1)
	if accepted {
		b.accepts.Add(1)
	}
}

// Probability returns the probability with which [Throttle.Allow] would
// refuse a request now, between 0 and 1.
func (t *Throttle) Probability() float64 {
	if t == nil || len(t.buckets) == 0 { // a nil or zero Throttle
		return 0
	}
	return t.probability(t.period())
}

// Counts returns the requests and accepts counted in the window now.
func (t *Throttle) Counts() (requests, accepts int64) {
	if t == nil || len(t.buckets) == 0 { // a nil or zero Throttle
		return 0, 0
	}
	return t.counts(t.period())
}

func (t *Throttle) probability(period int64) float64 {
	requests, accepts := t.counts(period)
	r := float64(requests)
	return max(0, (r-t.k*float64(accepts))/(r+1))
}

func (t *Throttle) counts(period int64) (requests, accepts int64) {
	oldest := period - int64(len(t.buckets)) // exclusive
	for i := range t.buckets {
		b := &t.buckets[i]
		if b.period.Load() > oldest {
			requests += b.requests.Load()
			accepts += b.accepts.Load()
		}
	}
	return requests, accepts
}

// period returns the index of the current period, from the monotonic clock.
func (t *Throttle) period() int64 { return int64(time.Since(t.origin) / t.width) }

// bucket returns the bucket for period, rotating it if it still counts an
// older period. A caller whose period is already stale (it was delayed for
// a whole window) adds to the newer period rather than wiping it.
func (t *Throttle) bucket(period int64) *bucket {
	b := &t.buckets[period%int64(len(t.buckets))]
	if b.period.Load() < period {
		t.mu.Lock()
		if b.period.Load() < period {
			b.requests.Store(0)
			b.accepts.Store(0)
			b.period.Store(period)
		}
		t.mu.Unlock()
	}
	return b
}

// NewThrottleLayer returns a layer that asks t before each call and refuses
// it with [ErrOverloaded] when t refuses; otherwise it calls the inner
// service, records the outcome in t, and returns the result unchanged.
//
// accepted decides whether a completed call counts as accepted by the
// backend; nil means err == nil. Supply one so that errors which show the
// backend working (not found, invalid argument) count as accepts, and only
// overload signals (unavailable, resource exhausted, timeouts) do not; it
// must be safe for concurrent use. Whatever accepted says, a call that
// failed because the caller cancelled ctx (ctx.Err() is context.Canceled)
// counts as neither a request nor an accept: the caller gave up, the
// backend said nothing. A call whose ctx is already done when it arrives
// returns ctx.Err() and counts nothing. A panic in the inner service counts
// nothing and propagates.
//
// A call through the layer allocates nothing, nor does a refusal.
//
// The layer's Wrap given a nil service returns a service that fails every
// call with an error matching [rampart.ErrNilService].
//
// NewThrottleLayer returns an error when t is nil or a zero Throttle (not
// made by [NewThrottle]).
func NewThrottleLayer[Req, Resp any](t *Throttle, accepted func(Resp, error) bool) (rampart.Layer[Req, Resp], error) {
	if t == nil {
		return nil, errors.New("loadshed: throttle must not be nil")
	}
	if len(t.buckets) == 0 {
		return nil, errors.New("loadshed: throttle must be made by NewThrottle, got a zero Throttle")
	}
	if accepted == nil {
		accepted = func(_ Resp, err error) bool { return err == nil }
	}
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		if nilservice.Is(inner) {
			return rampart.Failing[Req, Resp]("loadshed: Wrap")
		}
		return &throttled[Req, Resp]{inner: inner, t: t, accepted: accepted}
	}), nil
}

type throttled[Req, Resp any] struct {
	inner    rampart.Service[Req, Resp]
	t        *Throttle
	accepted func(Resp, error) bool
}

func (s *throttled[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	var zero Resp
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if !s.t.Allow() {
		refused(ctx, s.t.name, s.t.obs)
		return zero, ErrOverloaded
	}
	resp, err := s.inner.Call(ctx, req)
	if err == nil || ctx.Err() != context.Canceled {
		s.t.Record(s.accepted(resp, err))
	}
	return resp, err
}
