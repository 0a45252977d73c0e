package observe_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/observe"
)

// textLogger returns a logger writing text records without their time
// into buf, at level and above.
func textLogger(buf io.Writer, level slog.Level) *slog.Logger {
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

// A change of settings while the stack runs is rare and made by an
// operator: a Logger at its default level (Info) writes it.
func TestLog_EV10_TunedIsInfo(t *testing.T) {
	var buf bytes.Buffer
	log, err := observe.NewLog(observe.LogConfig{Logger: textLogger(&buf, slog.LevelInfo)})
	require.NoError(t, err)
	log.Observe(context.Background(), observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Tuned, Calls: 4, Failures: 1})
	log.Observe(context.Background(), observe.Event{Source: observe.Retry, Name: "db", Kind: observe.Tuned, Attempt: 3})
	require.Equal(t, []string{
		`level=INFO msg="circuitbreaker tuned" layer=circuitbreaker name=db failures=1 calls=4`,
		`level=INFO msg="retry tuned" layer=retry name=db attempt=3`,
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

// countLog is a slog.Handler that counts the records it is given and the
// counts of suppressed events they carry.
type countLog struct {
	mu                  sync.Mutex
	records, suppressed int
	summaries           int
}

func (c *countLog) Enabled(context.Context, slog.Level) bool { return true }
func (c *countLog) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *countLog) WithGroup(string) slog.Handler            { return c }
func (c *countLog) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	summary := true
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "suppressed":
			c.suppressed += int(a.Value.Int64())
		case "error":
			summary = false // a summary carries no event's fields
		}
		return true
	})
	if summary {
		c.summaries++
	} else {
		c.records++
	}
	return nil
}

func (c *countLog) total() (records, suppressed, summaries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.records, c.suppressed, c.summaries
}

// The refusals after the last record written are reported by a summary,
// Every after the bucket has a token again.
func TestLog_EV10_BurstEndsWithASummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf lockedBuffer
		log, err := observe.NewLog(observe.LogConfig{Logger: textLogger(&buf, slog.LevelDebug)})
		require.NoError(t, err)
		rejected := observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Rejected, Err: errors.New("open")}
		for range 100 {
			log.Observe(context.Background(), rejected)
		}
		require.Len(t, buf.lines(), observe.DefaultLogBurst)
		// The bucket has a token again after Every; the summary is due
		// Every later.
		time.Sleep(2*observe.DefaultLogEvery - time.Nanosecond)
		synctest.Wait()
		require.Len(t, buf.lines(), observe.DefaultLogBurst, "no summary before it is due")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		got := buf.lines()
		require.Len(t, got, observe.DefaultLogBurst+1)
		require.Equal(t, `level=DEBUG msg="circuitbreaker rejected" layer=circuitbreaker name=db suppressed=90`, got[observe.DefaultLogBurst])

		// Nothing more is due: the count was written once.
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Len(t, buf.lines(), observe.DefaultLogBurst+1)
	})
}

// Whatever the pattern of events, the records written plus the counts of
// suppressed events they carry are exactly the events observed.
func TestLog_EV10_WrittenPlusSuppressedIsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h countLog
		log, err := observe.NewLog(observe.LogConfig{Logger: slog.New(&h), Every: 100 * time.Millisecond, Burst: 3})
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(1, 2))
		names := []string{"a", "b", "c"}
		observed := 0
		var wg sync.WaitGroup
		for g := range 4 {
			seed := rng.Uint64()
			wg.Go(func() {
				r := rand.New(rand.NewPCG(seed, uint64(g)))
				for range 2000 {
					log.Observe(context.Background(), observe.Event{Source: observe.Concurrency, Name: names[r.IntN(len(names))], Kind: observe.Refused, Err: errors.New("full")})
					if r.IntN(10) == 0 {
						time.Sleep(time.Duration(r.IntN(50)) * time.Millisecond)
					}
				}
			})
			observed += 2000
		}
		wg.Wait()
		time.Sleep(time.Second) // every summary is due by 2×Every
		synctest.Wait()
		records, suppressed, summaries := h.total()
		require.Positive(t, summaries)
		require.Positive(t, suppressed)
		require.Equal(t, observed, records+suppressed)
	})
}

// Flush writes the pending counts at once, and the timers then have
// nothing left to write.
func TestLog_EV10_Flush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h countLog
		log, err := observe.NewLog(observe.LogConfig{Logger: slog.New(&h), Burst: 1})
		require.NoError(t, err)
		for _, name := range []string{"a", "a", "a", "b", "b"} {
			log.Observe(context.Background(), observe.Event{Source: observe.RateLimit, Name: name, Kind: observe.Refused, Err: errors.New("limited")})
		}
		log.Flush()
		records, suppressed, summaries := h.total()
		require.Equal(t, []int{2, 3, 2}, []int{records, suppressed, summaries})
		time.Sleep(time.Hour)
		synctest.Wait()
		records, suppressed, summaries = h.total()
		require.Equal(t, []int{2, 3, 2}, []int{records, suppressed, summaries})
	})
}

// lockedBuffer is a buffer a summary timer may write while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return lines(&b.buf)
}

// A trip's record carries its cool-down, "forever" for one that lasts
// until a reset.
func TestLog_EV17_TripCarriesItsCoolDown(t *testing.T) {
	var buf bytes.Buffer
	log, err := observe.NewLog(observe.LogConfig{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))})
	require.NoError(t, err)
	ctx := context.Background()
	log.Observe(ctx, observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "closed", To: "open", Duration: 5 * time.Second})
	log.Observe(ctx, observe.Event{Source: observe.Breaker, Name: "db", Kind: observe.Transition, From: "closed", To: "open", Duration: rampart.Forever})
	require.Equal(t, `level=WARN msg="circuitbreaker transition" layer=circuitbreaker name=db cool_down=5s from=closed to=open
level=WARN msg="circuitbreaker transition" layer=circuitbreaker name=db cool_down=forever from=closed to=open
`, buf.String())
}
