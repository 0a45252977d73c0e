package observe_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/observe"
)

// textLogger returns a logger writing text records without their time
// into buf, at level and above.
func textLogger(buf *bytes.Buffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func lines(buf *bytes.Buffer) []string {
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

func TestLog_EV10_LevelsAndAttributes(t *testing.T) {
	var buf bytes.Buffer
	log, err := observe.NewLog(observe.LogConfig{Logger: textLogger(&buf, slog.LevelDebug)})
	require.NoError(t, err)
	ctx := context.Background()
	errDown := errors.New("down")
	log.Observe(ctx, observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "closed", To: "open", Err: errDown})
	log.Observe(ctx, observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "open", To: "half-open"})
	log.Observe(ctx, observe.Event{Source: observe.Retry, Kind: observe.Retrying, Attempt: 2, Duration: 100 * time.Millisecond, Err: errDown})
	log.Observe(ctx, observe.Event{Source: observe.Concurrency, Name: "pool", Kind: observe.Refused, Err: errDown})
	log.Observe(ctx, observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Success}) // never logged
	log.Observe(ctx, observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Rejected, Err: errDown})
	require.Equal(t, []string{
		`level=WARN msg="circuitbreaker transition" layer=circuitbreaker name=db error=down from=closed to=open`,
		`level=INFO msg="circuitbreaker transition" layer=circuitbreaker name=db from=open to=half-open`,
		`level=DEBUG msg="retry retrying" layer=retry attempt=2 duration=100ms error=down`,
		`level=DEBUG msg="concurrency refused" layer=concurrency name=pool error=down`,
		`level=DEBUG msg="circuitbreaker rejected" layer=circuitbreaker name=db error=down`,
	}, lines(&buf))
}

func TestLog_EV10_LimitsEachKindOfEventAndCountsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		log, err := observe.NewLog(observe.LogConfig{Logger: textLogger(&buf, slog.LevelDebug), Every: time.Second, Burst: 2})
		require.NoError(t, err)
		ctx := context.Background()
		refused := observe.Event{Source: observe.RateLimit, Name: "api", Kind: observe.Refused}
		other := observe.Event{Source: observe.RateLimit, Name: "other", Kind: observe.Refused}
		trip := observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "closed", To: "open"}
		for range 5 {
			log.Observe(ctx, refused)
			log.Observe(ctx, trip) // never suppressed
		}
		log.Observe(ctx, other) // a bucket of its own
		time.Sleep(500 * time.Millisecond)
		log.Observe(ctx, refused) // still suppressed: half a token
		time.Sleep(500 * time.Millisecond)
		log.Observe(ctx, refused) // one token: written, with the count
		log.Observe(ctx, refused)

		var got []string
		for _, l := range lines(&buf) {
			if !strings.Contains(l, "transition") {
				got = append(got, l)
			}
		}
		require.Equal(t, []string{
			`level=DEBUG msg="ratelimit refused" layer=ratelimit name=api`,
			`level=DEBUG msg="ratelimit refused" layer=ratelimit name=api`,
			`level=DEBUG msg="ratelimit refused" layer=ratelimit name=other`,
			`level=DEBUG msg="ratelimit refused" layer=ratelimit name=api suppressed=4`,
		}, got)
		require.Len(t, lines(&buf), 4+5)
	})
}

func TestLog_EV10_DisabledLevelCostsNothing(t *testing.T) {
	var buf bytes.Buffer
	log, err := observe.NewLog(observe.LogConfig{Logger: textLogger(&buf, slog.LevelInfo)})
	require.NoError(t, err)
	ctx := context.Background()
	e := observe.Event{Source: observe.Concurrency, Name: "pool", Kind: observe.Refused, Err: errors.New("full")}
	allocs := testing.AllocsPerRun(100, func() { log.Observe(ctx, e) })
	require.Zero(t, allocs)
	require.Empty(t, buf.String())
}

func TestLog_EV10_BadConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  observe.LogConfig
		want string
	}{
		{name: "nil logger", cfg: observe.LogConfig{}, want: "observe: LogConfig.Logger must not be nil"},
		{name: "negative Every", cfg: observe.LogConfig{Logger: slog.Default(), Every: -time.Second}, want: "observe: LogConfig.Every must be >= 0 (0 means DefaultLogEvery, 1s), got -1s"},
		{name: "negative Burst", cfg: observe.LogConfig{Logger: slog.Default(), Burst: -1}, want: "observe: LogConfig.Burst must be >= 0 (0 means DefaultLogBurst, 10), got -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := observe.NewLog(tt.cfg)
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestJoin_EV1(t *testing.T) {
	require.Nil(t, observe.Join())
	require.Nil(t, observe.Join(nil, nil))
	var got []string
	a := observe.Func(func(_ context.Context, e observe.Event) { got = append(got, "a "+e.Kind.String()) })
	b := observe.Func(func(_ context.Context, e observe.Event) { got = append(got, "b "+e.Kind.String()) })
	observe.Join(nil, a, b).Observe(context.Background(), observe.Event{Kind: observe.Joined})
	require.Equal(t, []string{"a joined", "b joined"}, got)
}

func TestNames(t *testing.T) {
	require.Equal(t, "circuitbreaker", observe.Breaker.String())
	require.Equal(t, "coalesce", observe.Coalesce.String())
	require.Equal(t, "Source(0)", observe.Source(0).String())
	require.Equal(t, "transition", observe.Transition.String())
	require.Equal(t, "joined", observe.Joined.String())
	require.Equal(t, "Kind(200)", observe.Kind(200).String())
}
