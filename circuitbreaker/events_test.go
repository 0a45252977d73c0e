package circuitbreaker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// deliveryGoroutines counts the goroutines that are delivering events.
func deliveryGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "circuitbreaker.(*dispatcher[...]).deliver")
}

func TestSubscribe_CB19_AsyncListenerDoesNotSlowTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:         circuitbreaker.Consecutive{Failures: 1},
			CoolDown:       time.Hour,
			AsyncListeners: true,
		})
		var (
			mu   sync.Mutex
			seen []string
			at   []time.Duration
		)
		start := time.Now()
		b.Subscribe(func(tr circuitbreaker.Transition) {
			time.Sleep(500 * time.Millisecond) // a slow listener
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, tr.From.String()+">"+tr.To.String())
			at = append(at, time.Since(start))
		})
		_, err := circuitbreaker.Run(context.Background(), b, func(context.Context) (int, error) { return 0, errBoom })
		require.ErrorIs(t, err, errBoom)
		assert.Equal(t, time.Duration(0), time.Since(start), "the call that tripped the breaker did not wait for the listener")
		b.Reset()
		assert.Equal(t, time.Duration(0), time.Since(start), "nor did Reset")

		synctest.Wait()
		assert.Equal(t, 1, deliveryGoroutines(), "one goroutine delivers while events are pending")
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []string{"closed>open", "open>closed"}, seen, "in order")
		assert.Equal(t, []time.Duration{500 * time.Millisecond, time.Second}, at, "one at a time")
		mu.Unlock()
		assert.Equal(t, 0, deliveryGoroutines(), "no goroutine is kept once the queue is empty")
	})
}

func TestSubscribe_CB19_AsyncListenerMayCallBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:         circuitbreaker.Consecutive{Failures: 1},
			CoolDown:       time.Hour,
			AsyncListeners: true,
		})
		var seen []string
		b.Subscribe(func(tr circuitbreaker.Transition) {
			seen = append(seen, tr.From.String()+">"+tr.To.String()+" "+b.State().State.String())
			if tr.To == circuitbreaker.Open {
				b.Reset()
			}
		})
		fail(t, b, 1, errBoom)
		synctest.Wait()
		assert.Equal(t, []string{"closed>open open", "open>closed closed"}, seen)
		assert.Equal(t, 0, deliveryGoroutines())
	})
}

func TestSubscribe_CB10_PanicGoesToListenerPanic(t *testing.T) {
	type report struct {
		value any
		stack string
	}
	var got []report
	b := newBreaker(t, circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 1},
		CoolDown: time.Hour,
		ListenerPanic: func(value any, stack []byte) {
			got = append(got, report{value, string(stack)})
		},
	})
	b.Subscribe(panickingListener)
	rec := record(b)
	fail(t, b, 1, errBoom)
	assert.Equal(t, []string{"closed>open"}, rec.edges(), "the other listener still ran")
	require.Len(t, got, 1)
	assert.Equal(t, "listener bug", got[0].value)
	assert.Contains(t, got[0].stack, "panickingListener", "the stack is the listener's")
}

func panickingListener(circuitbreaker.Transition) { panic("listener bug") }

func TestSubscribe_CB10_PanicIsLoggedByDefault(t *testing.T) {
	var buf bytes.Buffer
	defer log.SetOutput(log.Writer())
	defer log.SetFlags(log.Flags())
	log.SetOutput(&buf)
	log.SetFlags(0)
	b := newBreaker(t, circuitbreaker.Config{Name: "payments", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
	b.Subscribe(panickingListener)
	fail(t, b, 1, errBoom)
	out := buf.String()
	assert.True(t, strings.HasPrefix(out, `circuitbreaker "payments": listener panicked: listener bug`+"\n"), out)
	assert.Contains(t, out, "panickingListener")
}

func TestBreaker_CB19_NameInTransitionsErrorsAndSnapshots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Name: "payments", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
		rec := record(b)
		fail(t, b, 1, errBoom)
		oe := openErr(t, b)
		assert.Equal(t, "payments", oe.Name)
		assert.Equal(t, `circuitbreaker "payments": open (retry after 1h0m0s): tripped by: boom`, oe.Error())
		assert.Equal(t, circuitbreaker.Snapshot{Name: "payments", State: circuitbreaker.Open, RetryAfter: time.Hour, Cause: errBoom}, b.State())
		trs := rec.all()
		require.Len(t, trs, 1)
		assert.Equal(t, "payments", trs[0].Name)
	})
}

func TestStrings_CB19_ForeverAndImmediateAreWords(t *testing.T) {
	errMaint := errors.New("maintenance")
	for _, tc := range []struct {
		name string
		v    fmt.Stringer
		want string
	}{
		{name: "forced open", v: circuitbreaker.Snapshot{Name: "db", State: circuitbreaker.ForcedOpen, RetryAfter: rampart.Forever, Cause: errMaint},
			want: `"db": forced-open (until released): maintenance`},
		{name: "open forever", v: circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: rampart.Forever, Cause: errBoom},
			want: `open (until reset): tripped by: boom`},
		{name: "open", v: circuitbreaker.Snapshot{State: circuitbreaker.Open, RetryAfter: 1500 * time.Millisecond, Cause: errBoom},
			want: `open (retry after 1.5s): tripped by: boom`},
		{name: "closed", v: circuitbreaker.Snapshot{State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: 2, Calls: 10, Failures: 3, SlowCalls: 1}},
			want: `closed: 2 consecutive failures; 10 calls, 3 failures, 1 slow calls counted`},
		{name: "closed, no window", v: circuitbreaker.Snapshot{State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{ConsecutiveFailures: 2}},
			want: `closed: 2 consecutive failures`},
		{name: "closed, window only", v: circuitbreaker.Snapshot{State: circuitbreaker.Closed, Counts: circuitbreaker.Counts{Calls: 10}},
			want: `closed: 10 calls, 0 failures, 0 slow calls counted`},
		{name: "closed, nothing counted", v: circuitbreaker.Snapshot{State: circuitbreaker.Closed},
			want: `closed`},
		{name: "half-open", v: circuitbreaker.Snapshot{State: circuitbreaker.HalfOpen, ProbesInFlight: 1, ProbesSucceeded: 2, Cause: errBoom},
			want: `half-open: probes 1 in flight, 2 succeeded, 0 failed: tripped by: boom`},
		{name: "forced closed", v: circuitbreaker.Snapshot{State: circuitbreaker.ForcedClosed},
			want: `forced-closed`},
		{name: "transition", v: circuitbreaker.Transition{Name: "db", From: circuitbreaker.Closed, To: circuitbreaker.Open, Cause: errBoom},
			want: `"db": closed > open: tripped by: boom`},
		{name: "transition without cause", v: circuitbreaker.Transition{From: circuitbreaker.HalfOpen, To: circuitbreaker.Closed},
			want: `half-open > closed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.v.String())
			assert.Equal(t, tc.want, fmt.Sprint(tc.v))
		})
	}
}

func TestGroup_CB19_BreakersAreNamedAfterTheirKey(t *testing.T) {
	g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
		Breaker: circuitbreaker.Config{Name: "hosts", Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour},
	})
	require.NoError(t, err)
	fail(t, g.Breaker("a.example"), 1, errBoom)
	oe := openErr(t, g.Breaker("a.example"))
	assert.Equal(t, `circuitbreaker "hosts/a.example": open (retry after 1h0m0s): tripped by: boom`, oe.Error())
	assert.Equal(t, "hosts/(overflow)", g.Overflow().State().Name)

	unnamed, err := circuitbreaker.NewGroup[int](circuitbreaker.GroupConfig{})
	require.NoError(t, err)
	assert.Equal(t, "42", unnamed.Breaker(42).State().Name)
	assert.Equal(t, "(overflow)", unnamed.Overflow().State().Name)
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
func (p *successTripper) Reset(circuitbreaker.State)  { p.successes = 0 }
func (*successTripper) Counts() circuitbreaker.Counts { return circuitbreaker.Counts{} }
func (*successTripper) TripCause() error              { return errQuota }

func TestPolicy_CB12_UserTrackerNamesTheCauseOfATripOnSuccess(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: &successTripper{}, CoolDown: time.Hour})
	rec := record(b)
	succeed(t, b, 3)
	oe := openErr(t, b)
	assert.Equal(t, errQuota, oe.Cause, "the user tracker's TripCause, as for the built-in SlowCalls")
	require.Len(t, rec.all(), 1)
	assert.Equal(t, errQuota, rec.all()[0].Cause)
}

func TestSubscribe_CB19_AsyncListenerPanicGoesToListenerPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type report struct {
			value any
			stack string
		}
		var (
			mu  sync.Mutex
			got []report
		)
		b := newBreaker(t, circuitbreaker.Config{
			Policy:         circuitbreaker.Consecutive{Failures: 1},
			CoolDown:       time.Hour,
			AsyncListeners: true,
			ListenerPanic: func(value any, stack []byte) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, report{value, string(stack)})
			},
		})
		b.Subscribe(panickingListener)
		rec := record(b)
		fail(t, b, 1, errBoom)
		b.Reset()
		synctest.Wait()
		assert.Equal(t, []string{"closed>open", "open>closed"}, rec.edges(), "the other listener saw both, in order")
		mu.Lock()
		require.Len(t, got, 2, "one report per event")
		for _, r := range got {
			assert.Equal(t, "listener bug", r.value)
			assert.Contains(t, r.stack, "panickingListener", "the stack is the listener's")
		}
		mu.Unlock()
		assert.Equal(t, 0, deliveryGoroutines(), "no delivery goroutine is left")
	})
}

func TestErrors_CB19_SpecialDurationsNamedWhereTheyMeanSomething(t *testing.T) {
	t.Run("config", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			cfg  circuitbreaker.Config
			want string
		}{
			{name: "growth from immediate", cfg: circuitbreaker.Config{CoolDown: circuitbreaker.Immediate, MaxCoolDown: time.Second},
				want: "circuitbreaker: MaxCoolDown needs a positive, finite CoolDown, got Immediate"},
			{name: "growth from forever", cfg: circuitbreaker.Config{CoolDown: rampart.Forever, MaxCoolDown: rampart.Forever},
				want: "circuitbreaker: MaxCoolDown needs a positive, finite CoolDown, got rampart.Forever"},
			{name: "immediate max cool-down", cfg: circuitbreaker.Config{MaxCoolDown: circuitbreaker.Immediate},
				want: "circuitbreaker: MaxCoolDown must be >= 0, got -1ns"},
			{name: "immediate probe lease", cfg: circuitbreaker.Config{ProbeLease: circuitbreaker.Immediate},
				want: "circuitbreaker: ProbeLease must be >= 0, got -1ns"},
			{name: "immediate slow-call threshold", cfg: circuitbreaker.Config{Policy: circuitbreaker.SlowCalls{Threshold: circuitbreaker.Immediate}},
				want: "circuitbreaker: SlowCalls.Threshold must be >= 0, got -1ns"},
			{name: "immediate window period", cfg: circuitbreaker.Config{Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Period: circuitbreaker.Immediate}}},
				want: "circuitbreaker: FailureRate.Window.Period must be >= 0, got -1ns"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := circuitbreaker.New(tc.cfg)
				require.EqualError(t, err, tc.want)
			})
		}
		_, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{IdleTimeout: circuitbreaker.Immediate})
		require.EqualError(t, err, "circuitbreaker: GroupConfig.IdleTimeout must be >= 0 (0 means 10m0s; rampart.Forever never drops), got -1ns")
	})
	t.Run("open forever", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: rampart.Forever})
			fail(t, b, 1, errBoom)
			time.Sleep(time.Hour)
			assert.Equal(t, "circuitbreaker: open (until reset): tripped by: boom", openErr(t, b).Error())
		})
	})
	t.Run("forced open", func(t *testing.T) {
		sw := &circuitbreaker.Switch{}
		b := newBreaker(t, circuitbreaker.Config{Switch: sw})
		sw.ForceOpen(errors.New("maintenance"))
		assert.Equal(t, "circuitbreaker: forced open (until released): maintenance", openErr(t, b).Error())
	})
}

// A Consecutive breaker describes only the run it keeps, and a TripFunc
// breaker the counts it keeps since the Closed period began.
func TestStrings_CB19_SnapshotOfPoliciesWithoutAWindow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy circuitbreaker.Policy
		want   string
	}{
		{name: "consecutive", policy: circuitbreaker.Consecutive{Failures: 5}, want: `"db": closed: 1 consecutive failures`},
		{name: "custom", policy: circuitbreaker.TripFunc(func(circuitbreaker.Counts) bool { return false }), want: `"db": closed: 1 consecutive failures; 1 calls, 1 failures, 0 slow calls counted`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br, err := circuitbreaker.New(circuitbreaker.Config{Name: "db", Policy: tc.policy})
			require.NoError(t, err)
			p, err := br.TryAcquire()
			require.NoError(t, err)
			p.Failure(errBoom)
			assert.Equal(t, tc.want, br.State().String())
		})
	}
}
