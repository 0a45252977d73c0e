package inspect_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/inspect"
	"github.com/rampart-go/rampart/internal/nilcheck"
)

// TestRegistry_OP4_JSON checks the JSON of a registry holding one value of
// each kind, byte for byte, on synctest's clock: a breaker tripped 2s ago
// (8s of its 10s cool-down left, one call refused), a budget that refused
// a withdrawal, a fixed limit with one call in flight, a group of two keys.
func TestRegistry_OP4_JSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, err := inspect.New(inspect.Config{Transitions: 3})
		require.NoError(t, err)
		obs := reg.Observer()
		br := newBreaker(t, circuitbreaker.Config{
			Name: "db", Observer: obs, Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: 10 * time.Second,
		})
		rb, err := budget.New(budget.Config{Name: "db", Observer: obs, MinPerSecond: budget.NoFloor, Ratio: 0.5})
		require.NoError(t, err)
		lim, err := concurrency.New(4)
		require.NoError(t, err)
		g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
			Breaker: circuitbreaker.Config{Name: "tenants", Observer: obs},
		})
		require.NoError(t, err)
		reg.AddBreaker(br)
		reg.AddBudget("db", rb)
		reg.AddLimiter("db", lim)
		inspect.AddGroup(reg, "tenants", g)

		require.NoError(t, call(g.Breaker("a"), nil))
		require.ErrorIs(t, call(g.Breaker("b"), errBoom), errBoom)
		time.Sleep(time.Second)
		rb.Deposit()
		rb.Deposit()
		rb.Deposit()
		require.True(t, rb.Withdraw())
		require.False(t, rb.Withdraw()) // 1.5 deposited, 1 withdrawn
		require.True(t, lim.TryAcquire())
		require.ErrorIs(t, call(br, errBoom), errBoom)
		require.ErrorIs(t, call(br, errBoom), errBoom) // trips at 00:00:01
		time.Sleep(2 * time.Second)
		require.ErrorIs(t, call(br, nil), circuitbreaker.ErrOpen)

		code, ctype, body := get(t, reg, "/debug/rampart?format=json")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "application/json", ctype)
		assert.Equal(t, `{
  "time": "2000-01-01T00:00:03Z",
  "breakers": [
    {
      "name": "db",
      "state": "open",
      "since": "2000-01-01T00:00:01Z",
      "retry_after_seconds": 8,
      "cause": "connection refused",
      "consecutive_failures": 0,
      "calls": 0,
      "failures": 0,
      "slow_calls": 0,
      "probes_in_flight": 0,
      "probes_succeeded": 0,
      "probes_failed": 0,
      "remote": false,
      "rejected": 1
    }
  ],
  "groups": [
    {
      "name": "tenants",
      "breakers": [
        {
          "name": "tenants/a",
          "key": "a",
          "state": "closed",
          "since": "2000-01-01T00:00:00Z",
          "consecutive_failures": 0,
          "calls": 0,
          "failures": 0,
          "slow_calls": 0,
          "probes_in_flight": 0,
          "probes_succeeded": 0,
          "probes_failed": 0,
          "remote": false,
          "rejected": 0
        },
        {
          "name": "tenants/b",
          "key": "b",
          "state": "closed",
          "since": "2000-01-01T00:00:00Z",
          "consecutive_failures": 1,
          "calls": 0,
          "failures": 0,
          "slow_calls": 0,
          "probes_in_flight": 0,
          "probes_succeeded": 0,
          "probes_failed": 0,
          "remote": false,
          "rejected": 0
        }
      ]
    }
  ],
  "budgets": [
    {
      "name": "db",
      "balance": 0.5,
      "refused": 1
    }
  ],
  "limiters": [
    {
      "name": "db",
      "kind": "fixed",
      "limit": 4,
      "in_flight": 1,
      "refused": 0
    }
  ],
  "fleets": [],
  "transitions": [
    {
      "time": "2000-01-01T00:00:01Z",
      "name": "db",
      "from": "closed",
      "to": "open",
      "cause": "connection refused"
    }
  ]
}
`, body)
	})
}

// TestRegistry_OP4_Empty checks the JSON of a zero Registry: every list
// present and empty.
func TestRegistry_OP4_Empty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reg inspect.Registry
		_, _, body := get(t, &reg, "/?format=json")
		assert.Equal(t, emptyJSON, body)
	})
}

// emptyJSON is the JSON of a Registry holding nothing, at the start of a
// synctest bubble.
const emptyJSON = `{
  "time": "2000-01-01T00:00:00Z",
  "breakers": [],
  "groups": [],
  "budgets": [],
  "limiters": [],
  "fleets": [],
  "transitions": []
}
`

// TestRegistry_OP3_EvictedLeavesThePage checks that a breaker a group drops
// for idleness leaves the page and its record goes with it, while the key
// still used stays.
func TestRegistry_OP3_EvictedLeavesThePage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reg inspect.Registry
		g, err := circuitbreaker.NewGroup[int](circuitbreaker.GroupConfig{
			Breaker: circuitbreaker.Config{Name: "hosts", Observer: reg.Observer()}, IdleTimeout: time.Minute,
		})
		require.NoError(t, err)
		inspect.AddGroup(&reg, "hosts", g)
		require.NoError(t, call(g.Breaker(1), nil))
		require.NoError(t, call(g.Breaker(2), nil))
		assert.Equal(t, []string{"1", "2"}, keys(reg.Status(t.Context()).Groups[0]))
		time.Sleep(time.Minute)
		require.NoError(t, call(g.Breaker(1), nil))
		assert.Equal(t, []string{"1"}, keys(reg.Status(t.Context()).Groups[0]))

		// Key 2 comes back: a new breaker, since its creation.
		time.Sleep(time.Second)
		require.NoError(t, call(g.Breaker(2), nil))
		s := reg.Status(t.Context()).Groups[0].Breakers
		require.Len(t, s, 2)
		assert.Equal(t, time.Date(2000, 1, 1, 0, 1, 1, 0, time.UTC), s[1].Since)
	})
}

// keys returns the keys of g's rows.
func keys(g inspect.GroupStatus) []string {
	return column(g.Breakers, func(b inspect.BreakerStatus) string { return b.Key })
}

// TestRegistry_OP2_TransitionRing checks that the ring keeps the latest
// Config.Transitions transitions, newest first, with their causes.
func TestRegistry_OP2_TransitionRing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, err := inspect.New(inspect.Config{Transitions: 2})
		require.NoError(t, err)
		br := newBreaker(t, circuitbreaker.Config{Name: "db", Observer: reg.Observer(), Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Second})
		reg.AddBreaker(br)
		require.ErrorIs(t, call(br, errBoom), errBoom) // closed → open at 0s
		time.Sleep(time.Second)
		s := reg.Status(t.Context()).Breakers[0]
		assert.Equal(t, "half-open", s.State, "the cool-down has ended")
		assert.True(t, s.Since.IsZero(), "no call has reported the move to half-open: since when is unknown")
		require.NoError(t, call(br, nil)) // open → half-open, half-open → closed at 1s
		st := reg.Status(t.Context())
		assert.Equal(t, time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC), st.Breakers[0].Since)
		got := st.Transitions
		assert.Equal(t, []inspect.Transition{
			{Time: time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC), Name: "db", From: "half-open", To: "closed"},
			{Time: time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC), Name: "db", From: "open", To: "half-open"},
		}, got)
	})
}

// TestRegistry_OP1_Remove checks that remove takes a value off the page, that
// adding a value again keeps its place, and that nil values are ignored.
func TestRegistry_OP1_Remove(t *testing.T) {
	var reg inspect.Registry
	a := newBreaker(t, circuitbreaker.Config{Name: "a"})
	b := newBreaker(t, circuitbreaker.Config{Name: "b"})
	removeA := reg.AddBreaker(a)
	reg.AddBreaker(b)
	reg.AddBreaker(a)
	assert.Equal(t, []string{"a", "b"}, names(reg.Status(t.Context())))
	removeA()
	removeA()
	assert.Equal(t, []string{"b"}, names(reg.Status(t.Context())))

	reg.AddBreaker(nil)()
	reg.AddBudget("x", nil)()
	reg.AddLimiter("x", nil)()
	reg.AddLimiter("x", (*concurrency.Limiter)(nil))()
	reg.AddLimiter("x", (*concurrency.AdaptiveLimiter)(nil))()
	reg.AddFleet(nil, nil)()
	inspect.AddGroup[string](&reg, "x", nil)()
	inspect.AddGroup[string](nil, "x", new(circuitbreaker.Group[string]))()
	s := reg.Status(t.Context())
	assert.Equal(t, []string{"b"}, names(s))
	assert.Empty(t, s.Budgets)
	assert.Empty(t, s.Limiters)
	assert.Empty(t, s.Groups)
}

// names returns the names of s's breakers.
func names(s inspect.Status) []string {
	return column(s.Breakers, func(b inspect.BreakerStatus) string { return b.Name })
}

// TestNew_BadConfig checks the message naming the bad field.
func TestNew_BadConfig(t *testing.T) {
	for _, n := range []int{-1, inspect.MaxTransitions + 1} {
		_, err := inspect.New(inspect.Config{Transitions: n})
		require.Error(t, err)
		assert.Equal(t, "inspect: Config.Transitions must be within [0, 10000], got "+itoa(n), err.Error())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestRegistry_NZ1_NilRegistry calls every exported method of a nil
// *Registry (and AddGroup with one): it registers nothing, has no
// Observer, and shows the empty page.
func TestRegistry_NZ1_NilRegistry(t *testing.T) {
	var reg *inspect.Registry
	br := newBreaker(t, circuitbreaker.Config{Name: "db"})
	g := new(circuitbreaker.Group[string])
	b := new(budget.Budget)
	lim, err := concurrency.New(1)
	require.NoError(t, err)
	fleet := fleetFunc(func(context.Context) (inspect.FleetRecord, error) { return inspect.FleetRecord{}, nil })
	empty := inspect.Status{
		Breakers: []inspect.BreakerStatus{}, Groups: []inspect.GroupStatus{}, Budgets: []inspect.BudgetStatus{},
		Limiters: []inspect.LimiterStatus{}, Fleets: []inspect.FleetStatus{}, Transitions: []inspect.Transition{},
	}
	status := func() inspect.Status {
		s := reg.Status(t.Context())
		s.Time = time.Time{} // the time of the call
		return s
	}
	removed := func(remove func()) any { remove(); return status() }
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "AddBreaker", Call: func() any { return removed(reg.AddBreaker(br)) }, Want: empty},
		{Name: "AddGroup", Call: func() any { return removed(inspect.AddGroup(reg, "g", g)) }, Want: empty},
		{Name: "AddBudget", Call: func() any { return removed(reg.AddBudget("b", b)) }, Want: empty},
		{Name: "AddLimiter", Call: func() any { return removed(reg.AddLimiter("l", lim)) }, Want: empty},
		{Name: "AddFleet", Call: func() any { return removed(reg.AddFleet(br, fleet)) }, Want: empty},
		{Name: "Observer", Call: func() any { return reg.Observer() }, Want: nil},
		{Name: "Status", Call: func() any { return status() }, Want: empty},
	})
	t.Run("ServeHTTP", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			code, _, body := get(t, reg, "/?format=json")
			assert.Equal(t, http.StatusOK, code)
			assert.Equal(t, emptyJSON, body)
			start := time.Now()
			code, _, _ = get(t, reg, "/?format=json&after=0") // nothing changes
			assert.Equal(t, http.StatusOK, code)
			assert.Equal(t, inspect.RefreshInterval, time.Since(start), "the long poll waits its whole interval")
		})
	})
}
