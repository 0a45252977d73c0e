package circuitbreaker_test

import (
	"context"
	"errors"
	"testing"

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
	classify := func(resp int, err error) circuitbreaker.Outcome {
		if err != nil || resp == 503 {
			return circuitbreaker.Failure
		}
		return circuitbreaker.Success
	}
	var next struct {
		resp int
		err  error
	}
	svc := circuitbreaker.NewClassifiedLayer[int, int](b, classify).Wrap(
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
