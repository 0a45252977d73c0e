package circuitbreaker_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// legal lists every transition the contract allows.
var legal = map[[2]circuitbreaker.State]bool{
	{circuitbreaker.Closed, circuitbreaker.Open}:           true, // trip
	{circuitbreaker.Open, circuitbreaker.HalfOpen}:         true, // cool-down over
	{circuitbreaker.HalfOpen, circuitbreaker.Closed}:       true, // probes succeeded, or Reset
	{circuitbreaker.HalfOpen, circuitbreaker.Open}:         true, // a probe failed
	{circuitbreaker.Open, circuitbreaker.Closed}:           true, // Reset
	{circuitbreaker.ForcedOpen, circuitbreaker.Closed}:     true, // Release
	{circuitbreaker.ForcedClosed, circuitbreaker.Closed}:   true, // Release
	{circuitbreaker.ForcedOpen, circuitbreaker.ForcedOpen}: true, // a new reason
}

func init() {
	for _, from := range []circuitbreaker.State{circuitbreaker.Closed, circuitbreaker.Open, circuitbreaker.HalfOpen, circuitbreaker.ForcedOpen, circuitbreaker.ForcedClosed} {
		legal[[2]circuitbreaker.State{from, circuitbreaker.ForcedClosed}] = from != circuitbreaker.ForcedClosed
		if from != circuitbreaker.ForcedOpen {
			legal[[2]circuitbreaker.State{from, circuitbreaker.ForcedOpen}] = true
		}
	}
}

// TestHammer drives one breaker from many goroutines with random outcomes,
// resets and switch flips, and checks the invariants on every step: probes
// in flight never exceed MaxProbes, a refused call never runs, every
// transition is legal, and the listener sees transitions in order and one
// at a time.
func TestHammer(t *testing.T) {
	defer goleak.VerifyNone(t)
	const (
		goroutines = 16
		steps      = 2000
		maxProbes  = 3
	)
	sw := &circuitbreaker.Switch{}
	b := newBreaker(t, circuitbreaker.Config{
		Policy:    circuitbreaker.Consecutive{Failures: 3, Successes: 2},
		CoolDown:  circuitbreaker.Immediate,
		MaxProbes: maxProbes,
		Switch:    sw,
	})

	var (
		mu        sync.Mutex
		last      = circuitbreaker.Closed
		bad       []string
		delivered atomic.Int64
		active    atomic.Int32
	)
	b.Subscribe(func(tr circuitbreaker.Transition) {
		if active.Add(1) != 1 {
			mu.Lock()
			bad = append(bad, "listener called concurrently")
			mu.Unlock()
		}
		mu.Lock()
		if tr.From != last {
			bad = append(bad, "out of order: "+last.String()+" then "+tr.From.String()+">"+tr.To.String())
		}
		if !legal[[2]circuitbreaker.State{tr.From, tr.To}] {
			bad = append(bad, "illegal: "+tr.From.String()+">"+tr.To.String())
		}
		last = tr.To
		mu.Unlock()
		delivered.Add(1)
		active.Add(-1)
	})

	// Each layer call has its own id; the inner service marks it run.
	type req struct{ id, kind int }
	var (
		ran      = make([]atomic.Bool, goroutines*steps)
		rejected atomic.Int64
		inner    = rampart.ServiceFunc[req, int](func(ctx context.Context, r req) (int, error) {
			ran[r.id].Store(true)
			switch r.kind {
			case 0:
				return 0, errBoom
			case 1:
				return 0, context.Canceled
			}
			return r.id, nil
		})
		svc = rampart.NewBuilder[req, int]().Layer(circuitbreaker.NewLayer[req, int](b, nil)).Service(inner)
		wg  sync.WaitGroup
	)
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range steps {
				id := g*steps + i
				switch n := r.IntN(100); {
				case n < 60: // through the layer
					_, err := svc.Call(context.Background(), req{id: id, kind: r.IntN(4)})
					if errors.Is(err, circuitbreaker.ErrOpen) {
						rejected.Add(1)
						assert.False(t, ran[id].Load(), "call %d rejected and run", id)
					} else {
						assert.True(t, ran[id].Load(), "call %d admitted but not run", id)
					}
				case n < 90: // by hand
					p, err := b.TryAcquire()
					if err != nil {
						continue
					}
					if s := b.State(); s.ProbesInFlight > maxProbes {
						t.Errorf("%d probes in flight", s.ProbesInFlight)
					}
					switch r.IntN(4) {
					case 0:
						p.Success()
					case 1:
						p.Failure(errBoom)
					case 2:
						p.Ignore()
					default:
						p.Done(nil)
					}
					assert.False(t, p.Success(), "finished twice")
				case n < 94:
					b.Reset()
				case n < 96:
					sw.ForceOpen(errMaintenance)
				case n < 98:
					sw.ForceClosed()
				default:
					sw.Release()
				}
				if s := b.State(); s.ProbesInFlight > maxProbes {
					t.Errorf("%d probes in flight", s.ProbesInFlight)
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, bad)
	assert.Positive(t, delivered.Load())
	assert.Positive(t, rejected.Load())
}
