package bench_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rampart-go/rampart"
)

// Req and Resp are the request and response types of every benchmarked
// service: small values, so that no benchmark measures copying.
type (
	Req  = int
	Resp = int
)

// errBackend is the failure the backend returns on its failing calls.
var errBackend = errors.New("bench: backend failure")

// backend is the protected service: a no-op that answers req and fails every
// failEvery-th call (never when failEvery is 0). Each benchmark goroutine owns
// one, so it counts without atomics and the pattern is exact per goroutine.
//
// It fills a cache line of its own (64-byte objects are 64-byte aligned),
// so that the backend one goroutine writes on every call never shares a
// line with what another goroutine reads (false sharing would slow every
// contender's parallel rows by chance of allocation).
type backend struct {
	failEvery int
	countdown int
	calls     int
	_         [64 - 24]byte
}

func (s *backend) Call(_ context.Context, req Req) (Resp, error) {
	s.calls++
	if s.failEvery == 0 {
		return req, nil
	}
	s.countdown++
	if s.countdown == s.failEvery {
		s.countdown = 0
		return 0, errBackend
	}
	return req, nil
}

// outcome is what every call of a scenario must add up to, checked after the
// timed loop so that a misconfigured contender (a breaker that trips in the
// 10%-failure scenario, a retry that retries a success) fails the benchmark
// instead of reporting a misleading number.
type outcome int

const (
	allSucceed  outcome = iota // every call reaches the backend and succeeds
	tenthFails                 // every call reaches the backend; every 10th fails
	allRejected                // no call reaches the backend; every call fails
)

// contender is one library's way of doing a scenario's work, built as a
// rampart Layer around the backend. newLayer builds fresh state (a breaker,
// a budget) for one run of the sub-benchmark, outside the timed region; a
// nil newLayer is the floor: the backend called directly.
type contender struct {
	name     string
	newLayer func(b *testing.B) rampart.Layer[Req, Resp]
}

// scenario is one piece of work done by every contender.
type scenario struct {
	failEvery  int
	want       outcome
	contenders []contender
}

// run runs each contender as a sub-benchmark named after it, serially with
// b.Loop or, when parallel, with b.RunParallel: GOMAXPROCS goroutines share
// the layer's state (one breaker, one budget) and each owns a backend.
func (s scenario) run(b *testing.B, parallel bool) {
	for _, c := range s.contenders {
		b.Run(c.name, func(b *testing.B) {
			var layer rampart.Layer[Req, Resp]
			if c.newLayer != nil {
				layer = c.newLayer(b)
			}
			b.ReportAllocs()
			if parallel {
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					inner := &backend{failEvery: s.failEvery}
					svc := rampart.NewBuilder[Req, Resp]().Layer(layer).Service(inner)
					ctx := context.Background()
					var calls, failed int
					for pb.Next() {
						if _, err := svc.Call(ctx, 1); err != nil {
							failed++
						}
						calls++
					}
					s.check(b, calls, failed, inner.calls)
				})
				return
			}
			inner := &backend{failEvery: s.failEvery}
			svc := rampart.NewBuilder[Req, Resp]().Layer(layer).Service(inner)
			ctx := context.Background()
			var calls, failed int
			for b.Loop() {
				if _, err := svc.Call(ctx, 1); err != nil {
					failed++
				}
				calls++
			}
			s.check(b, calls, failed, inner.calls)
		})
	}
}

// check reports an error unless calls calls, of which failed failed, and
// reached backend calls of the backend, add up to the scenario's outcome.
// It is safe to call from RunParallel's goroutines.
func (s scenario) check(b *testing.B, calls, failed, reached int) {
	var wantReached, wantFailed int
	switch s.want {
	case allSucceed:
		wantReached, wantFailed = calls, 0
	case tenthFails:
		wantReached, wantFailed = calls, calls/s.failEvery
	case allRejected:
		wantReached, wantFailed = 0, calls
	}
	if reached != wantReached || failed != wantFailed {
		b.Errorf("%d calls: %d reached the backend and %d failed, want %d and %d",
			calls, reached, failed, wantReached, wantFailed)
	}
}

// floor is the contender that calls the backend directly.
var floor = contender{name: "floor"}
