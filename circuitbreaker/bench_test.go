package circuitbreaker_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
)

var ok = rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) { return req, nil })

func TestAllocs_ClosedSuccess(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{})
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := b.TryAcquire()
		p.Success()
	})
	assert.Zero(t, allocs)
}

func TestAllocs_ClosedFailureAndDone(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: circuitbreaker.DefaultFailures}})
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := b.TryAcquire()
		p.Failure(errBoom)
		q, _ := b.TryAcquire()
		q.Done(nil)
	})
	assert.Zero(t, allocs)
}

func TestAllocs_Layer(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{})
	svc := rampart.NewBuilder[int, int]().Layer(circuitbreaker.NewLayer[int, int](b, nil)).Service(ok)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, 1) })
	assert.Zero(t, allocs)
}

func TestAllocs_LayerOpenReject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute})
		fail(t, b, 1, errBoom)
		svc := rampart.NewBuilder[int, int]().Layer(circuitbreaker.NewLayer[int, int](b, nil)).Service(ok)
		ctx := context.Background()
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := svc.Call(ctx, 1); !errors.Is(err, circuitbreaker.ErrOpen) {
				t.Fatalf("got %v, want a rejection", err)
			}
		})
		assert.Zero(t, allocs)
	})
}

func TestAllocs_OpenReject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Minute})
		fail(t, b, 1, errBoom)
		allocs := testing.AllocsPerRun(1000, func() { _, _ = b.TryAcquire() })
		assert.Zero(t, allocs)
	})
}

func BenchmarkClosedSuccess(b *testing.B) {
	br := newBreaker(b, circuitbreaker.Config{})
	b.ReportAllocs()
	for b.Loop() {
		p, _ := br.TryAcquire()
		p.Success()
	}
}

// BenchmarkClosedSuccessSuppliedClock is BenchmarkClosedSuccess with a
// Config.Clock: the Closed success path reads no clock either way.
func BenchmarkClosedSuccessSuppliedClock(b *testing.B) {
	br := newBreaker(b, circuitbreaker.Config{Clock: clock.System})
	b.ReportAllocs()
	for b.Loop() {
		p, _ := br.TryAcquire()
		p.Success()
	}
}

func BenchmarkClosedSuccessParallel(b *testing.B) {
	br := newBreaker(b, circuitbreaker.Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, _ := br.TryAcquire()
			p.Success()
		}
	})
}

func BenchmarkOpenReject(b *testing.B) {
	br := newBreaker(b, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
	fail(b, br, 1, errBoom)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = br.TryAcquire()
	}
}

func BenchmarkOpenRejectParallel(b *testing.B) {
	br := newBreaker(b, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
	fail(b, br, 1, errBoom)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = br.TryAcquire()
		}
	})
}

func BenchmarkLayer(b *testing.B) {
	br := newBreaker(b, circuitbreaker.Config{})
	svc := rampart.NewBuilder[int, int]().Layer(circuitbreaker.NewLayer[int, int](br, nil)).Service(ok)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, 1)
	}
}

func BenchmarkLayerParallel(b *testing.B) {
	br := newBreaker(b, circuitbreaker.Config{})
	svc := rampart.NewBuilder[int, int]().Layer(circuitbreaker.NewLayer[int, int](br, nil)).Service(ok)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = svc.Call(ctx, 1)
		}
	})
}

// What an unset Config.Clock saves on the paths that read time: the
// policies that time calls (SlowCalls: a reading when the permit is taken
// and one when it is finished) or that place outcomes in time (the time
// window's FailureRate: its failures, and its successes near a bucket
// boundary). Each runs with Config.Clock left nil (the system's clock,
// read directly) and set to clock.System (the same clock behind the Clock
// interface), every 10th call a failure that cannot trip the policy.
// bench/README.md records the difference: the unset clock is the cheaper
// one, since a supplied Clock is read twice for each outcome a policy
// places in time (Now and Monotonic), the system's clock once (a
// time.Now carries both readings).

// clockConfigs returns a Config for each policy that reads the clock on
// its hot path, with Clock left nil and set to clock.System, named
// policy/clock.
func clockConfigs() map[string]circuitbreaker.Config {
	policies := map[string]circuitbreaker.Policy{
		"SlowCalls":  circuitbreaker.SlowCalls{Threshold: time.Second},
		"TimeWindow": circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 10, MinCalls: 20}, Ratio: 0.5},
	}
	configs := map[string]circuitbreaker.Config{}
	for name, p := range policies {
		configs[name+"/nil"] = circuitbreaker.Config{Policy: p}
		configs[name+"/System"] = circuitbreaker.Config{Policy: p, Clock: clock.System}
	}
	return configs
}

// tenthFails returns a function making one call through b, the n-th a
// failure when n is a multiple of 10.
func tenthFails(b *circuitbreaker.Breaker) func() {
	n := 0
	return func() {
		n++
		p, _ := b.TryAcquire()
		if n%10 == 0 {
			p.Failure(errBoom)
			return
		}
		p.Success()
	}
}

func BenchmarkClock_Policies(b *testing.B) {
	for _, name := range slices.Sorted(maps.Keys(clockConfigs())) {
		b.Run(name, func(b *testing.B) {
			br := newBreaker(b, clockConfigs()[name])
			call := tenthFails(br)
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
			if s := br.State().State; s != circuitbreaker.Closed {
				b.Fatalf("state %v after the loop, want Closed", s)
			}
		})
	}
}

// Neither an unset clock nor a supplied one allocates on the paths that
// read it, successes and failures alike.
func TestAllocs_ClockReadingPolicies(t *testing.T) {
	for name, cfg := range clockConfigs() {
		t.Run(name, func(t *testing.T) {
			br := newBreaker(t, cfg)
			assert.Zero(t, testing.AllocsPerRun(1000, tenthFails(br)))
			assert.Equal(t, circuitbreaker.Closed, br.State().State)
		})
	}
}

// benchPolicies are the built-in policies configured so that neither a
// success path nor a mix of one failure in ten ever trips them.
var benchPolicies = []struct {
	name   string
	policy circuitbreaker.Policy
}{
	{name: "Consecutive", policy: circuitbreaker.Consecutive{}},
	{name: "FailureRateCount", policy: circuitbreaker.FailureRate{}},
	{name: "FailureRateTime", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: 10 * time.Second}}},
	{name: "FailureRateTime1000Buckets", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: 10 * time.Second, Buckets: 1000}}},
	{name: "SlowCalls", policy: circuitbreaker.SlowCalls{Threshold: time.Hour}},
	{name: "SuccessRate", policy: circuitbreaker.SuccessRate{}},
	{name: "Any", policy: circuitbreaker.Any(
		circuitbreaker.FailureRate{},
		circuitbreaker.SlowCalls{Threshold: time.Hour},
	)},
}

// Recording outcomes in Closed allocates nothing with any built-in policy,
// for successes and failures alike.
func TestPolicies_AllocsClosed(t *testing.T) {
	for _, tt := range benchPolicies {
		t.Run(tt.name, func(t *testing.T) {
			b := newBreaker(t, circuitbreaker.Config{Policy: tt.policy})
			allocs := testing.AllocsPerRun(1000, func() { tenCalls(b) })
			assert.Zero(t, allocs)
			assert.Equal(t, circuitbreaker.Closed, b.State().State)
		})
	}
}

// tenCalls makes nine successful calls and one failed call through b.
func tenCalls(b *circuitbreaker.Breaker) {
	for i := range 10 {
		p, _ := b.TryAcquire()
		if i == 9 {
			p.Failure(errBoom)
		} else {
			p.Success()
		}
	}
}

// BenchmarkPolicies measures one call through a Closed breaker with each
// built-in policy: TryAcquire and Success, the same with one failure in
// ten, and the success path from parallel goroutines.
func BenchmarkPolicies(b *testing.B) {
	for _, tt := range benchPolicies {
		b.Run(tt.name+"/rampart.Success", func(b *testing.B) {
			br := newBreaker(b, circuitbreaker.Config{Policy: tt.policy})
			b.ReportAllocs()
			for b.Loop() {
				p, _ := br.TryAcquire()
				p.Success()
			}
		})
		b.Run(tt.name+"/Fail10pct", func(b *testing.B) {
			br := newBreaker(b, circuitbreaker.Config{Policy: tt.policy})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p, _ := br.TryAcquire()
				if i++; i == 10 {
					i = 0
					p.Failure(errBoom)
				} else {
					p.Success()
				}
			}
			if s := br.State().State; s != circuitbreaker.Closed {
				b.Fatalf("state %v, want closed", s)
			}
		})
		b.Run(tt.name+"/SuccessParallel", func(b *testing.B) {
			br := newBreaker(b, circuitbreaker.Config{Policy: tt.policy})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, _ := br.TryAcquire()
					p.Success()
				}
			})
		})
	}
}
