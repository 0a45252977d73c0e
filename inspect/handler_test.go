package inspect_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/inspect"
)

// TestServeHTTP_OP4_Page checks the HTML page: a row per breaker with its
// state, the transition listed with its cause, the script that refreshes
// it, and nothing loaded from elsewhere.
func TestServeHTTP_OP4_Page(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reg inspect.Registry
		br := newBreaker(t, circuitbreaker.Config{Name: "db<1>", Observer: reg.Observer(), Policy: circuitbreaker.Consecutive{Failures: 1}})
		reg.AddBreaker(br)
		require.ErrorIs(t, call(br, errBoom), errBoom)
		time.Sleep(1500 * time.Millisecond)

		code, ctype, body := get(t, &reg, "/debug/rampart")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "text/html; charset=utf-8", ctype)
		assert.Contains(t, body, `<tr class="s-open" data-name="db&lt;1&gt;" data-state="open"><td>db&lt;1&gt;</td><td><span class="state">open</span></td><td>1.5s</td><td>28.5s</td>`)
		assert.Contains(t, body, `<tr class="s-open" data-name="db&lt;1&gt;" data-to="open"><td>00:00:00.000</td><td>1.5s</td><td>db&lt;1&gt;</td><td>closed</td><td><span class="state">open</span></td><td class="cause">connection refused</td></tr>`)
		assert.Contains(t, body, `setTimeout(tick,  500 );`)
		assert.NotContains(t, body, "src=")
		assert.NotContains(t, body, "href=")

		_, _, frag := get(t, &reg, "/debug/rampart?fragment=1")
		assert.True(t, strings.HasPrefix(frag, `<p class="muted">as of 2000-01-01 00:00:01.5 UTC</p>`), frag)
		assert.NotContains(t, frag, "<script>")
		assert.Contains(t, frag, `data-state="open"`)
	})
}

// TestServeHTTP_OP4_LongPoll checks the page's long poll: an answer
// carries the count of changes; a read after that count waits for the
// next change (here a trip) and answers at its instant, or answers after
// RefreshInterval when nothing changes; a bad count is refused.
func TestServeHTTP_OP4_LongPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reg inspect.Registry
		br := newBreaker(t, circuitbreaker.Config{Name: "db", Observer: reg.Observer(), Policy: circuitbreaker.Consecutive{Failures: 1}})
		reg.AddBreaker(br)
		changes := func(target string) (string, string, time.Duration) {
			start := time.Now()
			rec := httptest.NewRecorder()
			reg.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
			return rec.Header().Get("X-Rampart-Changes"), rec.Body.String(), time.Since(start)
		}
		n, _, took := changes("/?fragment=1")
		assert.Equal(t, "1", n, "one breaker added")
		assert.Zero(t, took)

		n, body, took := changes("/?fragment=1&after=1")
		assert.Equal(t, "1", n)
		assert.Equal(t, inspect.RefreshInterval, took, "nothing changed: the read waits RefreshInterval")
		assert.Contains(t, body, `data-state="closed"`)

		go func() {
			time.Sleep(200 * time.Millisecond)
			_ = call(br, errBoom)
		}()
		n, body, took = changes("/?fragment=1&after=1")
		assert.Equal(t, "2", n, "the trip")
		assert.Equal(t, 200*time.Millisecond, took, "answered at the trip")
		assert.Contains(t, body, `data-state="open"`)

		n, _, took = changes("/?format=json&after=1")
		assert.Equal(t, "2", n, "a change missed is answered at once")
		assert.Zero(t, took)

		code, _, body := get(t, &reg, "/?fragment=1&after=x")
		assert.Equal(t, http.StatusBadRequest, code)
		assert.Equal(t, "inspect: bad after \"x\": want the X-Rampart-Changes of an earlier answer\n", body)
	})
}

// TestServeHTTP_OP4_LongPollWakesAtATune checks that a setting tuned at
// run time is a change: a read waiting for one answers at the instant a
// breaker is tuned, and at the instant a limiter's Max is set.
func TestServeHTTP_OP4_LongPollWakesAtATune(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reg inspect.Registry
		br := newBreaker(t, circuitbreaker.Config{Name: "db", Observer: reg.Observer()})
		reg.AddBreaker(br)
		lim, err := concurrency.New(4)
		require.NoError(t, err)
		_, err = concurrency.NewLayer[int, int](concurrency.Config{Limiter: lim, Name: "db", Observer: reg.Observer()})
		require.NoError(t, err)
		reg.AddLimiter("db", lim)
		poll := func(after string, tune func() error) (string, time.Duration) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				time.Sleep(200 * time.Millisecond)
				assert.NoError(t, tune())
			}()
			start := time.Now()
			rec := httptest.NewRecorder()
			reg.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?format=json&after="+after, nil))
			took := time.Since(start)
			<-done
			return rec.Header().Get("X-Rampart-Changes"), took
		}
		n, took := poll("2", func() error { return br.Tune(circuitbreaker.Tuning{CoolDown: time.Minute}) })
		assert.Equal(t, "3", n, "the breaker's tune")
		assert.Equal(t, 200*time.Millisecond, took, "answered at the tune")
		n, took = poll("3", func() error { return lim.SetMax(8) })
		assert.Equal(t, "4", n, "the limiter's SetMax")
		assert.Equal(t, 200*time.Millisecond, took, "answered at the SetMax")
	})
}

// TestServeHTTP_OP4_LongPollEndsWithItsRequest checks that a long poll
// whose client goes away answers at that instant, not at RefreshInterval
// (a poll whose client stays waits RefreshInterval at most, so that a
// server shutting down waits no longer for it: TestServeHTTP_OP4_LongPoll).
func TestServeHTTP_OP4_LongPollEndsWithItsRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reg inspect.Registry
		reg.AddBreaker(newBreaker(t, circuitbreaker.Config{Name: "db"}))
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(100 * time.Millisecond)
			cancel()
		}()
		start := time.Now()
		rec := httptest.NewRecorder()
		reg.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/?fragment=1&after=1", nil))
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "answered when the client went away")
		assert.Equal(t, "1", rec.Header().Get("X-Rampart-Changes"))
	})
}

// TestServeHTTP_OP4_Errors checks the answers to a bad method and a bad
// format, and that nothing is cached.
func TestServeHTTP_OP4_Errors(t *testing.T) {
	var reg inspect.Registry
	rec := httptest.NewRecorder()
	reg.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
	assert.Equal(t, "inspect: method not allowed: POST\n", rec.Body.String())

	code, _, body := get(t, &reg, "/?format=xml")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Equal(t, "inspect: unknown format \"xml\": want json or html\n", body)

	rec = httptest.NewRecorder()
	reg.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?format=json", nil))
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
}

// TestServeHTTP_Hammer reads the page while calls trip and close breakers
// of a group and a breaker on other goroutines, for the race detector.
func TestServeHTTP_Hammer(t *testing.T) {
	var reg inspect.Registry
	obs := reg.Observer()
	br := newBreaker(t, circuitbreaker.Config{Name: "db", Observer: obs, Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: circuitbreaker.Immediate})
	g, err := circuitbreaker.NewGroup[int](circuitbreaker.GroupConfig{Breaker: circuitbreaker.Config{Name: "g", Observer: obs}, MaxKeys: 8})
	require.NoError(t, err)
	reg.AddBreaker(br)
	inspect.AddGroup(&reg, "g", g)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				err := error(nil)
				if i%3 == 0 {
					err = errBoom
				}
				_ = call(br, err)
				_ = call(g.Breaker((w*500+i)%16), err)
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			code, _, _ := get(t, &reg, "/?format=json")
			assert.Equal(t, http.StatusOK, code)
			code, _, _ = get(t, &reg, "/")
			assert.Equal(t, http.StatusOK, code)
		}
	})
	wg.Wait()
	s := reg.Status(t.Context())
	assert.LessOrEqual(t, len(s.Groups[0].Breakers), 9)
	assert.Len(t, s.Transitions, inspect.DefaultTransitions)
}
