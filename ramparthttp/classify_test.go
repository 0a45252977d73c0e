package ramparthttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
)

// A 429 asks this client to slow down; it says nothing about whether the
// dependency is down. It is retried after its Retry-After, and the breaker
// neither counts it as a failure nor as a success.
func TestClient_HT5_TooManyRequestsIsRetriedButNeutralForTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := circuitbreaker.New(circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 1},
			CoolDown: time.Minute,
		})
		require.NoError(t, err)
		ft := &fakeTransport{statuses: []int{429, 429, 429, 200}, header: http.Header{"Retry-After": {"2"}}}
		small, err := retry.NewConstant(10 * time.Millisecond)
		require.NoError(t, err)
		c := newClient(t, ramparthttp.ClientConfig{Base: ft, Breaker: br, Retry: ramparthttp.RetryConfig{MaxAttempts: 4, Backoff: small}})
		start := time.Now()

		resp, err := c.Get("http://backend/x")
		require.NoError(t, err, "a 429 does not trip a breaker that trips on one failure")
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		require.Len(t, ft.at, 4)
		for i, want := range []time.Duration{0, 2 * time.Second, 4 * time.Second, 6 * time.Second} {
			assert.Equal(t, want, ft.at[i].Sub(start), "attempt %d", i+1)
		}
		assert.Equal(t, circuitbreaker.Closed, br.State().State)
	})
}

func TestClassifyAndRetryable_HT5_Defaults(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int // 0: a transport error
		outcome   rampart.Outcome
		retryable bool
	}{
		{name: "transport error", status: 0, outcome: rampart.Failure, retryable: true},
		{name: "200", status: 200, outcome: rampart.Success, retryable: false},
		{name: "404", status: 404, outcome: rampart.Success, retryable: false},
		{name: "429", status: 429, outcome: rampart.Ignored, retryable: true},
		{name: "500", status: 500, outcome: rampart.Failure, retryable: true},
		{name: "501", status: 501, outcome: rampart.Success, retryable: false},
		{name: "502", status: 502, outcome: rampart.Failure, retryable: true},
		{name: "503", status: 503, outcome: rampart.Failure, retryable: true},
		{name: "504", status: 504, outcome: rampart.Failure, retryable: true},
		{name: "505", status: 505, outcome: rampart.Success, retryable: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp *http.Response
			var err error
			if tc.status == 0 {
				err = errTransport
			} else {
				resp = &http.Response{StatusCode: tc.status}
			}
			assert.Equal(t, tc.outcome, ramparthttp.Classify(resp, err))
			assert.Equal(t, tc.retryable, ramparthttp.Retryable(resp, err))
		})
	}
	assert.Equal(t, rampart.Success, ramparthttp.Classify(nil, nil))
	assert.False(t, ramparthttp.Retryable(nil, nil))
}

// Config.Classify replaces the breaker's judgement of responses and errors
// alike, and can call either neutral.
func TestClient_HT5_ClassifyDecidesTheBreakersJudgement(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 1},
		CoolDown: time.Minute,
	})
	require.NoError(t, err)
	var asked []string
	classify := func(resp *http.Response, err error) rampart.Outcome {
		switch {
		case err != nil:
			asked = append(asked, "error")
			return rampart.Ignored
		case resp.StatusCode == http.StatusServiceUnavailable:
			asked = append(asked, "503")
			return rampart.Success
		case resp.StatusCode == http.StatusNotFound:
			asked = append(asked, "404")
			return rampart.Failure
		}
		asked = append(asked, "other")
		return rampart.Success
	}
	ft := &fakeTransport{statuses: []int{503, 0, 404, 200}}
	c := newClient(t, ramparthttp.ClientConfig{Base: ft, Breaker: br, Classify: classify, Retry: ramparthttp.RetryConfig{MaxAttempts: 1}})

	for _, want := range []circuitbreaker.State{circuitbreaker.Closed, circuitbreaker.Closed, circuitbreaker.Open} {
		resp, _ := c.Get("http://backend/x")
		if resp != nil {
			resp.Body.Close()
		}
		assert.Equal(t, want, br.State().State)
	}
	assert.Equal(t, []string{"503", "error", "404"}, asked)
	assert.ErrorIs(t, br.State().Cause, circuitbreaker.ErrBadResponse, "a response judged a failure")
	var se *ramparthttp.StatusError
	require.ErrorAs(t, br.State().Cause, &se)
	assert.Equal(t, 404, se.StatusCode())
	assert.EqualError(t, br.State().Cause, "ramparthttp: response judged a failure: 404 Not Found", "the trip's cause names the status")
}

// RetryConfig.Retryable replaces the judgement of what is retried.
func TestClient_HT5_RetryableDecidesWhatIsRetried(t *testing.T) {
	retryable := func(resp *http.Response, err error) bool {
		return resp != nil && resp.StatusCode == http.StatusNotFound
	}
	for _, tc := range []struct {
		name      string
		statuses  []int
		wantCalls int
		wantCode  int
	}{
		{name: "404 retried", statuses: []int{404, 404, 200}, wantCalls: 3, wantCode: 200},
		{name: "503 not retried", statuses: []int{503, 200}, wantCalls: 1, wantCode: 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeTransport{statuses: tc.statuses}
			c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{Backoff: noBackoff, Retryable: retryable}})
			resp, err := c.Get("http://backend/x")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.wantCode, resp.StatusCode)
			assert.Equal(t, tc.wantCalls, ft.calls)
		})
	}
}

// The caller's cancellation is ignored before the classifier is asked: the
// caller gave up, and the error says nothing about the dependency.
func TestBreakerLayer_HT5_CallerCancellationNotClassified(t *testing.T) {
	br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	require.NoError(t, err)
	asked := 0
	l := breakerLayer(t, ramparthttp.BreakerConfig{Breaker: br, Classify: func(*http.Response, error) rampart.Outcome {
		asked++
		return rampart.Failure
	}})
	ctx, cancel := context.WithCancel(context.Background())
	svc := l.Wrap(rampart.ServiceFunc[*http.Request, *http.Response](func(ctx context.Context, _ *http.Request) (*http.Response, error) {
		cancel()
		return nil, ctx.Err()
	}))

	_, err = svc.Call(ctx, httptest.NewRequest(http.MethodGet, "http://backend/x", nil))
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, asked)
	assert.Equal(t, circuitbreaker.Closed, br.State().State)
}
