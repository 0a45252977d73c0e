package observe

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// The entries of layers that come and go do not pile up: once they double,
// those a fresh entry would replace are dropped, and an entry that holds a
// suppressed count is kept.
func TestLog_EV14_BucketsOfIdleNamesAreDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := NewLog(LogConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})), Burst: 1})
		require.NoError(t, err)
		ctx := context.Background()
		refused := func(name string) Event {
			return Event{Source: Concurrency, Name: name, Kind: Refused}
		}
		l.Observe(ctx, refused("busy"))
		l.Observe(ctx, refused("busy")) // suppressed: its bucket holds a count
		for i := range LogPruneAt - 1 {
			l.Observe(ctx, refused("key/"+strconv.Itoa(i)))
		}
		require.Len(t, l.buckets, LogPruneAt)

		time.Sleep(DefaultLogEvery) // every bucket fills up again
		l.Observe(ctx, refused("new"))
		require.Len(t, l.buckets, 2, "the bucket with a suppressed count and the new one")
		require.Equal(t, 1, l.buckets[logKey{source: Concurrency, kind: Refused, name: "busy"}].suppressed)
		require.Equal(t, LogPruneAt, l.pruneAt, "the next prune comes at the floor")
	})
}
