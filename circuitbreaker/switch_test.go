package circuitbreaker_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

var errMaintenance = errors.New("maintenance")

func TestSwitch_CB12_ForceOpenClosedRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := &circuitbreaker.Switch{}
		cfg := circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Second, Switch: sw}
		b1, b2 := newBreaker(t, cfg), newBreaker(t, cfg)
		rec1, rec2 := record(b1), record(b2)
		fail(t, b1, 1, errBoom)

		sw.ForceOpen(errMaintenance)
		for _, b := range []*circuitbreaker.Breaker{b1, b2} {
			assert.Equal(t, circuitbreaker.Snapshot{
				State: circuitbreaker.ForcedOpen, RetryAfter: rampart.Forever, Cause: errMaintenance,
			}, b.State())
			oe := openErr(t, b)
			assert.Equal(t, rampart.Forever, oe.RetryAfter())
			assert.Equal(t, errMaintenance, oe.Cause)
		}
		state, forced, reason := sw.Forced()
		assert.Equal(t, circuitbreaker.ForcedOpen, state)
		assert.True(t, forced)
		assert.Equal(t, errMaintenance, reason)
		tr := rec2.all()
		require.Len(t, tr, 1)
		assert.Equal(t, circuitbreaker.Transition{
			From: circuitbreaker.Closed, To: circuitbreaker.ForcedOpen, Time: time.Now(), Cause: errMaintenance,
		}, tr[0])

		sw.ForceClosed()
		fail(t, b1, 5, errBoom) // admitted, recorded nowhere
		p, err := b1.TryAcquire()
		require.NoError(t, err)
		assert.False(t, p.Failure(errBoom), "forced closed records nothing")
		assert.Equal(t, circuitbreaker.ForcedClosed, b1.State().State)

		sw.Release()
		sw.Release() // not forcing: nothing happens
		assert.Equal(t, circuitbreaker.Snapshot{State: circuitbreaker.Closed}, b1.State(), "released with a clean history")
		want := []string{"closed>forced-open", "forced-open>forced-closed", "forced-closed>closed"}
		assert.Equal(t, want, rec1.edges())
		assert.Equal(t, want, rec2.edges())
		_, forced, _ = sw.Forced()
		assert.False(t, forced)
	})
}

func TestSwitch_CB12_EarlierTimersAndPermitsCannotUndo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := &circuitbreaker.Switch{}
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second, Switch: sw})
		rec := record(b)
		fail(t, b, 1, errBoom) // Open, cool-down of 1s armed
		time.Sleep(time.Second)
		probe, err := b.TryAcquire()
		require.NoError(t, err)

		sw.ForceOpen(nil)
		assert.False(t, probe.Success(), "a probe from before the switch is stale")
		time.Sleep(time.Hour)
		assert.Equal(t, circuitbreaker.ForcedOpen, b.State().State)
		openErr(t, b)
		b.Reset()
		assert.Equal(t, circuitbreaker.ForcedOpen, b.State().State, "Reset does not override the switch")

		sw.ForceOpen(errMaintenance) // a new reason is a manual change too
		assert.Equal(t, []string{"closed>open", "open>half-open", "half-open>forced-open", "forced-open>forced-open"}, rec.edges())
		assert.Equal(t, errMaintenance, b.State().Cause)
	})
}

func TestSwitch_CB12_NewBreakerStartsForced(t *testing.T) {
	sw := &circuitbreaker.Switch{}
	sw.ForceOpen(errMaintenance)
	b := newBreaker(t, circuitbreaker.Config{Switch: sw})
	rec := record(b)
	assert.Equal(t, circuitbreaker.ForcedOpen, b.State().State)
	sw.Release()
	assert.Equal(t, []string{"forced-open>closed"}, rec.edges(), "no transition from before Subscribe")
}

func TestSwitch_CB12_ListenerMayUseSwitch(t *testing.T) {
	sw := &circuitbreaker.Switch{}
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, Switch: sw})
	rec := record(b)
	b.Subscribe(func(tr circuitbreaker.Transition) {
		if tr.To == circuitbreaker.Open {
			sw.ForceOpen(errMaintenance) // escalate: keep it open until an operator looks
		}
	})
	fail(t, b, 1, errBoom)
	assert.Equal(t, []string{"closed>open", "open>forced-open"}, rec.edges())
	assert.Equal(t, circuitbreaker.ForcedOpen, b.State().State)
}

// TestSwitch_CB15_NilSwitch calls every exported method of a nil
// *Switch: it has no breaker attached, so it changes nothing and reports
// itself released.
func TestSwitch_CB15_NilSwitch(t *testing.T) {
	var s *circuitbreaker.Switch
	type forced struct {
		State  circuitbreaker.State
		Forced bool
		Reason error
	}
	released := forced{State: circuitbreaker.Closed}
	for _, tc := range []struct {
		name string
		use  func()
	}{
		{name: "ForceOpen", use: func() { s.ForceOpen(errors.New("maintenance")) }},
		{name: "ForceClosed", use: func() { s.ForceClosed() }},
		{name: "Release", use: func() { s.Release() }},
		{name: "Forced", use: func() {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.use()
			state, isForced, reason := s.Forced()
			assert.Equal(t, released, forced{state, isForced, reason})
		})
	}
}
