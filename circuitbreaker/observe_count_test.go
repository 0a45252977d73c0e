package circuitbreaker_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
)

// tally counts what callers got, by the name of the event that must
// report it.
type tally map[string]int

func newTally() tally { return tally{"success": 0, "failure": 0, "ignored": 0, "rejected": 0} }

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

// Every call through the layers, Run and a group's layers is reported
// once, with the outcome the breaker was given: the counts by outcome are
// those of what the callers got.
func TestLayer_EV12_EveryCallReportedOnce(t *testing.T) {
	inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
		switch req {
		case "down":
			return "", errBoom
		case "missing":
			return "", errNotFound
		case "bad":
			return "bad", nil
		case "panic":
			panic("boom")
		case "cancel": // the caller gives up during the call
			ctx.Value(cancelKey{}).(context.CancelFunc)()
			return "", ctx.Err()
		}
		return "ok", nil
	})
	classify := func(resp string, err error) rampart.Outcome {
		if resp == "bad" {
			return rampart.Failure
		}
		return circuitbreaker.ClassifyContext(context.Background(), err)
	}
	sw := &circuitbreaker.Switch{}
	cfg := func(obs *observetest.Counter) circuitbreaker.Config {
		return circuitbreaker.Config{
			Name: "db", Policy: circuitbreaker.Consecutive{Failures: 1000}, CoolDown: time.Second, Observer: obs, Switch: sw,
			IsFailure: func(err error) bool { return !errors.Is(err, errNotFound) },
		}
	}
	paths := map[string]func(t *testing.T, obs *observetest.Counter) (rampart.Service[string, string], *circuitbreaker.Breaker){
		"NewLayer": func(t *testing.T, obs *observetest.Counter) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			b := newBreaker(t, cfg(obs))
			return wrap.Layer(inner, circuitbreaker.NewLayer, b, nil), b
		},
		"NewLayer classified": func(t *testing.T, obs *observetest.Counter) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			b := newBreaker(t, cfg(obs))
			return circuitbreaker.NewLayer[string, string](b, classify).Wrap(inner), b
		},
		"Run": func(t *testing.T, obs *observetest.Counter) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			b := newBreaker(t, cfg(obs))
			return rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
				return circuitbreaker.Run(ctx, b, func(ctx context.Context) (string, error) { return inner.Call(ctx, req) })
			}), b
		},
		"NewClassifiedGroupLayer": func(t *testing.T, obs *observetest.Counter) (rampart.Service[string, string], *circuitbreaker.Breaker) {
			g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: cfg(obs)})
			require.NoError(t, err)
			l, err := circuitbreaker.NewGroupLayer[string, string](g, func(string) string { return "tenant" }, classify)
			require.NoError(t, err)
			return l.Wrap(inner), g.Breaker("tenant")
		},
	}
	for name, build := range paths {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var obs observetest.Counter
				svc, _ := build(t, &obs)
				classified := name != "NewLayer" && name != "Run"
				got := newTally()
				call := func(ctx context.Context, req string) {
					defer func() {
						if recover() != nil {
							got["failure"]++ // a panic is a failure
						}
					}()
					resp, err := svc.Call(ctx, req)
					switch {
					case errors.Is(err, circuitbreaker.ErrOpen):
						got["rejected"]++
					case errors.Is(err, context.Canceled):
						got["ignored"]++
					case errors.Is(err, errNotFound):
						got["success"]++ // IsFailure: not a failure
					case err != nil:
						got["failure"]++
					case resp == "bad" && classified:
						got["failure"]++
					default:
						got["success"]++
					}
				}
				ctx := context.Background()
				canceled, cancel := context.WithCancel(ctx)
				for _, req := range []string{"ok", "ok", "down", "missing", "bad", "panic", "ok"} {
					call(ctx, req)
				}
				cancel()
				call(canceled, "ok") // done on arrival: not a call
				got["ignored"]--
				mid, cancelMid := context.WithCancel(ctx)
				call(context.WithValue(mid, cancelKey{}, cancelMid), "cancel") // ignored, not a failure
				sw.ForceOpen(errBoom)
				call(ctx, "ok")
				call(ctx, "down")
				sw.Release()
				require.Equal(t, 2, got["rejected"])
				require.Equal(t, map[string]int(got), obs.Outcomes())
			})
		})
	}
}

type cancelKey struct{}
