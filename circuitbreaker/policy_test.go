package circuitbreaker_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
)

// clockTracker is a user policy that keeps the clock the breaker gives it
// and the Monotonic reading of the last outcome.
type clockTracker struct {
	clock clock.Clock
	uses  int
	last  time.Duration
}

func (p *clockTracker) NewTracker() (circuitbreaker.Tracker, error) { return p, nil }
func (p *clockTracker) Record(c circuitbreaker.Call) bool {
	p.last = c.Monotonic
	return false
}
func (*clockTracker) Probe(circuitbreaker.Call, circuitbreaker.Probes) circuitbreaker.Verdict {
	return circuitbreaker.VerdictPending
}
func (*clockTracker) Reset(circuitbreaker.State)    {}
func (*clockTracker) Counts() circuitbreaker.Counts { return circuitbreaker.Counts{} }
func (p *clockTracker) UseClock(c clock.Clock) {
	p.clock = c
	p.uses++
}

func TestPolicy_CB12_UserTrackerReceivesTheBreakersClock(t *testing.T) {
	fc := newFakeClock()
	p := &clockTracker{}
	b := newBreaker(t, circuitbreaker.Config{Policy: p, Clock: fc})
	require.NotNil(t, p.clock)
	assert.Equal(t, 1, p.uses, "given once, when the breaker is built")

	fc.Advance(5 * time.Second)
	assert.Equal(t, 5*time.Second, p.clock.Monotonic(), "Monotonic shares the origin of Call.Monotonic")
	succeed(t, b, 1)
	assert.Equal(t, 5*time.Second, p.last)
	assert.Equal(t, fc.Now(), p.clock.Now(), "the wall reading is Config.Clock's")

	fired := false
	p.clock.AfterFunc(time.Second, func() { fired = true })
	fc.Advance(999 * time.Millisecond)
	assert.False(t, fired)
	fc.Advance(time.Millisecond)
	assert.True(t, fired, "timers run on Config.Clock")
}

func TestPolicy_CB12_UserTrackerReceivesTheSystemClockWithoutConfigClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &clockTracker{}
		b := newBreaker(t, circuitbreaker.Config{Policy: p})
		require.NotNil(t, p.clock, "never nil: the system's clock")
		time.Sleep(3 * time.Second)
		assert.Equal(t, 3*time.Second, p.clock.Monotonic())
		_, err := circuitbreaker.Run(context.Background(), b, func(context.Context) (int, error) { return 1, nil })
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second, p.last)
		assert.Equal(t, time.Now(), p.clock.Now())
		start := time.Now()
		done := make(chan time.Duration, 1)
		p.clock.AfterFunc(2*time.Second, func() { done <- time.Since(start) })
		assert.Equal(t, 2*time.Second, <-done)
	})
}

// successTripper trips on the third success, for a reason of its own.
type successTripper struct{ successes int }

var errQuota = errors.New("quota spent")

func (p *successTripper) NewTracker() (circuitbreaker.Tracker, error) { return p, nil }

func (p *successTripper) Record(c circuitbreaker.Call) bool {
	if c.Outcome == rampart.Success {
		p.successes++
	}
	return p.successes >= 3
}

func (*successTripper) Probe(circuitbreaker.Call, circuitbreaker.Probes) circuitbreaker.Verdict {
	return circuitbreaker.VerdictPending
}

func (p *successTripper) Reset(circuitbreaker.State) { p.successes = 0 }

func (*successTripper) Counts() circuitbreaker.Counts { return circuitbreaker.Counts{} }

func (*successTripper) TripCause() error { return errQuota }

func TestPolicy_CB12_UserTrackerNamesTheCauseOfATripOnSuccess(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: &successTripper{}, CoolDown: time.Hour})
	rec := record(b)
	succeed(t, b, 3)
	oe := openErr(t, b)
	assert.Equal(t, errQuota, oe.Cause, "the user tracker's TripCause, as for the built-in SlowCalls")
	require.Len(t, rec.all(), 1)
	assert.Equal(t, errQuota, rec.all()[0].Cause)
}

func TestPolicy_CB13_Validation(t *testing.T) {
	tests := []struct {
		name   string
		policy circuitbreaker.Policy
		want   string
	}{
		{name: "ratio above one", policy: circuitbreaker.FailureRate{Ratio: 1.5},
			want: "circuitbreaker: FailureRate.Ratio must be in (0, 1], got 1.5"},
		{name: "negative ratio", policy: circuitbreaker.FailureRate{Ratio: -0.1},
			want: "circuitbreaker: FailureRate.Ratio must be in (0, 1], got -0.1"},
		{name: "NaN ratio", policy: circuitbreaker.SlowCalls{Ratio: math.NaN()},
			want: "circuitbreaker: SlowCalls.Ratio must be in (0, 1], got NaN"},
		{name: "size and period", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 5, Period: time.Second}},
			want: "circuitbreaker: FailureRate.Window.Size must be 0 with a Period, got 5"},
		{name: "buckets without period", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Buckets: 5}},
			want: "circuitbreaker: FailureRate.Window.Buckets needs a Period, got 5 buckets without one"},
		{name: "too many buckets", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: time.Second, Buckets: 5000}},
			want: "circuitbreaker: FailureRate.Window.Buckets must be in [0, 1000], got 5000"},
		{name: "period too short", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: 5, Buckets: 10}},
			want: "circuitbreaker: FailureRate.Window.Period must be at least Buckets (10) nanoseconds, got 5ns"},
		{name: "negative period", policy: circuitbreaker.SlowCalls{Window: circuitbreaker.Window{Period: -time.Second}},
			want: "circuitbreaker: SlowCalls.Window.Period must be >= 0, got -1s"},
		{name: "absurd size", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 1 << 30}},
			want: "circuitbreaker: FailureRate.Window.Size must be <= 1000000, got 1073741824"},
		{name: "min calls above size", policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 10, MinCalls: 11}},
			want: "circuitbreaker: FailureRate.Window.MinCalls must be <= Size (10), got 11"},
		{name: "negative threshold", policy: circuitbreaker.SlowCalls{Threshold: -time.Second},
			want: "circuitbreaker: SlowCalls.Threshold must be >= 0, got -1s"},
		{name: "negative probes", policy: circuitbreaker.SuccessRate{Probes: -1},
			want: "circuitbreaker: SuccessRate.Probes must be >= 0, got -1"},
		{name: "probe ratio zero point", policy: circuitbreaker.SuccessRate{Ratio: 2},
			want: "circuitbreaker: SuccessRate.Ratio must be in (0, 1], got 2"},
		{name: "bad trip policy", policy: circuitbreaker.SuccessRate{Trip: circuitbreaker.Consecutive{Failures: -3}},
			want: "circuitbreaker: Consecutive.Failures must be >= 0, got -3 (SuccessRate.Trip)"},
		{name: "empty any", policy: circuitbreaker.Any(),
			want: "circuitbreaker: Any needs at least one policy"},
		{name: "nil in any", policy: circuitbreaker.Any(circuitbreaker.Consecutive{}, nil),
			want: "circuitbreaker: Any policy 1 is nil"},
		{name: "bad policy in any", policy: circuitbreaker.Any(circuitbreaker.FailureRate{Ratio: 3}),
			want: "circuitbreaker: FailureRate.Ratio must be in (0, 1], got 3 (Any policy 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := circuitbreaker.New(circuitbreaker.Config{Policy: tt.policy})
			require.EqualError(t, err, tt.want)
			assert.Nil(t, b)
		})
	}
}

// Each policy asks for the clock readings it needs and no more: a count
// window reads no clock, a time window one reading per outcome, a slow-call
// policy two per call; a combination asks for the most any member needs.
func TestPolicies_CB12_Timing(t *testing.T) {
	count := circuitbreaker.FailureRate{}
	windowed := circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: time.Second}}
	slow := circuitbreaker.SlowCalls{}
	tests := []struct {
		name   string
		policy circuitbreaker.Policy
		want   circuitbreaker.Timing
	}{
		{name: "Consecutive", policy: circuitbreaker.Consecutive{}, want: circuitbreaker.TimingNone},
		{name: "count window", policy: count, want: circuitbreaker.TimingNone},
		// A FailureRate time window reads the breaker's clock itself, and
		// only near a bucket boundary.
		{name: "time window", policy: windowed, want: circuitbreaker.TimingNone},
		{name: "slow calls", policy: slow, want: circuitbreaker.TimingLatency},
		{name: "slow calls in a time window", policy: circuitbreaker.SlowCalls{Window: windowed.Window}, want: circuitbreaker.TimingLatency},
		{name: "success rate over a count window", policy: circuitbreaker.SuccessRate{Trip: count}, want: circuitbreaker.TimingNone},
		{name: "success rate over a time window", policy: circuitbreaker.SuccessRate{Trip: windowed}, want: circuitbreaker.TimingNone},
		{name: "any of count and time", policy: circuitbreaker.Any(count, windowed), want: circuitbreaker.TimingNone},
		{name: "any with slow calls", policy: circuitbreaker.Any(slow, count), want: circuitbreaker.TimingLatency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := tt.policy.NewTracker()
			require.NoError(t, err)
			assert.Equal(t, tt.want, circuitbreaker.TimingOf(tr))
		})
	}
}

// TestPolicies_CB12_Hammer drives each window policy from many goroutines,
// with the breaker tripping and closing all the time, and checks the
// invariants of every snapshot: a count window never holds more than its
// size, failures and slow calls never exceed calls, probes in flight never
// exceed MaxProbes. Run it with -race. Afterwards the policy still counts
// exactly. It runs in a bubble so that failing calls take exactly a
// millisecond: slow for SlowCalls, and the time window rotates.
func TestPolicies_CB12_Hammer(t *testing.T) {
	const (
		size      = 20
		maxProbes = 3
	)
	tests := []struct {
		name     string
		policy   circuitbreaker.Policy
		maxCalls int // bound on Counts.Calls; 0 for none
	}{
		{name: "FailureRateCount", maxCalls: size, policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Size: size, MinCalls: 5}, Ratio: 0.4,
		}},
		{name: "FailureRateTime", policy: circuitbreaker.FailureRate{
			Window: circuitbreaker.Window{Period: time.Second, MinCalls: 5}, Ratio: 0.4,
		}},
		{name: "SlowCalls", maxCalls: size, policy: circuitbreaker.SlowCalls{
			Threshold: time.Millisecond, Window: circuitbreaker.Window{Size: size}, Ratio: 0.5,
		}},
		{name: "SuccessRateAny", maxCalls: size, policy: circuitbreaker.SuccessRate{
			Trip: circuitbreaker.Any(
				circuitbreaker.Consecutive{Failures: 4},
				circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: size, MinCalls: 5}, Ratio: 0.4},
			),
			Probes: 6, Ratio: 0.5,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBreaker(t, circuitbreaker.Config{
					Policy: tt.policy, CoolDown: circuitbreaker.Immediate, MaxProbes: maxProbes,
				})
				var trips atomic.Int64
				b.Subscribe(func(tr circuitbreaker.Transition) {
					if tr.To == circuitbreaker.Open {
						trips.Add(1)
					}
				})
				var wg sync.WaitGroup
				for g := range 8 {
					wg.Go(func() {
						for i := range 2000 {
							p, err := b.TryAcquire()
							if err != nil {
								continue
							}
							if (i*7+g)%5 < 3 { // three calls in five fail, slowly
								time.Sleep(time.Millisecond)
								p.Failure(errBoom)
							} else {
								p.Success()
							}
							if i%16 != 0 {
								continue
							}
							s := b.State()
							c := s.Counts
							if tt.maxCalls > 0 {
								assert.LessOrEqual(t, c.Calls, tt.maxCalls)
							}
							assert.LessOrEqual(t, c.Failures, c.Calls)
							assert.LessOrEqual(t, c.SlowCalls, c.Calls)
							assert.LessOrEqual(t, s.ProbesInFlight, maxProbes)
						}
					})
				}
				wg.Wait()
				assert.NotZero(t, trips.Load(), "the policy tripped")

				b.Reset()
				require.Equal(t, circuitbreaker.Snapshot{}, b.State())
				outcomes(t, b, "FSSSS") // below every ratio and run above
				assert.Equal(t, circuitbreaker.Snapshot{Counts: circuitbreaker.Counts{Calls: 5, Failures: 1}}, b.State())
			})
		})
	}
}
