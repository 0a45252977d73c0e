package ramparthttp_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/sim"
)

// Over a real loopback server, the transport's recorder judges each
// attempt as its breaker does: a 503 is a failure (not the success its nil
// error would make it), a 429 is ignored, a retry is marked with its
// attempt, and a request the breaker refused is recorded as refused.
func TestRecordLayer_SM8_JudgesAsTheBreaker(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch n.Add(1) {
		case 1:
			w.WriteHeader(http.StatusOK)
		case 2:
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	var out bytes.Buffer
	rec, err := record.New(&out, record.Config{})
	require.NoError(t, err)
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Hour})
	require.NoError(t, err)
	rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
		Breaker:  br,
		Recorder: rec,
		Retry: ramparthttp.RetryConfig{MaxAttempts: 3, Budget: budget.Always,
			Backoff:   retry.BackoffFunc(func(int, time.Duration) time.Duration { return 0 }),
			Retryable: func(resp *http.Response, err error) bool { return err != nil || resp.StatusCode >= 500 }},
	})
	require.NoError(t, err)
	client := &http.Client{Transport: rt}
	for range 4 {
		resp, err := client.Get(srv.URL)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}
	require.NoError(t, rec.Close())
	// 200; 429; 503, its retry 503 (trips), its retry refused; the third
	// request refused.
	tr := sim.NewTraceReader(strings.NewReader(out.String()), "trace")
	type line struct {
		outcome record.Outcome
		class   string
		attempt int
	}
	var got []line
	host := strings.TrimPrefix(srv.URL, "http://")
	for {
		e, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		assert.Equal(t, host, e.Key)
		got = append(got, line{e.Outcome, e.Class, e.Attempt})
	}
	assert.Equal(t, []line{
		{record.Success, "", 1},
		{record.Ignored, "", 1},
		{record.Failure, "response", 1},
		{record.Failure, "response", 2},
		{record.Refused, "open", 3},
		{record.Refused, "open", 1},
	}, got)
	assert.Equal(t, int32(4), n.Load(), "refused requests were not sent")
}

// A zero Recorder is refused with an error naming it, and nothing is
// sent.
func TestRecordLayer_SM8_ZeroRecorder(t *testing.T) {
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { sent.Add(1) }))
	defer srv.Close()
	rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{Recorder: &record.Recorder{}, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})
	require.NoError(t, err)
	_, err = (&http.Client{Transport: rt}).Get(srv.URL)
	assert.ErrorContains(t, err, "record: Recorder must be made by New, got a zero Recorder")
	assert.Zero(t, sent.Load())
}
