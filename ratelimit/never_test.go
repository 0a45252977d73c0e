package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/ratelimit"
)

// A limiter that can never grant a token refuses at once in Wait mode too,
// with a RetryAfter of rate.InfDuration, whether or not the caller has a
// deadline, and whether or not calls already wait.
func TestLayer_LM10_NeverGrantingLimiterRefusesAtOnceInWaitMode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit rate.Limit
		burst int
		spend int // calls admitted before the limiter can never grant
	}{
		{name: "limit 0, burst spent", limit: 0, burst: 1, spend: 1},
		{name: "negative limit, burst spent", limit: -1, burst: 2, spend: 2},
		{name: "burst 0", limit: 1, burst: 0, spend: 0},
	} {
		for _, deadline := range []bool{false, true} {
			name := tc.name + ", no deadline"
			if deadline {
				name = tc.name + ", 1s deadline"
			}
			for mode, m := range modes {
				t.Run(name+", "+mode, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						ok := rampart.ServiceFunc[int, int](func(_ context.Context, i int) (int, error) { return i, nil })
						{
							svc, err := wrap.Service(ok, ratelimit.NewLayer, ratelimit.Config{Limiter: rate.NewLimiter(tc.limit, tc.burst), Mode: m})
							require.NoError(t, err)
							for i := range tc.spend {
								_, err := svc.Call(t.Context(), i)
								require.NoError(t, err)
							}
							ctx := t.Context()
							if deadline {
								c, cancel := context.WithTimeout(ctx, time.Second)
								defer cancel()
								ctx = c
							}
							start := time.Now()
							_, err = svc.Call(ctx, 99)
							assert.Equal(t, time.Duration(0), time.Since(start), "refused at once")
							var le *ratelimit.LimitedError
							require.True(t, errors.As(err, &le), "got %v", err)
							assert.Equal(t, rate.InfDuration, le.Wait)
							assert.False(t, le.PastDeadline)
							assert.EqualError(t, err, "ratelimit: limited: the limiter can never grant a token")
						}
					})
				})
			}
		}
	}
}

// On the real clock a few nanoseconds pass between the reservation and its
// delay being read, so x/time/rate's "never" arrives as a delay just under
// rate.InfDuration: it is still "never". (Inside synctest no time passes
// there, which is why this case runs on the real clock.)
func TestLayer_LM10_NeverGrantingLimiterRefusesOnTheRealClock(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(_ context.Context, i int) (int, error) { return i, nil })
	for _, deadline := range []bool{false, true} {
		svc, err := wrap.Service(ok, ratelimit.NewLayer, ratelimit.Config{Limiter: rate.NewLimiter(0, 1), Mode: ratelimit.Wait})
		require.NoError(t, err)
		_, err = svc.Call(t.Context(), 1)
		require.NoError(t, err)
		// A call that waited for the never-coming token would end only
		// when this context does, and fail the assertions below.
		ctx, cancel := context.WithCancel(t.Context())
		stop := context.AfterFunc(t.Context(), cancel)
		timer := time.AfterFunc(10*time.Second, cancel)
		if deadline {
			var c context.CancelFunc
			ctx, c = context.WithTimeout(ctx, time.Second)
			defer c()
		}
		_, err = svc.Call(ctx, 2)
		timer.Stop()
		stop()
		cancel()
		var le *ratelimit.LimitedError
		require.True(t, errors.As(err, &le), "deadline %v: got %v", deadline, err)
		assert.Equal(t, rate.InfDuration, le.Wait, "deadline %v", deadline)
		assert.False(t, le.PastDeadline, "deadline %v", deadline)
	}
}
