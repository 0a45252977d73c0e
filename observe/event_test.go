package observe_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

// failuresOnly is a Selector that wants a breaker's failures and no other
// kind.
type failuresOnly struct{ observetest.Recorder }

func (*failuresOnly) Wants(k observe.Kind) bool { return k == observe.Failure }

func TestWants_EV16_SelectorsSayPlainObserversWantAll(t *testing.T) {
	var sel failuresOnly
	var plain observetest.Recorder
	log, err := observe.NewLog(observe.LogConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)

	require.False(t, observe.Wants(nil, observe.Success))
	require.True(t, observe.Wants(&plain, observe.Success), "an Observer that is not a Selector wants every kind")
	require.True(t, observe.Wants(observe.Func(func(context.Context, observe.Event) {}), observe.Success))
	require.True(t, observe.Wants(&sel, observe.Failure))
	require.False(t, observe.Wants(&sel, observe.Success))
	require.False(t, observe.Wants(log, observe.Success), "a Log never writes a success")
	for _, k := range []observe.Kind{observe.Transition, observe.Failure, observe.Ignored, observe.Rejected, observe.Retrying, observe.Refused} {
		require.True(t, observe.Wants(log, k), k.String())
	}

	require.False(t, observe.Wants(observe.Join(log, &sel), observe.Success), "no part wants it")
	require.True(t, observe.Wants(observe.Join(log, &sel), observe.Failure))
	require.True(t, observe.Wants(observe.Join(log, &plain), observe.Success), "one part wants it")
	bound := observe.Bind(observe.Join(log, &sel), observe.Breaker, "db")
	require.False(t, observe.Wants(bound, observe.Success), "a joined observer, bound, still answers for its parts")
}
