package bench_test

import (
	"context"
	"testing"
	"time"

	resbreaker "github.com/eapache/go-resiliency/breaker"
)

// The bare rows: the peers' APIs and context.WithTimeoutCause called
// directly in the benchmark loop, as a plain function call around the
// backend, without the Service shape of the other scenarios (no adapter,
// no interface call). They show what the Service shape itself costs a
// contender; instructions.sh reports them beside the Service rows. Each is
// a named function, so that instructions.sh can count the instructions of
// its loop alone (callgrind's --toggle-collect).

func BenchmarkBare(b *testing.B) {
	b.Run("loop", bareLoop)
	b.Run("resiliency-closed", bareResiliencyClosed)
	b.Run("resiliency-open", bareResiliencyOpen)
	b.Run("resiliency-retrystack", bareResiliencyRetryStack)
	b.Run("timeout", bareTimeoutCause)
}

// bareLoop is the loop of every benchmark without the call: the baseline
// instructions.sh subtracts.
func bareLoop(b *testing.B) {
	var calls int
	for b.Loop() {
		calls++
	}
	if calls != b.N {
		b.Errorf("%d calls, want %d", calls, b.N)
	}
}

// bareResiliencyClosed is a closed go-resiliency breaker's Run around the
// backend.
func bareResiliencyClosed(b *testing.B) {
	br := resbreaker.New(5, 1, time.Minute)
	inner := &backend{}
	ctx := context.Background()
	var calls, failed int
	for b.Loop() {
		if err := br.Run(func() error { _, err := inner.Call(ctx, 1); return err }); err != nil {
			failed++
		}
		calls++
	}
	scenario{want: allSucceed}.check(b, calls, failed, inner.calls)
}

// bareResiliencyOpen is an open go-resiliency breaker's Run, refusing.
func bareResiliencyOpen(b *testing.B) {
	br := resbreaker.New(5, 1, coolDown)
	inner := &backend{}
	ctx := context.Background()
	for range 5 {
		if br.Run(func() error { return errBackend }) == nil {
			b.Fatal("a failing call succeeded")
		}
	}
	var calls, failed int
	for b.Loop() {
		if err := br.Run(func() error { _, err := inner.Call(ctx, 1); return err }); err != nil {
			failed++
		}
		calls++
	}
	scenario{want: allRejected}.check(b, calls, failed, inner.calls)
}

// bareResiliencyRetryStack is a go-resiliency retrier's RunCtx around a
// closed breaker's Run around the backend, succeeding at once.
func bareResiliencyRetryStack(b *testing.B) {
	r := resiliencyRetrier()
	br := resbreaker.New(5, 1, time.Minute)
	inner := &backend{}
	ctx := context.Background()
	var calls, failed int
	for b.Loop() {
		err := r.RunCtx(ctx, func(ctx context.Context) error {
			return br.Run(func() error { _, err := inner.Call(ctx, 1); return err })
		})
		if err != nil {
			failed++
		}
		calls++
	}
	scenario{want: allSucceed}.check(b, calls, failed, inner.calls)
}

// bareTimeoutCause is context.WithTimeoutCause around the backend, then its
// cancel.
func bareTimeoutCause(b *testing.B) {
	inner := &backend{}
	ctx := context.Background()
	var calls, failed int
	for b.Loop() {
		tctx, cancel := context.WithTimeoutCause(ctx, limit, errLimit)
		if _, err := inner.Call(tctx, 1); err != nil {
			failed++
		}
		cancel()
		calls++
	}
	scenario{want: allSucceed}.check(b, calls, failed, inner.calls)
}
