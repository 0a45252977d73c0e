package timeout_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

var errBoom = errors.New("boom")

// honest blocks until its context is done and returns ctx.Err(), as a
// well-behaved service does.
var honest = rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
})

// after returns a service that ignores its context, sleeps d and returns
// resp, err.
func after(d time.Duration, resp string, err error) rampart.Service[string, string] {
	return rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
		time.Sleep(d)
		return resp, err
	})
}

func wrapT(t *testing.T, cfg timeout.Config[string, string], inner rampart.Service[string, string]) rampart.Service[string, string] {
	t.Helper()
	l, err := timeout.NewLayer(cfg)
	require.NoError(t, err)
	return l.Wrap(inner)
}

// inBothModes runs f in a synctest bubble as a subtest for the default mode
// and another for Abandon mode.
func inBothModes(t *testing.T, f func(t *testing.T, abandon bool)) {
	for _, abandon := range []bool{false, true} {
		name := "default"
		if abandon {
			name = "abandon"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { f(t, abandon) })
		})
	}
}

// timed calls svc and returns its result and how long it took.
func timed(ctx context.Context, svc rampart.Service[string, string]) (string, time.Duration, error) {
	start := time.Now()
	resp, err := svc.Call(ctx, "req")
	return resp, time.Since(start), err
}

func TestNewLayer_RejectsNonPositive(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{name: "zero", d: 0, want: "timeout: Timeout must be > 0, got 0s"},
		{name: "negative", d: -time.Millisecond, want: "timeout: Timeout must be > 0, got -1ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: tc.d})
			assert.Nil(t, l)
			assert.EqualError(t, err, tc.want)
			svc, err := wrap.Service(honest, timeout.NewLayer, timeout.Config[string, string]{Timeout: tc.d})
			assert.Nil(t, svc)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestNewConfigLayer(t *testing.T) {
	forFn := func(string) time.Duration { return time.Second }
	for _, tc := range []struct {
		name string
		cfg  timeout.Config[string, string]
		want string // "" means valid
	}{
		{name: "timeout only", cfg: timeout.Config[string, string]{Timeout: time.Second}},
		{name: "for without fallback", cfg: timeout.Config[string, string]{For: forFn}},
		{name: "negative fallback", cfg: timeout.Config[string, string]{For: forFn, Timeout: -time.Second},
			want: "timeout: Timeout must be >= 0 when For is set (0 means no deadline where For returns 0), got -1s"},
		{name: "late without abandon", cfg: timeout.Config[string, string]{Timeout: time.Second, Late: func(string, error) {}},
			want: "timeout: Late must be nil unless Abandon is true"},
		{name: "late with abandon", cfg: timeout.Config[string, string]{Timeout: time.Second, Abandon: true, Late: func(string, error) {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := timeout.NewLayer(tc.cfg)
			if tc.want != "" {
				assert.Nil(t, l)
				assert.EqualError(t, err, tc.want)
				return
			}
			assert.NoError(t, err)
			assert.NotNil(t, l)
		})
	}
}

func TestLayer_TO1_TimesOutAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, err := wrap.Service(honest, timeout.NewLayer, timeout.Config[string, string]{Timeout: 100 * time.Millisecond})
		require.NoError(t, err)

		_, took, err := timed(context.Background(), svc)

		assert.Equal(t, 100*time.Millisecond, took)
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var te *timeout.Error
		require.ErrorAs(t, err, &te)
		assert.Equal(t, 100*time.Millisecond, te.After)
		assert.Equal(t, context.DeadlineExceeded, te.Err)
		assert.EqualError(t, err, "timeout: deadline of 100ms exceeded: context deadline exceeded")
	})
}

func TestLayer_TO1_InnerSeesDeadlineAndCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var deadline time.Time
		var hasDeadline bool
		var cause error
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
			deadline, hasDeadline = ctx.Deadline()
			<-ctx.Done()
			cause = context.Cause(ctx)
			return "", cause // a service that returns the cause itself
		})
		svc, err := wrap.Service(inner, timeout.NewLayer, timeout.Config[string, string]{Timeout: 100 * time.Millisecond})
		require.NoError(t, err)

		_, err = svc.Call(context.Background(), "req")

		assert.True(t, hasDeadline)
		assert.Equal(t, start.Add(100*time.Millisecond), deadline)
		assert.ErrorIs(t, cause, timeout.ErrTimeout)
		assert.ErrorIs(t, cause, context.DeadlineExceeded)
		// The cause is not repeated inside the error the caller gets.
		var te *timeout.Error
		require.ErrorAs(t, err, &te)
		assert.Nil(t, te.Err)
		assert.EqualError(t, err, "timeout: deadline of 100ms exceeded")
	})
}

// The caller's deadline decides the answer when it is not later than the
// layer's, including the same instant; a later caller deadline leaves the
// timeout to the layer.
func TestLayer_TO1_CallerDeadline(t *testing.T) {
	for _, tc := range []struct {
		name        string
		caller      time.Duration // 0: no caller deadline
		wantTook    time.Duration
		wantTimeout bool
	}{
		{name: "none", caller: 0, wantTook: 100 * time.Millisecond, wantTimeout: true},
		{name: "earlier", caller: 50 * time.Millisecond, wantTook: 50 * time.Millisecond, wantTimeout: false},
		{name: "same instant", caller: 100 * time.Millisecond, wantTook: 100 * time.Millisecond, wantTimeout: false},
		{name: "later", caller: 200 * time.Millisecond, wantTook: 100 * time.Millisecond, wantTimeout: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBothModes(t, func(t *testing.T, abandon bool) {
				svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: abandon}, honest)
				// Repeat: timers due at the same instant fire in no fixed order.
				for range 20 {
					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					if tc.caller > 0 {
						ctx, cancel = context.WithTimeout(ctx, tc.caller)
					}
					_, took, err := timed(ctx, svc)
					cancel()

					assert.Equal(t, tc.wantTook, took)
					assert.ErrorIs(t, err, context.DeadlineExceeded)
					if tc.wantTimeout {
						assert.ErrorIs(t, err, timeout.ErrTimeout)
					} else {
						assert.Equal(t, context.DeadlineExceeded, err, "the caller's own error, unwrapped")
					}
				}
			})
		})
	}
}

func TestLayer_TO1_CallerCancel(t *testing.T) {
	inBothModes(t, func(t *testing.T, abandon bool) {
		svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: abandon}, honest)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)

		_, took, err := timed(ctx, svc)

		assert.Equal(t, 30*time.Millisecond, took)
		assert.Equal(t, context.Canceled, err)
		assert.NotErrorIs(t, err, timeout.ErrTimeout)
	})
}

// A caller's context that is done when the inner call returns makes the
// answer the caller's, even though the layer's deadline passed first.
func TestLayer_TO1_CallerDoneAtReturnWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond}, after(150*time.Millisecond, "", errBoom))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(120*time.Millisecond, cancel)

		_, took, err := timed(ctx, svc)

		assert.Equal(t, 150*time.Millisecond, took)
		assert.Same(t, errBoom, err)
	})
}

// The default mode waits for an inner call that ignores its context, and
// judges what it returns: a success is kept whenever it comes, an error
// after the deadline becomes a timeout that still carries the error and the
// response, an error before it is returned unchanged.
func TestLayer_TO1_InnerOutcome(t *testing.T) {
	for _, tc := range []struct {
		name        string
		delay       time.Duration
		resp        string
		err         error
		wantErr     string // "" for success
		wantTimeout bool
	}{
		{name: "error before deadline", delay: 10 * time.Millisecond, resp: "partial", err: errBoom, wantErr: "boom"},
		{name: "error after deadline", delay: 150 * time.Millisecond, resp: "partial", err: errBoom,
			wantErr: "timeout: deadline of 100ms exceeded: boom", wantTimeout: true},
		{name: "success after deadline", delay: 150 * time.Millisecond, resp: "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond}, after(tc.delay, tc.resp, tc.err))

				resp, took, err := timed(context.Background(), svc)

				assert.Equal(t, tc.delay, took)
				assert.Equal(t, tc.resp, resp)
				if tc.wantErr == "" {
					assert.NoError(t, err)
					return
				}
				assert.EqualError(t, err, tc.wantErr)
				assert.ErrorIs(t, err, errBoom)
				assert.Equal(t, tc.wantTimeout, errors.Is(err, timeout.ErrTimeout))
				assert.Equal(t, tc.wantTimeout, errors.Is(err, context.DeadlineExceeded))
			})
		})
	}
}

// Race boundary: the inner call returns at the very instant of the deadline.
// A success is always the success; an error is always a timeout.
func TestLayer_TO1_ReturnAtDeadlineInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond}, after(100*time.Millisecond, "ok", nil))
		failing := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond}, after(100*time.Millisecond, "", errBoom))
		for range 50 {
			resp, took, err := timed(context.Background(), ok)
			assert.Equal(t, 100*time.Millisecond, took)
			assert.NoError(t, err)
			assert.Equal(t, "ok", resp)

			_, _, err = timed(context.Background(), failing)
			assert.ErrorIs(t, err, timeout.ErrTimeout)
			assert.ErrorIs(t, err, errBoom)
		}
	})
}

func TestLayer_TO1_PerRequestTimeout(t *testing.T) {
	perReq := map[string]time.Duration{"fast": 30 * time.Millisecond, "default": 0, "unbounded": -1}
	forFn := func(req string) time.Duration { return perReq[req] }
	for _, tc := range []struct {
		name     string
		fallback time.Duration
		req      string
		want     time.Duration // the timeout reported; 0: the call is not bounded
	}{
		{name: "positive", fallback: 100 * time.Millisecond, req: "fast", want: 30 * time.Millisecond},
		{name: "zero uses Timeout", fallback: 100 * time.Millisecond, req: "default", want: 100 * time.Millisecond},
		{name: "zero without Timeout", fallback: 0, req: "default", want: 0},
		{name: "negative", fallback: 100 * time.Millisecond, req: "unbounded", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := wrapT(t, timeout.Config[string, string]{Timeout: tc.fallback, For: forFn}, honest)
				// The caller's own deadline ends calls the layer leaves unbounded.
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()

				start := time.Now()
				_, err := svc.Call(ctx, tc.req)
				took := time.Since(start)

				if tc.want == 0 {
					assert.Equal(t, time.Second, took)
					assert.Equal(t, context.DeadlineExceeded, err)
					return
				}
				assert.Equal(t, tc.want, took)
				var te *timeout.Error
				require.ErrorAs(t, err, &te)
				assert.Equal(t, tc.want, te.After)
			})
		})
	}
}

// TO3: by default the inner call runs on the caller's goroutine.
func TestLayer_TO3_DefaultStartsNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		before := goroutineID()
		during := ""
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
			during = goroutineID()
			<-ctx.Done()
			return "", ctx.Err()
		})
		svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond}, inner)

		_, err := svc.Call(context.Background(), "req")

		assert.ErrorIs(t, err, timeout.ErrTimeout)
		require.NotEmpty(t, before)
		assert.Equal(t, before, during, "the inner call ran on the caller's goroutine")
	})
}

// goroutineID returns the running goroutine's number, from the first line
// of its stack trace ("goroutine 7 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

func TestLayer_TO3_AbandonReturnsAtDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		finished := make(chan struct{})
		inner := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			defer close(finished)
			time.Sleep(300 * time.Millisecond) // ignores its context
			return "late", nil
		})
		type late struct {
			resp string
			err  error
			at   time.Duration
		}
		lates := make(chan late, 1)
		svc := wrapT(t, timeout.Config[string, string]{
			Timeout: 100 * time.Millisecond,
			Abandon: true,
			Late:    func(resp string, err error) { lates <- late{resp, err, time.Since(start)} },
		}, inner)

		resp, took, err := timed(context.Background(), svc)

		assert.Equal(t, 100*time.Millisecond, took)
		assert.Empty(t, resp)
		assert.EqualError(t, err, "timeout: deadline of 100ms exceeded")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		// The caller got its answer at 100ms while the inner call still
		// sleeps: it runs on a goroutine of its own.
		synctest.Wait()
		select {
		case <-finished:
			t.Error("the inner call finished before its deadline's answer")
		default:
		}
		assert.Empty(t, lates, "the late result is not delivered before the inner call returns")

		assert.Equal(t, late{resp: "late", err: nil, at: 300 * time.Millisecond}, <-lates)
		<-finished
		// synctest.Test returns only once every goroutine of the bubble
		// has exited, and goleak checks nothing else is left behind.
	})
}

func TestLayer_TO3_AbandonInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := wrapT(t, timeout.Config[string, string]{
			Timeout: 100 * time.Millisecond,
			Abandon: true,
			Late:    func(string, error) { t.Error("Late called for a call that returned in time") },
		}, after(10*time.Millisecond, "ok", nil))
		failing := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: true},
			after(10*time.Millisecond, "partial", errBoom))

		resp, took, err := timed(context.Background(), svc)
		assert.Equal(t, 10*time.Millisecond, took)
		assert.NoError(t, err)
		assert.Equal(t, "ok", resp)

		resp, err = failing.Call(context.Background(), "req")
		assert.Same(t, errBoom, err)
		assert.Equal(t, "partial", resp)
	})
}

func TestLayer_TO3_AbandonCallerCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errGone := errors.New("client went away")
		svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: true},
			after(time.Second, "late", nil))
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(30*time.Millisecond, func() { cancel(errGone) })

		_, took, err := timed(ctx, svc)

		assert.Equal(t, 30*time.Millisecond, took)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, errGone)
		assert.NotErrorIs(t, err, timeout.ErrTimeout)
		assert.EqualError(t, err, "context canceled: client went away")
		time.Sleep(time.Second) // let the abandoned call finish inside the bubble
	})
}

// A result that arrives at the instant of the deadline is returned or handed
// to Late, exactly once, never lost.
func TestLayer_TO3_AbandonResultAtDeadlineNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lateCalls int
		svc := wrapT(t, timeout.Config[string, string]{
			Timeout: 100 * time.Millisecond,
			Abandon: true,
			Late: func(resp string, err error) {
				assert.Equal(t, "ok", resp)
				assert.NoError(t, err)
				lateCalls++
			},
		}, after(100*time.Millisecond, "ok", nil))

		const calls = 1000
		var returned int
		for range calls {
			resp, took, err := timed(context.Background(), svc)
			assert.Equal(t, 100*time.Millisecond, took)
			if err == nil {
				assert.Equal(t, "ok", resp)
				returned++
			} else {
				assert.ErrorIs(t, err, timeout.ErrTimeout)
			}
			synctest.Wait()
		}
		assert.Equal(t, calls, returned+lateCalls)
	})
}

// Hammer: many concurrent abandonable calls, some in time, some late; every
// successful result reaches exactly one of the caller and Late.
func TestLayer_TO3_AbandonHammer(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		lates := make(chan string, 1000)
		inner := rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
			time.Sleep(time.Duration(len(req)) * 10 * time.Millisecond)
			return req, nil
		})
		svc := wrapT(t, timeout.Config[string, string]{
			Timeout: 100 * time.Millisecond,
			Abandon: true,
			Late:    func(resp string, _ error) { lates <- resp },
		}, inner)

		const callers = 200
		results := make(chan string, callers)
		for i := range callers {
			go func() {
				req := string(make([]byte, i%20)) // 0..190ms
				resp, err := svc.Call(context.Background(), req)
				if err == nil {
					results <- resp
				} else {
					results <- "timeout"
				}
			}()
		}
		got := map[int]int{} // len(resp) -> count, -1 for timeouts
		for range callers {
			r := <-results
			if r == "timeout" {
				got[-1]++
			} else {
				got[len(r)]++
			}
		}
		time.Sleep(time.Second)
		close(lates)
		late := map[int]int{}
		for r := range lates {
			late[len(r)]++
		}
		const perDelay = callers / 20
		for n := range 20 {
			assert.Equal(t, perDelay, got[n]+late[n], "delay %dms: every result delivered once", n*10)
			switch {
			case n < 10:
				assert.Equal(t, perDelay, got[n], "delay %dms: in time", n*10)
			case n > 10:
				assert.Equal(t, perDelay, late[n], "delay %dms: abandoned", n*10)
			}
		}
		// Calls that end at the deadline instant (100ms) may go either way.
		assert.Equal(t, 9*perDelay+late[10], got[-1])
	})
}

// fakeResponse stands for an HTTP response whose body is read after Call
// returns, through the call's context.
type fakeResponse struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Close releases the call's context, as ramparthttp's body wrapper does.
func (r *fakeResponse) Close() { r.cancel() }

func detach(resp *fakeResponse, cancel context.CancelFunc) *fakeResponse {
	resp.cancel = cancel
	return resp
}

func TestLayer_DetachHandsCancelToResponse(t *testing.T) {
	inBothModes(t, func(t *testing.T, abandon bool) {
		inner := rampart.ServiceFunc[string, *fakeResponse](func(ctx context.Context, _ string) (*fakeResponse, error) {
			return &fakeResponse{ctx: ctx}, nil
		})
		l, err := timeout.NewLayer(timeout.Config[string, *fakeResponse]{Timeout: 100 * time.Millisecond, Abandon: abandon, Detach: detach})
		require.NoError(t, err)
		svc := l.Wrap(inner)

		// Closed before the deadline: the context lives until Close.
		resp, err := svc.Call(context.Background(), "req")
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond)
		assert.NoError(t, resp.ctx.Err(), "still readable after Call returned")
		resp.Close()
		assert.Equal(t, context.Canceled, resp.ctx.Err())

		// Never closed in time: the deadline still fires.
		resp, err = svc.Call(context.Background(), "req")
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait() // let the deadline's timer, due at this instant, run
		assert.Equal(t, context.DeadlineExceeded, resp.ctx.Err())
		assert.ErrorIs(t, context.Cause(resp.ctx), timeout.ErrTimeout)
		resp.Close()
	})
}

func TestLayer_DetachNotCalledOnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var innerCtx context.Context
		inner := rampart.ServiceFunc[string, *fakeResponse](func(ctx context.Context, _ string) (*fakeResponse, error) {
			innerCtx = ctx
			return nil, errBoom
		})
		l, err := timeout.NewLayer(timeout.Config[string, *fakeResponse]{
			Timeout: 100 * time.Millisecond,
			Detach: func(resp *fakeResponse, cancel context.CancelFunc) *fakeResponse {
				t.Error("Detach called for a failed call")
				return resp
			},
		})
		require.NoError(t, err)

		_, err = l.Wrap(inner).Call(context.Background(), "req")

		assert.Same(t, errBoom, err)
		assert.Equal(t, context.Canceled, innerCtx.Err(), "cancelled when Call returned")
	})
}

// When the caller's deadline comes first the layer makes no context of its
// own, so it has no cancel to hand over and does not call Detach.
func TestLayer_DetachSkippedUnderCallerDeadline(t *testing.T) {
	inBothModes(t, func(t *testing.T, abandon bool) {
		inner := rampart.ServiceFunc[string, *fakeResponse](func(ctx context.Context, _ string) (*fakeResponse, error) {
			return &fakeResponse{ctx: ctx}, nil
		})
		l, err := timeout.NewLayer(timeout.Config[string, *fakeResponse]{
			Timeout: 100 * time.Millisecond,
			Abandon: abandon,
			Detach: func(resp *fakeResponse, cancel context.CancelFunc) *fakeResponse {
				t.Error("Detach called without a context of the layer's")
				return resp
			},
		})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()

		resp, err := l.Wrap(inner).Call(ctx, "req")

		require.NoError(t, err)
		assert.Nil(t, resp.cancel)
		deadline, _ := resp.ctx.Deadline()
		callerDeadline, _ := ctx.Deadline()
		assert.Equal(t, callerDeadline, deadline, "the inner call saw the caller's deadline")
	})
}

func TestLayer_AbandonPanicReachesCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			time.Sleep(10 * time.Millisecond)
			panic(errBoom)
		})
		svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: true}, inner)

		var recovered any
		func() {
			defer func() { recovered = recover() }()
			_, _ = svc.Call(context.Background(), "req")
		}()

		pe, ok := recovered.(*rampart.PanicError)
		require.True(t, ok, "panic value %#v", recovered)
		assert.Same(t, errBoom, pe.Value)
		assert.ErrorIs(t, pe, errBoom)
		assert.Contains(t, pe.Error(), "boom")
		assert.Contains(t, string(pe.Stack), "timeout_test.TestLayer_AbandonPanicReachesCaller", "carries the inner goroutine's stack")
	})
}

// The layer allocates nothing beyond what context.WithTimeoutCause does.
func TestLayer_AllocatesOnlyTheContext(t *testing.T) {
	inner := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })
	svc, err := wrap.Service(inner, timeout.NewLayer, timeout.Config[string, string]{Timeout: time.Hour})
	require.NoError(t, err)
	cause := errors.New("cause")
	ctx := context.Background()

	layer := testing.AllocsPerRun(100, func() { _, _ = svc.Call(ctx, "req") })
	bare := testing.AllocsPerRun(100, func() {
		tctx, cancel := context.WithTimeoutCause(ctx, time.Hour, cause)
		_, _ = inner.Call(tctx, "req")
		cancel()
	})
	assert.Equal(t, bare, layer)
}

func BenchmarkTimeoutLayer(b *testing.B) {
	inner := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })
	svc, err := wrap.Service(inner, timeout.NewLayer, timeout.Config[string, string]{Timeout: time.Hour})
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, "req")
	}
}

func BenchmarkBareWithTimeoutCause(b *testing.B) {
	var inner rampart.Service[string, string] = rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })
	cause := errors.New("cause")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tctx, cancel := context.WithTimeoutCause(ctx, time.Hour, cause)
		_, _ = inner.Call(tctx, "req")
		cancel()
	}
}

func BenchmarkTimeoutLayerParallel(b *testing.B) {
	inner := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })
	svc, err := wrap.Service(inner, timeout.NewLayer, timeout.Config[string, string]{Timeout: time.Hour})
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = svc.Call(ctx, "req")
		}
	})
}

func BenchmarkTimeoutLayerAbandon(b *testing.B) {
	inner := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })
	l, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: time.Hour, Abandon: true})
	require.NoError(b, err)
	svc := l.Wrap(inner)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = svc.Call(ctx, "req")
	}
}

func TestError_TO1_IsATimeoutTheNetWay(t *testing.T) {
	var err error = &timeout.Error{After: time.Second}
	assert.True(t, os.IsTimeout(err))
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())
	ue := &url.Error{Op: "Get", URL: "http://x", Err: err}
	assert.True(t, ue.Timeout())
}

func TestLayer_TO3_AbandonGoexitEndsTheCallersGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: time.Second, Abandon: true})
		require.NoError(t, err)
		svc := l.Wrap(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
			runtime.Goexit()
			return "", nil
		}))
		exited := make(chan struct{})
		var returned bool
		go func() {
			defer close(exited)
			_, _ = svc.Call(context.Background(), "x")
			returned = true
		}()
		<-exited
		assert.False(t, returned, "the caller's goroutine exits as the call's did, with no fake panic")
	})
}

// With a Clock the deadline is the clock's monotonic reading plus the
// timeout, enforced by the clock's timer: the inner context has no
// Deadline, is cancelled with the layer's cause, and the caller gets the
// same *Error as without a Clock, whatever the wall reading does.
func TestLayer_CK4_DeadlineOnTheSuppliedClock(t *testing.T) {
	inBothModes(t, func(t *testing.T, abandon bool) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
		var hasDeadline bool
		var cause error
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
			_, hasDeadline = ctx.Deadline()
			clk.Jump(-time.Hour) // a wall step back during the call
			<-ctx.Done()
			cause = context.Cause(ctx)
			return "", ctx.Err()
		})
		svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: abandon, Clock: clk}, inner)

		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err = svc.Call(context.Background(), "req")
		}()
		synctest.Wait()
		clk.Advance(100*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("returned before the deadline on the clock")
		default:
		}
		clk.Advance(time.Nanosecond)
		<-done
		synctest.Wait() // an abandoned inner call ends too

		assert.False(t, hasDeadline)
		assert.ErrorIs(t, cause, timeout.ErrTimeout)
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var te *timeout.Error
		require.ErrorAs(t, err, &te)
		assert.Equal(t, 100*time.Millisecond, te.After)
		if te.Err != nil { // Abandon mode may see the inner call return as the deadline fires
			assert.EqualError(t, err, "timeout: deadline of 100ms exceeded: context deadline exceeded")
		} else {
			assert.True(t, abandon)
		}
		assert.Zero(t, clk.Stats().Now)
		assert.Equal(t, 1, clk.Stats().AfterFunc)
	})
}

// With a Clock, an error before the deadline is the inner error, and the
// caller's own (system-time) deadline is still the caller's answer.
func TestLayer_CK4_ClockWhoseDeadline(t *testing.T) {
	inBothModes(t, func(t *testing.T, abandon bool) {
		clk := clock.NewFake(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), time.Hour)
		svc := wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: abandon, Clock: clk}, after(50*time.Millisecond, "", errBoom))
		_, took, err := timed(context.Background(), svc)
		assert.Equal(t, 50*time.Millisecond, took)
		assert.Same(t, errBoom, err)

		svc = wrapT(t, timeout.Config[string, string]{Timeout: 100 * time.Millisecond, Abandon: abandon, Clock: clk}, honest)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, took, err = timed(ctx, svc)
		assert.Equal(t, 50*time.Millisecond, took)
		assert.Equal(t, context.DeadlineExceeded, err, "the caller's own error, unwrapped")
	})
}

// Every nil argument and zero value fails with an error naming it, at
// construction or on each call; none panics.
func TestNilAndZeroValues(t *testing.T) {
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name: "zero Config",
			Build: func() (rampart.Service[string, string], error) {
				_, err := timeout.NewLayer(timeout.Config[string, string]{})
				return nil, err
			},
			Want: "timeout: Timeout must be > 0, got 0s",
		},
		{
			Name: "layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: time.Second})
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "timeout: Wrap: rampart: nil service",
			NilService: true,
		},
		{
			Name: "abandoning layer wraps nil service",
			Build: func() (rampart.Service[string, string], error) {
				l, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: time.Second, Abandon: true})
				require.NoError(t, err)
				return l.Wrap(nil), nil
			},
			Want:       "timeout: Wrap: rampart: nil service",
			NilService: true,
		},
	})
}

func TestTimeout_EV4_Fired(t *testing.T) {
	for _, abandon := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "abandon"}[abandon], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec observetest.Recorder
				slow := rampart.ServiceFunc[time.Duration, string](func(ctx context.Context, d time.Duration) (string, error) {
					select {
					case <-time.After(d):
						return "done", nil
					case <-ctx.Done():
						return "", context.Cause(ctx)
					}
				})
				svc, err := wrap.Service(slow, timeout.NewLayer, timeout.Config[time.Duration, string]{
					Timeout: time.Second, Abandon: abandon, Name: "db", Observer: &rec,
				})
				require.NoError(t, err)

				_, err = svc.Call(t.Context(), 500*time.Millisecond)
				require.NoError(t, err)
				require.Empty(t, rec.Events())

				_, err = svc.Call(t.Context(), 2*time.Second)
				require.True(t, errors.Is(err, timeout.ErrTimeout))
				require.Equal(t, []observe.Event{
					{Source: observe.Timeout, Name: "db", Kind: observe.TimeoutFired, Duration: time.Second},
				}, rec.Events())

				// The caller's own deadline is not the layer's timeout.
				rec.Reset()
				ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
				defer cancel()
				_, _ = svc.Call(ctx, 2*time.Second)
				require.Len(t, rec.Events(), 1) // the layer's deadline comes first
				ctx2, cancel2 := context.WithTimeout(t.Context(), 100*time.Millisecond)
				defer cancel2()
				_, _ = svc.Call(ctx2, 2*time.Second)
				require.Len(t, rec.Events(), 1)
			})
		})
	}
}

// Per-attempt timeouts under a deadline that travelled from the caller
// (Istio's deadline-propagation proposal, istio/api#34: each attempt gets
// min(time left, per-attempt timeout)): with a 1s per-attempt timeout
// inside a retry layer and 300ms left on the caller's deadline, the one
// attempt sees the caller's deadline, ends at 300ms as the caller's
// DeadlineExceeded (not a timeout of this layer, TO1), and is not retried
// (RT2); the budget pays for nothing. With 100ms per attempt and 1s left,
// each attempt gets its 100ms and times out as the layer's own, and the
// retry layer retries it.
func TestLayer_TO1_PerAttemptTimeoutUnderACallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var deadlines []time.Duration
		start := time.Now()
		inner := rampart.ServiceFunc[string, string](func(ctx context.Context, req string) (string, error) {
			d, _ := ctx.Deadline()
			deadlines = append(deadlines, d.Sub(start))
			return honest.Call(ctx, req)
		})
		stack := func(perAttempt time.Duration) (rampart.Service[string, string], *budgettest.Budget) {
			b := budgettest.New(budgettest.Unlimited)
			backoff, err := retry.NewConstant(0)
			require.NoError(t, err)
			svc, err := rampart.NewBuilder[string, string]().
				With(retry.NewLayer(retry.Config[string, string]{MaxAttempts: 3, Backoff: backoff, Budget: b})).
				With(timeout.NewLayer(timeout.Config[string, string]{Timeout: perAttempt})).
				Build(inner)
			require.NoError(t, err)
			return svc, b
		}

		svc, b := stack(time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		_, err := svc.Call(ctx, "req")
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, timeout.ErrTimeout)
		assert.Equal(t, []time.Duration{300 * time.Millisecond}, deadlines)
		assert.Equal(t, 300*time.Millisecond, time.Since(start))
		assert.Equal(t, budgettest.Counts{Deposits: 1}, b.Counts())

		deadlines, start = nil, time.Now()
		svc, b = stack(100 * time.Millisecond)
		ctx, cancel = context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = svc.Call(ctx, "req")
		assert.ErrorIs(t, err, timeout.ErrTimeout)
		assert.ErrorIs(t, err, retry.ErrMaxAttempts)
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{100 * ms, 200 * ms, 300 * ms}, deadlines)
		assert.Equal(t, budgettest.Counts{Deposits: 1, Granted: 2}, b.Counts())
	})
}

// TestTimeout_NZ1_NilPointerClockIsAnError: a Clock that is a nil pointer inside the interface is refused
// at construction, not dereferenced at the first reading mid-traffic.
func TestTimeout_NZ1_NilPointerClockIsAnError(t *testing.T) {
	_, err := timeout.NewLayer(timeout.Config[string, string]{Timeout: time.Second, Clock: (*clock.Fake)(nil)})
	assert.EqualError(t, err, "timeout: Clock must not be a nil func or pointer, got *clock.Fake(nil)")
}
