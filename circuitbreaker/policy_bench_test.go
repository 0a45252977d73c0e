package circuitbreaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/circuitbreaker"
)

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
