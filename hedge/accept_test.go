package hedge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/budgettest"
)

// refusing returns an Accept that refuses the responses of the attempts
// numbered in bad (the backend answers "req#k" to attempt k), as an HTTP
// client refuses a 503.
func rejecting(bad ...string) func(string, error) bool {
	return func(resp string, err error) bool {
		for _, k := range bad {
			if strings.HasSuffix(resp, "#"+k) {
				return false
			}
		}
		return err == nil
	}
}

// detaches records the responses passed to Config.Detach.
type detaches struct{ discards }

func (d *detaches) Detach(resp string, cancel context.CancelFunc) string {
	cancel()
	d.Discard(resp)
	return resp
}

func TestHedge_RejectedFastAnswerDoesNotBeatAcceptedSlowOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms}, step{latency: 5 * ms})
		var discarded discards
		var detached detaches
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
			Accept: rejecting("1"), Discard: discarded.Discard, Detach: detached.Detach,
		})

		resp, took, err := call(svc, context.Background())

		require.NoError(t, err)
		assert.Equal(t, "req#0", resp, "the slow accepted answer, not the fast rejected one")
		assert.Equal(t, 100*ms, took)
		assert.Equal(t, []string{"0s start 0", "10ms start 1", "15ms answer 1", "100ms answer 0"}, b.Log())
		assert.Equal(t, []string{"req#1"}, discarded.got())
		assert.Equal(t, []string{"req#0"}, detached.got())
	})
}

// When no outcome is accepted but some attempt returned a response with a
// nil error, the first such response is the answer, with a nil error; the
// others are discarded. Errors of other attempts are dropped with them.
func TestHedge_NothingAccepted_FirstRejectedResponseReturned(t *testing.T) {
	for _, tc := range []struct {
		name          string
		steps         []step
		accept        func(string, error) bool
		wantResp      string
		wantTook      time.Duration
		wantDiscarded []string
	}{
		{
			name:          "all rejected",
			steps:         []step{{latency: 30 * ms}, {latency: 5 * ms}, {latency: 5 * ms}},
			accept:        rejecting("0", "1", "2"),
			wantResp:      "req#1",
			wantTook:      30 * ms,
			wantDiscarded: []string{"req#2", "req#0"},
		},
		{
			name:          "one rejected, the others failed",
			steps:         []step{{latency: 30 * ms, err: errA}, {latency: 5 * ms, err: errB}, {latency: 5 * ms}},
			accept:        rejecting("2"),
			wantResp:      "req#2",
			wantTook:      30 * ms,
			wantDiscarded: []string{"req#1", "req#0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBackend(tc.steps...)
				var discarded discards
				var detached detaches
				svc := newHedged(t, b, hedge.Config[string, string]{
					Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms, MaxAttempts: 3,
					Accept: tc.accept, Discard: discarded.Discard, Detach: detached.Detach,
				})

				resp, took, err := call(svc, context.Background())

				require.NoError(t, err, "a response is never turned into an error")
				assert.Equal(t, tc.wantResp, resp)
				assert.Equal(t, tc.wantTook, took)
				assert.Equal(t, tc.wantDiscarded, discarded.got())
				assert.Equal(t, []string{tc.wantResp}, detached.got(), "the returned response keeps its context")
				assert.Equal(t, 3, b.Calls())
			})
		})
	}
}

func TestHedge_OnlyAttemptRejected_ReturnedAsItIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 5 * ms})
		var discarded discards
		var detached detaches
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
			Accept: rejecting("0"), Discard: discarded.Discard, Detach: detached.Detach,
		})

		resp, took, err := call(svc, context.Background())

		require.NoError(t, err)
		assert.Equal(t, "req#0", resp)
		assert.Equal(t, 5*ms, took, "a rejected answer is a failure: it is not hedged")
		assert.Equal(t, 1, b.Calls())
		assert.Empty(t, discarded.got())
		assert.Equal(t, []string{"req#0"}, detached.got())
	})
}

// Accept may take an error as the answer (a definitive "not found", say):
// it wins, cancels the others and comes back unchanged, without Detach.
func TestHedge_AcceptedErrorIsTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend(step{latency: 100 * ms}, step{latency: 5 * ms, err: errA})
		var detached detaches
		svc := newHedged(t, b, hedge.Config[string, string]{
			Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms,
			Accept: func(_ string, err error) bool { return err == nil || errors.Is(err, errA) },
			Detach: detached.Detach,
		})

		resp, took, err := call(svc, context.Background())

		assert.Same(t, errA, err)
		assert.Equal(t, "req#1", resp)
		assert.Equal(t, 15*ms, took)
		assert.Equal(t, []string{"0s start 0", "10ms start 1", "15ms answer 1", "15ms cancelled 0"}, b.Log())
		assert.Empty(t, detached.got())
	})
}
