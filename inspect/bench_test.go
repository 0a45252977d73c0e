package inspect_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/inspect"
	"github.com/rampart-go/rampart/observe"
)

func succeed(context.Context) (struct{}, error) { return struct{}{}, nil }

// BenchmarkClosed measures a call through a Closed breaker with
// circuitbreaker.Run, on one goroutine (a client reading the page runs on
// another): the breaker alone ("bare"); reporting to the Registry's
// Observer ("observed"), joined with another observer ("joined"), with no
// page; registered on a page served on
// loopback HTTP that a client reads without pause ("watched"); the same,
// the breaker also reporting to the Registry's Observer ("watched-observed"),
// and to that Observer joined with another, as in a program with metrics
// ("watched-joined").
//
// Instructions per call, as bench/instructions.sh counts them (the loop
// alone, N and 2N calls, on one thread so that callgrind sees the whole
// loop; the difference divided by N):
//
//	go test -c -o /tmp/inspect.test ./inspect
//	for n in 100000 200000; do GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 GOGC=off \
//	  valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n \
//	  --toggle-collect='github.com/rampart-go/rampart/inspect_test.closedLoop' \
//	  /tmp/inspect.test -test.run '^$' -test.bench '^BenchmarkClosed$/^bare$' -test.benchtime ${n}x; done
//
// bare 171, observed 241, joined 376 (Join's loop and the other observer's
// call). The watched rows cannot be counted so (the client's goroutine
// runs on the same thread); their ns/op is the comparison.
func BenchmarkClosed(b *testing.B) {
	for _, bc := range []struct {
		name              string
		watch, obs, joins bool
	}{
		{name: "bare"},
		{name: "observed", obs: true},
		{name: "joined", obs: true, joins: true},
		{name: "watched", watch: true},
		{name: "watched-observed", watch: true, obs: true},
		{name: "watched-joined", watch: true, obs: true, joins: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var reg inspect.Registry
			cfg := circuitbreaker.Config{Name: "db"}
			if bc.obs {
				cfg.Observer = reg.Observer()
			}
			if bc.joins {
				cfg.Observer = observe.Join(observe.Func(func(context.Context, observe.Event) {}), cfg.Observer)
			}
			br := newBreaker(b, cfg)
			if bc.watch {
				reg.AddBreaker(br)
				reg.AddBudget("db", new(budget.Budget))
				stop := watch(b, &reg)
				defer stop()
			}
			closedLoop(b, br)
		})
	}
}

// closedLoop is the loop of BenchmarkClosed, a function of its own so that
// bench/instructions.sh's method (callgrind collecting inside the function
// that holds the loop) can count it.
func closedLoop(b *testing.B, br *circuitbreaker.Breaker) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := circuitbreaker.Run(ctx, br, succeed); err != nil {
			b.Fatal(err)
		}
	}
}

// watch serves reg on loopback HTTP and reads its JSON in a loop until the
// returned function is called.
func watch(b *testing.B, reg *inspect.Registry) (stop func()) {
	srv := httptest.NewServer(reg)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			resp, err := http.Get(srv.URL + "/?format=json")
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body) //nolint:errcheck
			resp.Body.Close()
		}
	})
	return func() { close(done); wg.Wait(); srv.Close() }
}

// TestObserver_OP2_NoAllocs checks that a breaker's calls, successes and
// refusals, cost no allocation in the Registry's Observer.
func TestObserver_OP2_NoAllocs(t *testing.T) {
	var reg inspect.Registry
	br := newBreaker(t, circuitbreaker.Config{Name: "db", Observer: reg.Observer(), Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: rampart.Forever})
	reg.AddBreaker(br)
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { circuitbreaker.Run(ctx, br, succeed) }); n != 0 {
		t.Errorf("a success allocates %v times", n)
	}
	call(br, errBoom)
	if n := testing.AllocsPerRun(100, func() { circuitbreaker.Run(ctx, br, succeed) }); n != 0 {
		t.Errorf("a rejection allocates %v times", n)
	}
	if got := reg.Status(ctx).Breakers; len(got) != 1 || got[0].Rejected != 101 {
		t.Errorf("rejected = %+v, want 101", got)
	}
}
