// Package nilcheck runs the table tests that check how a package treats
// nil arguments and zero values: each fails with an error naming what is
// wrong, at construction or on every call, and none panics.
package nilcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
)

// Case is one nil argument or zero value.
type Case[Req, Resp any] struct {
	Name string
	// Build constructs the service. A non-nil error is the construction
	// error checked against Want; otherwise the service is called once and
	// the call's error is checked.
	Build func() (rampart.Service[Req, Resp], error)
	// Want is the exact error message.
	Want string
	// NilService means the error must match rampart.ErrNilService.
	NilService bool
}

// Run runs each case as a subtest, calling built services with req.
func Run[Req, Resp any](t *testing.T, req Req, cases []Case[Req, Resp]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			svc, err := tc.Build()
			if err == nil {
				require.NotNil(t, svc)
				_, err = svc.Call(t.Context(), req)
			}
			assert.EqualError(t, err, tc.Want)
			if tc.NilService {
				assert.ErrorIs(t, err, rampart.ErrNilService)
			}
		})
	}
}

// Call is one method called on a nil receiver or a zero value, and the
// exact result it must give.
type Call struct {
	Name string
	// Call makes the call and returns what it gave (several results as a
	// []any).
	Call func() any
	// Want is the exact result, compared with assert.Equal.
	Want any
}

// Calls runs each call as a subtest named by its Name and checks that it
// returns Want (so also that it does not panic). It calls t.Run, so it
// cannot run inside a synctest bubble: a call that needs virtual time
// gets its own subtest and bubble.
func Calls(t *testing.T, calls []Call) {
	t.Helper()
	for _, c := range calls {
		t.Run(c.Name, func(t *testing.T) { assert.Equal(t, c.Want, c.Call()) })
	}
}
