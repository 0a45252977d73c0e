package inspect_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/inspect"
)

// fleetFunc adapts a function to an inspect.Fleet.
type fleetFunc func(ctx context.Context) (inspect.FleetRecord, error)

func (f fleetFunc) Record(ctx context.Context) (inspect.FleetRecord, error) { return f(ctx) }

// TestAddFleet_OP5_Agree checks the fleet row: the record next to the
// replica's breaker, whether they agree, a read error shown in the row,
// and the deadline the read gets.
func TestAddFleet_OP5_Agree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reg inspect.Registry
		br := newBreaker(t, circuitbreaker.Config{Name: "payments", Policy: circuitbreaker.Consecutive{Failures: 1}})
		rec := inspect.FleetRecord{Key: "payments", State: "open", RetryAfterSeconds: 12, Cause: "503", By: "a", Generation: 3, Replica: "b"}
		var readErr error
		var deadline time.Duration
		reg.AddFleet(br, fleetFunc(func(ctx context.Context) (inspect.FleetRecord, error) {
			d, _ := ctx.Deadline()
			deadline = time.Until(d)
			return rec, readErr
		}))

		s := reg.Status(t.Context()).Fleets
		require.Len(t, s, 1)
		assert.Equal(t, rec, s[0].Record)
		assert.Equal(t, "closed", s[0].Local.State)
		assert.False(t, s[0].Agree, "the fleet is open, this replica closed")

		_, _, body := get(t, &reg, "/")
		assert.Contains(t, body, `<tr class="disagree" data-name="payments" data-agree="false">`)
		assert.Equal(t, inspect.DefaultFleetTimeout, deadline)

		require.ErrorIs(t, call(br, errBoom), errBoom)
		s = reg.Status(t.Context()).Fleets
		assert.True(t, s[0].Agree, "both open")

		readErr = errors.New("redis: connection refused")
		s = reg.Status(t.Context()).Fleets
		assert.Equal(t, inspect.FleetStatus{Error: "redis: connection refused", Local: s[0].Local, Agree: true}, s[0])
	})
}

// TestAddFleet_OP5_AgreeTable checks agreement for every pair of states.
func TestAddFleet_OP5_AgreeTable(t *testing.T) {
	var reg inspect.Registry
	for _, tc := range []struct {
		fleet string
		local func(*circuitbreaker.Breaker, *circuitbreaker.Switch)
		agree bool
	}{
		{fleet: "closed", local: func(*circuitbreaker.Breaker, *circuitbreaker.Switch) {}, agree: true},
		{fleet: "open", local: func(*circuitbreaker.Breaker, *circuitbreaker.Switch) {}, agree: false},
		{fleet: "half-open", local: func(*circuitbreaker.Breaker, *circuitbreaker.Switch) {}, agree: true},
		{fleet: "closed", local: func(b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) { call(b, errBoom) }, agree: false},
		{fleet: "open", local: func(b *circuitbreaker.Breaker, _ *circuitbreaker.Switch) { call(b, errBoom) }, agree: true},
		{fleet: "closed", local: func(_ *circuitbreaker.Breaker, s *circuitbreaker.Switch) { s.ForceOpen(nil) }, agree: false},
		{fleet: "open", local: func(_ *circuitbreaker.Breaker, s *circuitbreaker.Switch) { s.ForceClosed() }, agree: false},
		{fleet: "half-open", local: func(_ *circuitbreaker.Breaker, s *circuitbreaker.Switch) { s.ForceOpen(nil) }, agree: true},
	} {
		var sw circuitbreaker.Switch
		br := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, Switch: &sw})
		tc.local(br, &sw)
		remove := reg.AddFleet(br, fleetFunc(func(context.Context) (inspect.FleetRecord, error) {
			return inspect.FleetRecord{State: tc.fleet}, nil
		}))
		f := reg.Status(t.Context()).Fleets[0]
		assert.Equal(t, tc.agree, f.Agree, "fleet %s, local %s", tc.fleet, f.Local.State)
		remove()
	}
}
