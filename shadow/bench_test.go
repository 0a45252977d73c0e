package shadow_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/shadow"
)

// stack returns a service with n shadow candidates (none when n is 0) over
// a dependency that always succeeds.
func stack(tb testing.TB, n int) rampart.Service[int, int] {
	ok := rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, nil })
	if n == 0 {
		return ok
	}
	var cands []shadow.Candidate
	for i := range n {
		cands = append(cands, shadow.Candidate{Name: fmt.Sprint("c", i), Breaker: circuitbreaker.Config{
			Policy: circuitbreaker.Consecutive{Failures: 5 + i}}})
	}
	sh, err := shadow.New(shadow.Config{Candidates: cands})
	require.NoError(tb, err)
	return shadow.NewLayer[int, int](sh, nil, nil).Wrap(ok)
}

// A Closed success allocates nothing, whatever the number of candidates.
func TestShadow_SH3_NoAllocation(t *testing.T) {
	for _, n := range []int{1, 2, 8} {
		svc := stack(t, n)
		ctx := context.Background()
		assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, 0) }), "%d candidates", n)
	}
}

// BenchmarkLiveBreaker is the live breaker layer a candidate mirrors, for
// comparison: a Closed success through one breaker.
func BenchmarkLiveBreaker(b *testing.B) {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 5}})
	require.NoError(b, err)
	svc := circuitbreaker.NewLayer[int, int](br, nil).Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, nil }))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, 0)
	}
}

// BenchmarkShadow measures a Closed success through 0 (no layer), 1, 2
// and 4 candidates: the cost per candidate is the slope over the count
// (bench/README.md has it, with the instruction count of
// bench/instructions.sh's shadow rows).
func BenchmarkShadow(b *testing.B) {
	for _, n := range []int{0, 1, 2, 4} {
		svc := stack(b, n)
		ctx := context.Background()
		b.Run(fmt.Sprint(n, " candidates"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = svc.Call(ctx, 0)
			}
		})
	}
}
