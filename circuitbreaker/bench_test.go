package circuitbreaker_test

import (
	"context"
	"errors"
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
