package ramparthttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/ramparthttp"
)

// loopback serves /ok (200 with a body), /down (503) and /stall (headers,
// then a body that waits for the client to go away) on a real listener.
func loopback(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/stall":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			io.WriteString(w, "hello")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Every request through the client's breaker is reported once, with the
// outcome the breaker was given: the counts by outcome are those of what
// the callers got, over a real loopback connection, with one breaker or
// with a breaker per host.
func TestClient_EV12_EveryRequestReportedOnce(t *testing.T) {
	for _, perHost := range []bool{false, true} {
		name := map[bool]string{false: "Breaker", true: "HostBreakers"}[perHost]
		t.Run(name, func(t *testing.T) {
			srv := loopback(t)
			var obs observetest.Counter
			bcfg := circuitbreaker.Config{Name: "api", Policy: circuitbreaker.Consecutive{Failures: 5}, Observer: &obs}
			cfg := ramparthttp.ClientConfig{Retry: ramparthttp.RetryConfig{MaxAttempts: 1}}
			if perHost {
				g, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{Breaker: bcfg})
				require.NoError(t, err)
				cfg.Breakers = g
			} else {
				b, err := circuitbreaker.New(bcfg)
				require.NoError(t, err)
				cfg.Breaker = b
			}
			c := newClient(t, cfg)
			got := map[string]int{"success": 0, "failure": 0, "ignored": 0, "rejected": 0}
			get := func(ctx context.Context, path string, read bool) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
				require.NoError(t, err)
				resp, err := c.Do(req)
				switch {
				case errors.Is(err, circuitbreaker.ErrOpen):
					got["rejected"]++
					return
				case err != nil:
					t.Fatalf("GET %s: %v", path, err)
				}
				defer resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusServiceUnavailable:
					got["failure"]++
				case !read:
					got["success"]++ // closed early: the server did its part
				default:
					_, rerr := io.ReadAll(resp.Body)
					require.NoError(t, rerr)
					got["success"]++
				}
			}
			ctx := context.Background()
			for range 4 {
				get(ctx, "/ok", true)
			}
			get(ctx, "/ok", false)
			cancelAfterHeaders(t, c, srv.URL+"/stall", got)
			for range 5 {
				get(ctx, "/down", true)
			}
			for range 5 {
				get(ctx, "/ok", true)
			}
			require.Equal(t, map[string]int{"success": 5, "failure": 5, "ignored": 1, "rejected": 5}, got)
			require.Equal(t, got, obs.Outcomes())
		})
	}
}

// cancelAfterHeaders sends a GET whose body stalls, cancels it once the
// headers are in, and counts the read that fails as the ignored call.
func cancelAfterHeaders(t *testing.T, c *http.Client, url string, got map[string]int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	cancel()
	_, err = io.ReadAll(resp.Body)
	require.ErrorIs(t, err, context.Canceled)
	resp.Body.Close()
	got["ignored"]++
}

// A breaker in a server stack reports every request once: served, refused
// by the open breaker (answered 503), or given up by its client.
func TestServer_EV12_EveryRequestReportedOnce(t *testing.T) {
	var obs observetest.Counter
	sw := &circuitbreaker.Switch{}
	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "inbound", Observer: &obs, Switch: sw})
	require.NoError(t, err)
	waiting := make(chan struct{}, 1)
	h, err := ramparthttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			waiting <- struct{}{}
			<-r.Context().Done() // the client goes away
			return
		}
		io.WriteString(w, "hello")
	}), ramparthttp.ServerConfig{Layers: []ramparthttp.ServerLayer{circuitbreaker.NewLayer[ramparthttp.Exchange, struct{}](br, nil)}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	got := map[string]int{"success": 0, "failure": 0, "ignored": 0, "rejected": 0}
	get := func() {
		resp, err := http.Get(srv.URL + "/ok")
		require.NoError(t, err)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			got["success"]++
		case http.StatusServiceUnavailable:
			got["rejected"]++
		default:
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	for range 3 {
		get()
	}
	sw.ForceOpen(nil)
	for range 2 {
		get()
	}
	sw.Release()

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/wait", nil)
	require.NoError(t, err)
	go func() {
		<-waiting
		cancel()
	}()
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.Canceled)
	got["ignored"]++ // the client gave up

	// The server learns of the cancellation on its own goroutine: wait
	// for its report.
	require.Eventually(t, func() bool { return obs.Outcomes()["ignored"] == 1 }, 10*time.Second, time.Millisecond)
	require.Equal(t, map[string]int{"success": 3, "failure": 0, "ignored": 1, "rejected": 2}, got)
	require.Equal(t, got, obs.Outcomes())
}
