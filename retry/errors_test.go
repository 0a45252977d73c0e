package retry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/retry"
)

// TestExhaustedError_RT5_MessageSaysEachThingOnce checks that an exhausted
// error's message names the package once, the reason in parentheses and
// then the last error, and that errors.Is still matches the reason and
// the last error.
func TestExhaustedError_RT5_MessageSaysEachThingOnce(t *testing.T) {
	errLast := errors.New("connection reset")
	tests := []struct {
		name   string
		err    *retry.ExhaustedError
		want   string
		reason error
	}{
		{name: "max attempts", err: &retry.ExhaustedError{Attempts: 3, Err: errLast, Reason: retry.ErrMaxAttempts},
			want: "retry: gave up after 3 attempts (max attempts reached): connection reset", reason: retry.ErrMaxAttempts},
		{name: "budget", err: &retry.ExhaustedError{Attempts: 1, Err: errLast, Reason: retry.ErrBudgetExhausted},
			want: "retry: gave up after 1 attempt (budget exhausted): connection reset", reason: retry.ErrBudgetExhausted},
		{name: "deadline", err: &retry.ExhaustedError{Attempts: 2, Err: errLast, Reason: retry.ErrDeadline},
			want: "retry: gave up after 2 attempts (next attempt would start after the deadline): connection reset", reason: retry.ErrDeadline},
		{name: "hint forever", err: &retry.ExhaustedError{Attempts: 2, Err: errLast, Reason: retry.ErrHintForever},
			want: "retry: gave up after 2 attempts (the server's hint says the wait never ends): connection reset", reason: retry.ErrHintForever},
		{name: "caller's context", err: &retry.ExhaustedError{Attempts: 1, Err: errLast, Reason: context.Canceled},
			want: "retry: gave up after 1 attempt (context canceled): connection reset", reason: context.Canceled},
		{name: "zero", err: &retry.ExhaustedError{},
			want: "retry: gave up after 0 attempts: <nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.EqualError(t, tt.err, tt.want)
			assert.ErrorIs(t, tt.err, retry.ErrExhausted)
			if tt.reason != nil {
				assert.ErrorIs(t, tt.err, tt.reason)
				assert.ErrorIs(t, tt.err, errLast)
			}
		})
	}
}

// TestErrors_NZ1_NilErrors calls every exported method of a nil
// *ExhaustedError and a nil *PermanentError, which a caller holds after an
// errors.As that found none.
func TestErrors_NZ1_NilErrors(t *testing.T) {
	var ex *retry.ExhaustedError
	var perm *retry.PermanentError
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "ExhaustedError.Error", Call: func() any { return ex.Error() }, Want: "<nil>"},
		{Name: "ExhaustedError.Unwrap", Call: func() any { return ex.Unwrap() }, Want: []error(nil)},
		{Name: "ExhaustedError.Is", Call: func() any { return ex.Is(retry.ErrExhausted) }, Want: true},
		{Name: "ExhaustedError.Timeout", Call: func() any { return ex.Timeout() }, Want: false},
		{Name: "PermanentError.Error", Call: func() any { return perm.Error() }, Want: "<nil>"},
		{Name: "PermanentError.Unwrap", Call: func() any { return perm.Unwrap() }, Want: nil},
		{Name: "PermanentError.Timeout", Call: func() any { return perm.Timeout() }, Want: false},
	})
}
