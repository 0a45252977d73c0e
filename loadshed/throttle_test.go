package loadshed_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/observe"
)

// fixedRand returns a Rand that always answers v and counts its calls.
func fixedRand(v float64, calls *atomic.Int64) func() float64 {
	return func() float64 {
		calls.Add(1)
		return v
	}
}

func newThrottle(t *testing.T, cfg loadshed.ThrottleConfig) *loadshed.Throttle {
	t.Helper()
	th, err := loadshed.NewThrottle(cfg)
	require.NoError(t, err)
	return th
}

func record(th *loadshed.Throttle, requests, accepts int) {
	for i := range requests {
		th.Record(i < accepts)
	}
}

func TestNewThrottle_RejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  loadshed.ThrottleConfig
		want string
	}{
		{name: "K below 1", cfg: loadshed.ThrottleConfig{K: 0.5}, want: "loadshed: K must be >= 1 and finite (0 means DefaultK, 2), got 0.5"},
		{name: "negative K", cfg: loadshed.ThrottleConfig{K: -2}, want: "loadshed: K must be >= 1 and finite (0 means DefaultK, 2), got -2"},
		{name: "NaN K", cfg: loadshed.ThrottleConfig{K: math.NaN()}, want: "loadshed: K must be >= 1 and finite (0 means DefaultK, 2), got NaN"},
		{name: "infinite K", cfg: loadshed.ThrottleConfig{K: math.Inf(1)}, want: "loadshed: K must be >= 1 and finite (0 means DefaultK, 2), got +Inf"},
		{name: "negative window", cfg: loadshed.ThrottleConfig{Window: -time.Second}, want: "loadshed: Window must be >= 0 (0 means DefaultWindow, 2m0s), got -1s"},
		{name: "negative buckets", cfg: loadshed.ThrottleConfig{Buckets: -1}, want: "loadshed: Buckets must be between 0 and 1000 (0 means DefaultBuckets, 12), got -1"},
		{name: "too many buckets", cfg: loadshed.ThrottleConfig{Buckets: 1001}, want: "loadshed: Buckets must be between 0 and 1000 (0 means DefaultBuckets, 12), got 1001"},
		{name: "buckets finer than 1ns", cfg: loadshed.ThrottleConfig{Window: 5, Buckets: 6}, want: "loadshed: Buckets must be at most Window in nanoseconds (5), got 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th, err := loadshed.NewThrottle(tc.cfg)
			assert.Nil(t, th)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestThrottle_HealthyBackendNeverRefuses(t *testing.T) {
	var draws atomic.Int64
	th := newThrottle(t, loadshed.ThrottleConfig{Rand: fixedRand(0, &draws)})
	record(th, 1000, 1000)
	assert.Equal(t, 0.0, th.Probability())
	for range 100 {
		assert.True(t, th.Allow())
	}
	assert.Zero(t, draws.Load(), "Rand is not consulted while the probability is zero")
}

// With the default K = 2 the client throttles only once the backend
// refuses more than half: 10 requests and 5 accepts give 0, 4 accepts give
// (10 - 2*4) / (10 + 1) = 2/11.
func TestThrottle_ProbabilityFollowsSREFormula(t *testing.T) {
	for _, tc := range []struct {
		name              string
		k                 float64
		requests, accepts int
		want              float64
	}{
		{name: "default K, half accepted", requests: 10, accepts: 5, want: 0},
		{name: "default K, 4 of 10 accepted", requests: 10, accepts: 4, want: 2.0 / 11},
		{name: "default K, none accepted", requests: 10, accepts: 0, want: 10.0 / 11},
		{name: "K 1.5", k: 1.5, requests: 10, accepts: 4, want: 4.0 / 11},
		{name: "K 1, all accepted", k: 1, requests: 7, accepts: 7, want: 0},
		{name: "empty", requests: 0, accepts: 0, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := newThrottle(t, loadshed.ThrottleConfig{K: tc.k})
			record(th, tc.requests, tc.accepts)
			assert.Equal(t, tc.want, th.Probability())
			requests, accepts := th.Counts()
			assert.Equal(t, int64(tc.requests), requests)
			assert.Equal(t, int64(tc.accepts), accepts)
		})
	}
}

func TestThrottle_RefusalCountsAsRequestNotAccept(t *testing.T) {
	var draws atomic.Int64
	below := 2.0/11 - 1e-9
	th := newThrottle(t, loadshed.ThrottleConfig{Rand: fixedRand(below, &draws)})
	record(th, 10, 4)

	assert.False(t, th.Allow(), "a draw below 2/11 refuses")
	requests, accepts := th.Counts()
	assert.Equal(t, int64(11), requests)
	assert.Equal(t, int64(4), accepts)
	assert.Equal(t, (11-2*4)/12.0, th.Probability())
	assert.Equal(t, int64(1), draws.Load())

	th2 := newThrottle(t, loadshed.ThrottleConfig{Rand: fixedRand(2.0/11, &draws)})
	record(th2, 10, 4)
	assert.True(t, th2.Allow(), "a draw equal to the probability allows")
	requests, _ = th2.Counts()
	assert.Equal(t, int64(10), requests, "Allow counts nothing when it allows; Record does")
}

// The window is 12 buckets of 10s: counts made at time 0 are dropped
// exactly when the 13th bucket begins, at 2 minutes.
func TestThrottle_WindowForgetsOldCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := newThrottle(t, loadshed.ThrottleConfig{})
		record(th, 10, 0)
		time.Sleep(30 * time.Second)
		record(th, 4, 4)

		time.Sleep(90*time.Second - time.Nanosecond)
		requests, accepts := th.Counts()
		assert.Equal(t, int64(14), requests)
		assert.Equal(t, int64(4), accepts)

		time.Sleep(time.Nanosecond)
		requests, accepts = th.Counts()
		assert.Equal(t, int64(4), requests)
		assert.Equal(t, int64(4), accepts)
		assert.Equal(t, 0.0, th.Probability())

		// A bucket reused after a full window starts from zero.
		record(th, 1, 0)
		requests, _ = th.Counts()
		assert.Equal(t, int64(5), requests)

		time.Sleep(30 * time.Second)
		requests, accepts = th.Counts()
		assert.Equal(t, int64(1), requests)
		assert.Equal(t, int64(0), accepts)
	})
}

func TestNewThrottleLayer_RejectsNilThrottle(t *testing.T) {
	_, err := loadshed.NewThrottleLayer[int, int](nil, nil)
	assert.EqualError(t, err, "loadshed: throttle must not be nil")
}

var errUnavailable = errors.New("unavailable")

func TestThrottleLayer_CountsOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errNotFound := errors.New("not found")
		th := newThrottle(t, loadshed.ThrottleConfig{Rand: func() float64 { return 0.999 }})
		layer, err := loadshed.NewThrottleLayer[error, string](th, func(_ string, err error) bool {
			return err == nil || errors.Is(err, errNotFound)
		})
		require.NoError(t, err)
		svc := layer.Wrap(rampart.ServiceFunc[error, string](func(ctx context.Context, fail error) (string, error) {
			if fail == context.DeadlineExceeded {
				<-ctx.Done()
				return "", ctx.Err()
			}
			if fail == context.Canceled {
				<-ctx.Done()
				return "partial", ctx.Err()
			}
			return "resp", fail
		}))

		check := func(name string, wantRequests, wantAccepts int64) {
			t.Helper()
			requests, accepts := th.Counts()
			assert.Equal(t, wantRequests, requests, name+": requests")
			assert.Equal(t, wantAccepts, accepts, name+": accepts")
		}

		resp, err := svc.Call(t.Context(), nil)
		assert.Equal(t, "resp", resp)
		assert.NoError(t, err)
		check("success", 1, 1)

		_, err = svc.Call(t.Context(), errNotFound)
		assert.Same(t, errNotFound, err)
		check("accepted error", 2, 2)

		resp, err = svc.Call(t.Context(), errUnavailable)
		assert.Equal(t, "resp", resp, "the inner response is returned unchanged")
		assert.Same(t, errUnavailable, err)
		check("rejection", 3, 2)

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err = svc.Call(ctx, context.DeadlineExceeded)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		check("caller deadline passed while the backend worked", 4, 2)

		ctx, cancel = context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		resp, err = svc.Call(ctx, context.Canceled)
		assert.Equal(t, "partial", resp)
		assert.ErrorIs(t, err, context.Canceled)
		check("caller cancelled", 4, 2)

		_, err = svc.Call(ctx, nil)
		assert.Same(t, context.Canceled, err)
		check("context done on arrival", 4, 2)
	})
}

func TestThrottleLayer_RefusesLocally(t *testing.T) {
	var draws atomic.Int64
	th := newThrottle(t, loadshed.ThrottleConfig{Rand: fixedRand(0.5, &draws)})
	layer, err := loadshed.NewThrottleLayer[int, int](th, nil)
	require.NoError(t, err)
	var calls atomic.Int64
	svc := layer.Wrap(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		calls.Add(1)
		return 0, errUnavailable
	}))

	// Failures until p = (n - 0) / (n + 1) > 0.5, that is n = 2 requests.
	for range 2 {
		_, err := svc.Call(t.Context(), 1)
		assert.Same(t, errUnavailable, err)
	}
	assert.Equal(t, 2.0/3, th.Probability())
	resp, err := svc.Call(t.Context(), 1)
	assert.Zero(t, resp)
	assert.Same(t, loadshed.ErrOverloaded, err)
	assert.Equal(t, int64(2), calls.Load(), "a refused call must not reach the backend")
	requests, accepts := th.Counts()
	assert.Equal(t, int64(3), requests)
	assert.Zero(t, accepts)
}

func TestThrottle_Hammer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, perWorker = 16, 500
		th := newThrottle(t, loadshed.ThrottleConfig{})
		layer, err := loadshed.NewThrottleLayer[int, int](th, nil)
		require.NoError(t, err)
		var sent, refused, accepted atomic.Int64
		svc := layer.Wrap(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
			sent.Add(1)
			if req%3 == 0 {
				accepted.Add(1)
				return req, nil
			}
			return 0, errUnavailable
		}))
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					_, err := svc.Call(context.Background(), w+i)
					if errors.Is(err, loadshed.ErrOverloaded) {
						refused.Add(1)
					}
					if p := th.Probability(); p < 0 || p >= 1 {
						t.Errorf("Probability() = %v, want in [0, 1)", p)
					}
				}
			})
		}
		wg.Wait()
		// No virtual time passed, so nothing rotated out: the counts are exact.
		requests, accepts := th.Counts()
		assert.Equal(t, int64(workers*perWorker), requests)
		assert.Equal(t, int64(workers*perWorker), sent.Load()+refused.Load())
		assert.Equal(t, accepted.Load(), accepts)
		assert.Positive(t, refused.Load(), "two thirds rejected must throttle")
	})
}

// Rotation under contention: counts stay consistent while buckets turn over.
func TestThrottle_HammerRotation(t *testing.T) {
	th := newThrottle(t, loadshed.ThrottleConfig{Window: 10 * time.Microsecond, Buckets: 10})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 2000 {
				th.Record(i%2 == 0)
				th.Allow()
				if requests, accepts := th.Counts(); accepts > requests+8 || requests < 0 {
					t.Errorf("Counts() = %d, %d", requests, accepts)
				}
			}
		})
	}
	wg.Wait()
}

func TestThrottleLayer_AllocatesNothing(t *testing.T) {
	th := newThrottle(t, loadshed.ThrottleConfig{K: 1, Rand: func() float64 { return 0 }})
	layer, err := loadshed.NewThrottleLayer[int, int](th, nil)
	require.NoError(t, err)
	fail := false
	var calls int
	svc := layer.Wrap(rampart.ServiceFunc[int, int](func(ctx context.Context, req int) (int, error) {
		calls++
		if fail {
			return 0, errUnavailable
		}
		return req, nil
	}))
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, 1) }), "accepted")
	fail = true
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, 1) }), "rejected and refused")
	// AllocsPerRun runs 101 times: 101 accepts, then one refusal makes
	// the probability positive (K is 1) and Rand's 0 refuses the other 100.
	assert.Equal(t, 102, calls)
	requests, accepts := th.Counts()
	assert.Equal(t, int64(202), requests)
	assert.Equal(t, int64(101), accepts)
}

// WrapThrottle is NewThrottleLayer's Wrap twin: the call is counted in t.
func TestWrapThrottle(t *testing.T) {
	th, err := loadshed.NewThrottle(loadshed.ThrottleConfig{})
	require.NoError(t, err)
	svc, err := wrap.Service2(rampart.ServiceFunc[int, int](func(_ context.Context, req int) (int, error) {
		return req, nil
	}), loadshed.NewThrottleLayer, th, nil)
	require.NoError(t, err)
	got, err := svc.Call(t.Context(), 7)
	require.NoError(t, err)
	assert.Equal(t, 7, got)
	requests, accepts := th.Counts()
	assert.Equal(t, int64(1), requests)
	assert.Equal(t, int64(1), accepts)
}

// The refusal probability is always the SRE formula, within [0, 1), and
// Allow refuses exactly when the draw is below it.
func FuzzThrottle_Probability(f *testing.F) {
	f.Add(uint16(10), uint16(4), 2.0, 0.1)
	f.Add(uint16(0), uint16(0), 0.0, 0.0)
	f.Add(uint16(1000), uint16(0), 1.0, 0.999)
	f.Add(uint16(5), uint16(9), 1.1, 0.5)
	f.Fuzz(func(t *testing.T, requests, accepts uint16, k, draw float64) {
		accepts = min(accepts, requests)
		if math.IsNaN(draw) || draw < 0 || draw >= 1 {
			draw = 0.5
		}
		th, err := loadshed.NewThrottle(loadshed.ThrottleConfig{K: k, Rand: func() float64 { return draw }})
		if k != 0 && (!(k >= 1) || math.IsInf(k, 1)) {
			if err == nil {
				t.Fatalf("NewThrottle accepted K = %v", k)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			k = loadshed.DefaultK
		}
		for i := range int(requests) {
			th.Record(i < int(accepts))
		}
		p := th.Probability()
		want := max(0, (float64(requests)-k*float64(accepts))/(float64(requests)+1))
		if p != want || p < 0 || p >= 1 {
			t.Fatalf("Probability() = %v, want %v in [0, 1) (requests %d, accepts %d, K %v)", p, want, requests, accepts, k)
		}
		if allowed := th.Allow(); allowed != !(draw < p) {
			t.Fatalf("Allow() = %v with draw %v and probability %v", allowed, draw, p)
		}
	})
}

// The zero Throttle has no window: it never refuses and counts nothing.
func TestThrottle_ZeroValue(t *testing.T) {
	var th loadshed.Throttle
	th.Record(false)
	assert.True(t, th.Allow())
	assert.Zero(t, th.Probability())
	requests, accepts := th.Counts()
	assert.Zero(t, requests)
	assert.Zero(t, accepts)
}

func TestLoadShed_EV6_ThrottleRefused(t *testing.T) {
	var rec observetest.Recorder
	th, err := loadshed.NewThrottle(loadshed.ThrottleConfig{
		Rand: func() float64 { return 0 }, Name: "backend", Observer: &rec,
	})
	require.NoError(t, err)
	down := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", errors.New("down") })
	svc, err := wrap.Service2(down, loadshed.NewThrottleLayer, th, nil)
	require.NoError(t, err)
	_, err = svc.Call(context.Background(), "a") // sent: no history yet
	require.EqualError(t, err, "down")
	require.Empty(t, rec.Events())
	_, err = svc.Call(context.Background(), "b") // refused with probability 1/2 > 0
	require.ErrorIs(t, err, loadshed.ErrOverloaded)
	require.Equal(t, []observe.Event{
		{Source: observe.LoadShed, Name: "backend", Kind: observe.Refused, Err: loadshed.ErrOverloaded},
	}, rec.Events())
}

// TestThrottle_NZ1_NilThrottle calls every exported method of a nil
// *Throttle: it is the zero Throttle, never refusing, counting nothing.
func TestThrottle_NZ1_NilThrottle(t *testing.T) {
	var th *loadshed.Throttle
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Allow", Call: func() any { return th.Allow() }, Want: true},
		{Name: "Record", Call: func() any { th.Record(false); r, a := th.Counts(); return []int64{r, a} }, Want: []int64{0, 0}},
		{Name: "Probability", Call: func() any { return th.Probability() }, Want: 0.0},
		{Name: "Counts", Call: func() any { r, a := th.Counts(); return []int64{r, a} }, Want: []int64{0, 0}},
	})
}
