package bench_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
)

// Concurrency limits. ConcurrencyAcquire is one acquire and one release of
// a slot, uncontended (the limit, 1000, is never reached): "rampart" is
// concurrency.AdaptiveLimiter (Acquire, then Release of its Permit),
// "rampart-fixed" the fixed concurrency.Limiter (Acquire, Release), and
// "failsafe" failsafe-go's adaptivelimiter (AcquirePermit, then Record,
// which feeds its estimate as rampart's Release does). Both adaptive
// limiters have their minimum, maximum and initial limits at 1000, so the
// limit never moves and no acquire ever waits: the row measures the path,
// not the estimator. Each still measures every call and updates its
// estimate once per window (rampart 1s, failsafe-go its default 1s with
// at least 50 samples). The floor is the cheapest in-flight count: one
// atomic add and one atomic subtract on a counter shared by every
// goroutine. ConcurrencyLayer is the same through each library's layer,
// in Wait mode (rampart) and through failsafe.With (failsafe-go).

const benchLimit = 1000

func BenchmarkConcurrencyAcquire(b *testing.B)         { concurrencyAcquire(b, false) }
func BenchmarkConcurrencyAcquireParallel(b *testing.B) { concurrencyAcquire(b, true) }
func BenchmarkConcurrencyLayer(b *testing.B)           { concurrencyLayer().run(b, false) }
func BenchmarkConcurrencyLayerParallel(b *testing.B)   { concurrencyLayer().run(b, true) }

func concurrencyAcquire(b *testing.B, parallel bool) {
	ctx := context.Background()
	b.Run("floor", func(b *testing.B) {
		var n atomic.Int64
		b.ReportAllocs()
		loop(b, parallel, func() {
			n.Add(1)
			n.Add(-1)
		})
	})
	b.Run("rampart", func(b *testing.B) {
		lim := newAdaptive(b)
		b.ReportAllocs()
		loop(b, parallel, func() {
			p, err := lim.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			lim.Release(p)
		})
	})
	b.Run("rampart-fixed", func(b *testing.B) {
		lim, err := concurrency.New(benchLimit)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		loop(b, parallel, func() {
			if err := lim.Acquire(ctx); err != nil {
				b.Fatal(err)
			}
			lim.Release()
		})
	})
	b.Run("failsafe", func(b *testing.B) {
		lim := newFailsafeAdaptive()
		b.ReportAllocs()
		loop(b, parallel, func() {
			p, err := lim.AcquirePermit(ctx)
			if err != nil {
				b.Fatal(err)
			}
			p.Record()
		})
	})
}

func concurrencyLayer() scenario {
	return scenario{want: allSucceed, contenders: []contender{
		floor,
		{name: "rampart", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
			return concurrencyNewLayer(b, newAdaptive(b))
		}},
		{name: "rampart-fixed", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
			lim, err := concurrency.New(benchLimit)
			if err != nil {
				b.Fatal(err)
			}
			return concurrencyNewLayer(b, lim)
		}},
		{name: "failsafe", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			return failsafeLayer(failsafe.With[Resp](newFailsafeAdaptive()))
		}},
	}}
}

func concurrencyNewLayer(b *testing.B, lim concurrency.Slots) rampart.Layer[Req, Resp] {
	l, err := concurrency.NewLayer[Req, Resp](concurrency.Config{Limiter: lim, Mode: concurrency.Wait})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func newAdaptive(b *testing.B) *concurrency.AdaptiveLimiter {
	lim, err := concurrency.NewAdaptive(concurrency.AdaptiveConfig{MinLimit: benchLimit, MaxLimit: benchLimit})
	if err != nil {
		b.Fatal(err)
	}
	return lim
}

func newFailsafeAdaptive() adaptivelimiter.AdaptiveLimiter[Resp] {
	return adaptivelimiter.NewBuilder[Resp]().WithLimits(benchLimit, benchLimit, benchLimit).Build()
}
