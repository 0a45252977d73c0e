package record_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/retry"
)

// status is a response: an HTTP-like status code.
type status int

// byStatus judges a response as an HTTP breaker does: 5xx fails, 429 is
// neither.
func byStatus(resp status, err error) rampart.Outcome {
	switch {
	case err != nil || resp >= 500:
		return rampart.Failure
	case resp == 429:
		return rampart.Ignored
	}
	return rampart.Success
}

// The classifier judges responses: a 503 with a nil error is a failure,
// a 429 ignored, and a call the caller cancelled ignored without asking.
func TestLayer_SM8_Classify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		rec, err := record.New(&out, record.Config{})
		require.NoError(t, err)
		start := time.Now()
		asked := 0
		svc := record.NewLayer(record.LayerConfig[status, status]{
			Recorder: rec,
			Classify: func(resp status, err error) rampart.Outcome { asked++; return byStatus(resp, err) },
		}).Wrap(rampart.ServiceFunc[status, status](func(ctx context.Context, s status) (status, error) {
			time.Sleep(time.Millisecond)
			if s == 0 {
				return 0, ctx.Err()
			}
			return s, nil
		}))
		for _, s := range []status{200, 503, 429} {
			_, _ = svc.Call(context.Background(), s)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _ = svc.Call(ctx, 0)
		require.NoError(t, rec.Close())
		at := func(d time.Duration) string { return start.Add(d).UTC().Format(time.RFC3339Nano) }
		assert.Equal(t, `{"start":"`+at(0)+`","duration":"1ms","outcome":"success"}
{"start":"`+at(time.Millisecond)+`","duration":"1ms","outcome":"failure","class":"response"}
{"start":"`+at(2*time.Millisecond)+`","duration":"1ms","outcome":"ignored"}
{"start":"`+at(3*time.Millisecond)+`","duration":"1ms","outcome":"ignored","class":"canceled"}
`, out.String())
		assert.Equal(t, 3, asked, "not asked about the caller's cancellation")
	})
}

// Between the retry layer and the breaker, the recorder sees each attempt
// with its number, and the attempts the breaker refused, which never
// reached the dependency.
func TestLayer_SM8_AttemptsAndRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		rec, err := record.New(&out, record.Config{})
		require.NoError(t, err)
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Minute})
		require.NoError(t, err)
		rt, err := retry.NewLayer(retry.Config[string, string]{MaxAttempts: 3, Backoff: retry.BackoffFunc(func(int, time.Duration) time.Duration { return time.Second }), Budget: budget.Always})
		require.NoError(t, err)
		svc := rampart.NewBuilder[string, string]().
			Layer(rt).
			Layer(record.NewLayer(record.LayerConfig[string, string]{Recorder: rec})).
			Layer(circuitbreaker.NewLayer[string, string](br, nil)).
			Service(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
				time.Sleep(10 * time.Millisecond)
				return "", errors.New("down")
			}))
		start := time.Now()
		_, err = svc.Call(context.Background(), "")
		require.ErrorIs(t, err, circuitbreaker.ErrOpen)
		require.NoError(t, rec.Close())
		at := func(d time.Duration) string { return start.Add(d).UTC().Format(time.RFC3339Nano) }
		assert.Equal(t, `{"start":"`+at(0)+`","duration":"10ms","outcome":"failure","class":"error"}
{"start":"`+at(1010*time.Millisecond)+`","duration":"10ms","outcome":"failure","class":"error","attempt":2}
{"start":"`+at(2020*time.Millisecond)+`","duration":"0ns","outcome":"refused","class":"open","attempt":3}
`, out.String())
	})
}

// A zero Recorder is refused, never divided by: each call through its
// layer fails with an error saying so, and Close says so too.
func TestLayer_SM8_ZeroRecorderRefused(t *testing.T) {
	var zero record.Recorder
	calls := 0
	svc := record.NewLayer(record.LayerConfig[string, string]{Recorder: &zero}).Wrap(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		calls++
		return "", nil
	}))
	_, err := svc.Call(context.Background(), "")
	assert.EqualError(t, err, "record: Recorder must be made by New, got a zero Recorder")
	assert.ErrorIs(t, err, rampart.ErrNilService, "a wiring mistake, as a nil Recorder is: not retried")
	assert.Zero(t, calls, "nothing sent")
	assert.EqualError(t, zero.Close(), "record: Recorder must be made by New, got a zero Recorder")
	assert.Zero(t, zero.Dropped())
}

// A concurrency limit's refusal below the recorder is a refusal too: the
// call never reached the dependency.
func TestLayer_SM8_LimitRefusal(t *testing.T) {
	var out bytes.Buffer
	rec, err := record.New(&out, record.Config{})
	require.NoError(t, err)
	svc := record.NewLayer(record.LayerConfig[string, string]{Recorder: rec}).Wrap(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		return "", &concurrency.LimitedError{}
	}))
	_, _ = svc.Call(context.Background(), "")
	require.NoError(t, rec.Close())
	assert.Contains(t, out.String(), `"outcome":"refused","class":"limited"}`)
}
