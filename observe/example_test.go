package observe_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/retry"
)

// An Observer given to a retry layer hears of each retry and of the end
// of the loop.
func Example() {
	print := observe.Func(func(_ context.Context, e observe.Event) {
		fmt.Printf("%s %s %s: attempt=%d delay=%v err=%v\n", e.Source, e.Name, e.Kind, e.Attempt, e.Duration, e.Err)
	})
	calls := 0
	flaky := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		calls++
		if calls < 3 {
			return "", errors.New("connection reset")
		}
		return "ok", nil
	})
	backoff, _ := retry.NewConstant(time.Millisecond)
	l, err := retry.NewLayer(retry.Config[string, string]{Backoff: backoff, Name: "payments", Observer: print})
	if err != nil {
		panic(err)
	}
	svc := l.Wrap(flaky)
	resp, err := svc.Call(context.Background(), "charge")
	fmt.Println(resp, err)
	// Output:
	// retry payments retrying: attempt=2 delay=1ms err=connection reset
	// retry payments retrying: attempt=3 delay=1ms err=connection reset
	// retry payments retry-end: attempt=3 delay=0s err=<nil>
	// ok <nil>
}

// A Log writes a breaker's trip as a warning; the events of single calls
// are debug records, limited per layer so that an outage cannot flood the
// log.
func ExampleNewLog() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // no time, for a stable output
			}
			return a
		},
	}))
	log, err := observe.NewLog(observe.LogConfig{Logger: logger})
	if err != nil {
		panic(err)
	}
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Name: "db", Policy: circuitbreaker.Consecutive{Failures: 2}, Observer: log,
	})
	if err != nil {
		panic(err)
	}
	down := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		return "", errors.New("connection refused")
	})
	svc := circuitbreaker.NewLayer[string, string](br, nil).Wrap(down)
	for range 3 {
		_, _ = svc.Call(context.Background(), "select 1")
	}
	// Output:
	// level=WARN msg="circuitbreaker transition" layer=circuitbreaker name=db cool_down=30s error="connection refused" from=closed to=open failures=2 calls=2
}
