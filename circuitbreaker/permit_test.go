package circuitbreaker_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
)

// Permits used by hand report every call once, with the outcome it was
// finished with, whatever the state: a refusal, a second finish (not
// reported), a stale permit, a probe whose lease expired, a permit of a
// forced-closed breaker.
func TestPermit_EV12_EveryFinishReportedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var obs observetest.Counter
		sw := &circuitbreaker.Switch{}
		b := newBreaker(t, circuitbreaker.Config{
			Name: "db", Policy: circuitbreaker.Consecutive{Failures: 3}, CoolDown: time.Second,
			ProbeLease: 10 * time.Second, Observer: &obs, Switch: sw,
		})
		got := newTally()
		acquire := func() *circuitbreaker.Permit {
			p, err := b.TryAcquire()
			if err != nil {
				require.ErrorIs(t, err, circuitbreaker.ErrOpen)
				got["rejected"]++
				return nil
			}
			return &p
		}
		ctx := context.Background()
		canceled, cancel := context.WithCancel(ctx)
		cancel()

		for range 4 {
			p := acquire()
			require.True(t, p.Success())
			require.False(t, p.Success(), "a second finish is a no-op")
			got["success"]++
		}
		p := acquire()
		p.Ignore()
		got["ignored"]++
		p = acquire()
		require.True(t, p.Done(nil))
		got["success"]++
		p = acquire()
		require.True(t, p.DoneContext(ctx, nil))
		got["success"]++
		p = acquire()
		require.False(t, p.DoneContext(canceled, errBoom), "the caller gave up")
		got["ignored"]++

		stale := acquire() // finished after the trip below
		for range 3 {
			p = acquire()
			require.True(t, p.Failure(errBoom))
			p.Failure(errBoom) // no-op
			got["failure"]++
		}
		require.Equal(t, circuitbreaker.Open, b.State().State)
		require.False(t, stale.Done(errBoom), "stale: not counted")
		got["failure"]++
		for range 5 {
			require.Nil(t, acquire())
		}

		time.Sleep(time.Second)
		probe := acquire()
		require.NotNil(t, probe)
		require.Nil(t, acquire(), "the probe slot is taken")
		time.Sleep(10 * time.Second) // the lease expires
		require.False(t, probe.Success(), "its lease expired: not counted")
		got["success"]++
		probe = acquire() // a new probe in the freed slot
		require.True(t, probe.Success())
		got["success"]++
		require.Equal(t, circuitbreaker.Closed, b.State().State)

		sw.ForceClosed()
		p = acquire()
		require.False(t, p.Failure(errBoom), "forced closed: nothing is recorded")
		got["failure"]++
		sw.ForceOpen(errBoom)
		require.Nil(t, acquire())

		require.Equal(t, map[string]int(got), obs.Outcomes())
		require.Equal(t, map[string]int{"success": 8, "failure": 5, "ignored": 2, "rejected": 7}, obs.Outcomes())
	})
}

// TestClassify_CB8_RejectionIsAFailureWhateverItsCause checks that a
// refusal by an inner breaker is judged as a refusal, not as the
// failure that tripped that breaker: one tripped by a dependency's own
// context.Canceled is still a failure for an outer breaker, as every
// refusal was before refusals carried their cause.
func TestClassify_CB8_RejectionIsAFailureWhateverItsCause(t *testing.T) {
	inner := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	fail(t, inner, 1, context.Canceled) // the dependency's own cancellation
	rejection := openErr(t, inner)
	require.ErrorIs(t, rejection, context.Canceled)

	assert.Equal(t, rampart.Failure, circuitbreaker.Classify(rejection))
	assert.Equal(t, rampart.Failure, circuitbreaker.Classify(fmt.Errorf("wrapped: %w", rejection)))
	assert.Equal(t, rampart.Failure, circuitbreaker.ClassifyContext(t.Context(), rejection))

	outer := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	p, err := outer.TryAcquire()
	require.NoError(t, err)
	require.True(t, p.Done(rejection), "an inner rejection counts for the outer breaker")
	assert.Equal(t, rejection, openErr(t, outer).Cause)
}

// TestPermit_CB15_ZeroPermitIsFinished checks the documented zero Permit.
func TestPermit_CB15_ZeroPermitIsFinished(t *testing.T) {
	var p circuitbreaker.Permit
	assert.False(t, p.Success())
	assert.False(t, p.Failure(errBoom))
	assert.False(t, p.Done(errBoom))
	assert.False(t, p.DoneContext(t.Context(), errBoom))
	p.Ignore()
}

// TestPermit_CB15_NilPermitIsFinished calls every exported method of a
// nil *Permit: it behaves as the zero Permit, finished already.
func TestPermit_CB15_NilPermitIsFinished(t *testing.T) {
	var p *circuitbreaker.Permit
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Success", Call: func() any { return p.Success() }, Want: false},
		{Name: "Failure", Call: func() any { return p.Failure(errBoom) }, Want: false},
		{Name: "Ignore", Call: func() any { p.Ignore(); return p.Probe() }, Want: false},
		{Name: "Done nil", Call: func() any { return p.Done(nil) }, Want: false},
		{Name: "Done err", Call: func() any { return p.Done(errBoom) }, Want: false},
		{Name: "DoneContext nil", Call: func() any { return p.DoneContext(t.Context(), nil) }, Want: false},
		{Name: "DoneContext err", Call: func() any { return p.DoneContext(t.Context(), errBoom) }, Want: false},
		{Name: "Move", Call: func() any { m := p.Move(); return m.Success() }, Want: false},
		{Name: "Probe", Call: func() any { return p.Probe() }, Want: false},
	})
}
