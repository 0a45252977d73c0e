package circuitbreaker_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
)

func TestSubscribe_CB10_ListenerMayCallBreaker(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
	var log []string
	b.Subscribe(func(tr circuitbreaker.Transition) {
		edge := tr.From.String() + ">" + tr.To.String()
		log = append(log, "enter "+edge)
		// Reading the state would deadlock if the lock were held.
		log = append(log, "state "+b.State().State.String())
		if tr.To == circuitbreaker.Open {
			b.Reset() // causes a transition while one is being delivered
		}
		log = append(log, "leave "+edge)
	})
	fail(t, b, 1, errBoom)
	assert.Equal(t, []string{
		"enter closed>open", "state open", "leave closed>open",
		"enter open>closed", "state closed", "leave open>closed",
	}, log, "the transition the listener caused is delivered after it returns")
}

func TestSubscribe_CB10_PanickingListener(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
	b.Subscribe(func(circuitbreaker.Transition) { panic("listener bug") })
	rec := record(b)
	b.Subscribe(func(circuitbreaker.Transition) { panic("another") })

	assert.NotPanics(t, func() { fail(t, b, 1, errBoom) })
	assert.Equal(t, circuitbreaker.Open, b.State().State)
	b.Reset()
	assert.Equal(t, []string{"closed>open", "open>closed"}, rec.edges(), "later listeners and transitions still delivered")
}

func TestSubscribe_CB10_Unsubscribe(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
	var n int
	unsubscribe := b.Subscribe(func(circuitbreaker.Transition) { n++ })
	rec := record(b)
	fail(t, b, 1, errBoom)
	unsubscribe()
	unsubscribe() // harmless
	b.Reset()
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"closed>open", "open>closed"}, rec.edges(), "other listeners stay")
}

func TestSubscribe_CB10_CB19_InOrderNeverConcurrent(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) { testInOrderNeverConcurrent(t, async) })
	}
}

func testInOrderNeverConcurrent(t *testing.T, async bool) {
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{
			Policy:         circuitbreaker.Consecutive{Failures: 1},
			CoolDown:       circuitbreaker.Immediate,
			MaxProbes:      4,
			AsyncListeners: async,
		})
		var (
			active, maxActive atomic.Int32
			mu                sync.Mutex
			seen              []circuitbreaker.Transition
		)
		b.Subscribe(func(tr circuitbreaker.Transition) {
			n := active.Add(1)
			if n > maxActive.Load() {
				maxActive.Store(n)
			}
			time.Sleep(time.Millisecond) // a slow listener: others must wait
			mu.Lock()
			seen = append(seen, tr)
			mu.Unlock()
			active.Add(-1)
		})
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 20 {
					p, err := b.TryAcquire()
					if err != nil {
						continue
					}
					if (g+i)%3 == 0 {
						p.Success()
					} else {
						p.Failure(errBoom)
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(time.Hour) // lets the sleeping listener deliver everything
		synctest.Wait()
		assert.Equal(t, int32(1), maxActive.Load())
		require.NotEmpty(t, seen)
		// In order: each transition starts where the previous one ended.
		assert.Equal(t, circuitbreaker.Closed, seen[0].From)
		for i := 1; i < len(seen); i++ {
			assert.Equal(t, seen[i-1].To, seen[i].From, "transition %d", i)
		}
		last := seen[len(seen)-1].To
		if last == circuitbreaker.Open {
			last = circuitbreaker.HalfOpen // no cool-down: lazily HalfOpen already
		}
		assert.Equal(t, last, b.State().State)
		assert.Equal(t, 0, deliveryGoroutines(), "no delivery goroutine outlives the queue")
	})
}

func TestSubscribe_CB10_ListenerGoexit(t *testing.T) {
	b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: time.Hour})
	var once sync.Once
	b.Subscribe(func(circuitbreaker.Transition) { once.Do(runtime.Goexit) })
	rec := record(b)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p, _ := b.TryAcquire()
		p.Failure(errBoom) // trips; the listener ends this goroutine
	}()
	<-done
	assert.Equal(t, circuitbreaker.Open, b.State().State)
	b.Reset()
	assert.Equal(t, []string{"open>closed"}, rec.edges(), "delivery goes on after a Goexit")
}
