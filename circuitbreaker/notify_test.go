package circuitbreaker_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"runtime"
	"strings"
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
