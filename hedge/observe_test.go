package hedge_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/hedge"
	"github.com/rampart-go/rampart/internal/budgettest"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

func TestHedge_EV5_SentAndWon(t *testing.T) {
	ev := func(kind observe.Kind, attempt int) observe.Event {
		e := observe.Event{Source: observe.Hedge, Name: "search", Kind: kind, Attempt: attempt}
		if kind == observe.HedgeSent {
			e.Duration = 10 * ms
		}
		return e
	}
	tests := []struct {
		name  string
		steps []step
		want  []observe.Event
	}{
		{name: "the original answers before the delay", steps: []step{{latency: 5 * ms}}},
		{name: "the first hedge wins", steps: []step{{latency: 100 * ms}, {latency: 5 * ms}}, want: []observe.Event{
			ev(observe.HedgeSent, 2), ev(observe.HedgeWon, 2),
		}},
		{name: "the original wins after two hedges", steps: []step{{latency: 25 * ms}, {latency: 100 * ms}, {latency: 100 * ms}}, want: []observe.Event{
			ev(observe.HedgeSent, 2), ev(observe.HedgeSent, 3), ev(observe.HedgeWon, 1),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec observetest.Recorder
				b := newBackend(tt.steps...)
				svc := newHedged(t, b, hedge.Config[string, string]{
					Hedgeable: always, Budget: budgettest.New(10), Delay: 10 * ms, MaxAttempts: 3, Name: "search", Observer: &rec,
				})
				_, _, err := call(svc, context.Background())
				require.NoError(t, err)
				require.Equal(t, tt.want, rec.Events())
			})
		})
	}
}
