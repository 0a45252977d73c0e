package main

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// roundTrips times every command the replicas' Redis clients send (a
// go-redis hook: it runs on the goroutine sending the command, which is
// rampartredis's background work, never a caller's), so that the output
// can say how fast Redis answered during the run.
type roundTrips struct {
	mu   sync.Mutex
	took []timedCommand
}

// timedCommand is one command (or pipeline): when it was sent and how long
// Redis took to answer.
type timedCommand struct {
	at, took time.Duration // at: since epoch
}

// epoch is when the recording started; commands are placed relative to it.
var epoch = time.Now()

func (r *roundTrips) note(start time.Time) {
	d := time.Since(start)
	r.mu.Lock()
	r.took = append(r.took, timedCommand{at: start.Sub(epoch), took: d})
	r.mu.Unlock()
}

// DialHook does not time dials on their own: a dial is not a round trip
// (a command that waited for a connection of the pool, or for a dial,
// counts that wait in its own time, as the sender saw it).
func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook {
	return next
}

// ProcessHook times one command.
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		r.note(start)
		return err
	}
}

// ProcessPipelineHook times one pipeline as one round trip.
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		r.note(start)
		return err
	}
}

// roundTripStats summarizes round trips, in milliseconds.
type roundTripStats struct {
	Commands int     `json:"commands"`
	MedianMS float64 `json:"median_ms"`
	P99MS    float64 `json:"p99_ms"`
	MaxMS    float64 `json:"max_ms"`
}

// stats summarizes the round trips of the commands sent within [from, to)
// (since epoch); to <= 0 means until the end.
func (r *roundTrips) stats(from, to time.Duration) roundTripStats {
	r.mu.Lock()
	var ds []time.Duration
	for _, c := range r.took {
		if c.at >= from && (to <= 0 || c.at < to) {
			ds = append(ds, c.took)
		}
	}
	r.mu.Unlock()
	if len(ds) == 0 {
		return roundTripStats{}
	}
	slices.Sort(ds)
	q := func(p float64) float64 {
		i := max(int(math.Ceil(p*float64(len(ds))))-1, 0) // nearest rank: the ⌈p·n⌉th
		return msOf(ds[i])
	}
	return roundTripStats{Commands: len(ds), MedianMS: q(0.5), P99MS: q(0.99), MaxMS: msOf(ds[len(ds)-1])}
}

func msOf(d time.Duration) float64 {
	return float64(d.Round(10*time.Microsecond)) / float64(time.Millisecond)
}

var _ redis.Hook = (*roundTrips)(nil)
