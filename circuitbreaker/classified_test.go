package circuitbreaker_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// IsFailure has the last word on errors in a classified layer too, and is
// never asked about a response the classifier judged a failure.
func TestClassifiedLayer_CB8_IsFailureOverrulesErrors(t *testing.T) {
	notFound := errors.New("not found")
	var asked []error
	b, err := circuitbreaker.New(circuitbreaker.Config{
		Policy: circuitbreaker.Consecutive{Failures: 2},
		IsFailure: func(err error) bool {
			asked = append(asked, err)
			return !errors.Is(err, notFound)
		},
	})
	require.NoError(t, err)
	// The response 503 is a failure; any error is one too.
	classify := func(resp int, err error) rampart.Outcome {
		if err != nil || resp == 503 {
			return rampart.Failure
		}
		return rampart.Success
	}
	var next struct {
		resp int
		err  error
	}
	svc := circuitbreaker.NewLayer[int, int](b, classify).Wrap(
		rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return next.resp, next.err }))

	next.err = notFound
	for range 3 {
		_, err := svc.Call(context.Background(), 0)
		require.ErrorIs(t, err, notFound)
	}
	assert.Equal(t, circuitbreaker.Closed, b.State().State)
	assert.Equal(t, []error{notFound, notFound, notFound}, asked)

	next.err, next.resp = nil, 503
	for range 2 {
		_, _ = svc.Call(context.Background(), 0)
	}
	assert.Len(t, asked, 3, "IsFailure is not asked about a nil error")
	assert.Equal(t, circuitbreaker.Open, b.State().State)
}

func TestClassifiedLayer_CB2_BadResponseIsTheCause(t *testing.T) {
	b, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}})
	require.NoError(t, err)
	svc := circuitbreaker.NewLayer[int, int](b, func(resp int, err error) rampart.Outcome {
		if resp == 503 {
			return rampart.Failure
		}
		return rampart.Success
	}).Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 503, nil }))

	got, err := svc.Call(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, 503, got)
	_, err = svc.Call(context.Background(), 0)
	var oe *circuitbreaker.OpenError
	require.ErrorAs(t, err, &oe)
	assert.Same(t, circuitbreaker.ErrBadResponse, oe.Cause)
}

func TestLayer_NilBreakerFailsEachCallWithoutPanic(t *testing.T) {
	var called bool
	svc := circuitbreaker.NewLayer[int, int](nil, nil).Wrap(
		rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { called = true; return 1, nil }))
	_, err := svc.Call(context.Background(), 0)
	assert.EqualError(t, err, "circuitbreaker: layer built over a nil *Breaker (build one with circuitbreaker.New)")
	assert.False(t, called)
}

func TestOpenError_MessageSaysWhy(t *testing.T) {
	assert.Equal(t, "circuitbreaker: open (half-open, every probe slot taken)", (&circuitbreaker.OpenError{}).Error())
	synctest.Test(t, func(t *testing.T) {
		b := newBreaker(t, circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}, CoolDown: 2 * time.Second})
		fail(t, b, 1, errors.New("boom"))
		assert.Equal(t, "circuitbreaker: open (retry after 2s): tripped by: boom", openErr(t, b).Error())
		time.Sleep(time.Nanosecond)
		assert.Equal(t, "circuitbreaker: open (retry after 2s): tripped by: boom", openErr(t, b).Error(), "rounded up to a millisecond")
		time.Sleep(time.Millisecond)
		assert.Equal(t, "circuitbreaker: open (retry after 1.999s): tripped by: boom", openErr(t, b).Error())
	})
	sw := &circuitbreaker.Switch{}
	b := newBreaker(t, circuitbreaker.Config{Switch: sw})
	sw.ForceOpen(nil)
	assert.Equal(t, "circuitbreaker: forced open (until released)", openErr(t, b).Error())
}

func TestNew_CB13_NilPointerPoliciesAreErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy circuitbreaker.Policy
		want   string
	}{
		{name: "Config.Policy", policy: (*circuitbreaker.FailureRate)(nil),
			want: "circuitbreaker: Config.Policy is a nil *circuitbreaker.FailureRate"},
		{name: "SuccessRate.Trip", policy: circuitbreaker.SuccessRate{Trip: (*circuitbreaker.Consecutive)(nil)},
			want: "circuitbreaker: SuccessRate.Trip is a nil *circuitbreaker.Consecutive (SuccessRate.Trip)"},
		{name: "Any", policy: circuitbreaker.Any(circuitbreaker.Consecutive{}, (*circuitbreaker.SlowCalls)(nil)),
			want: "circuitbreaker: Any policy 1 is a nil *circuitbreaker.SlowCalls (Any policy 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := circuitbreaker.New(circuitbreaker.Config{Policy: tc.policy})
			assert.EqualError(t, err, tc.want)
		})
	}
}
