package rampartredis

import (
	"context"

	"github.com/rampart-go/rampart/inspect"
)

// Record reads the shared record from Redis now, for the live page of
// package inspect (a Shared is an [inspect.Fleet]: pass it to
// inspect.Registry.AddFleet with its breaker), so that an operator sees
// whether this replica agrees with the fleet. It runs one read script,
// bounded by ctx and Config.Timeout, counted in Stats.Commands (and
// Stats.Failures when it fails), and changes nothing: the record is not
// applied to the breaker. An open record whose cool-down has ended (a
// probe round is being decided) reads as "half-open". It returns the
// client's error when Redis does not answer, and an error for a Shared
// that Share did not return. Safe for concurrent use, also after Close
// (it needs the client open).
func (s *Shared) Record(ctx context.Context) (inspect.FleetRecord, error) {
	if s == nil || s.br == nil {
		return inspect.FleetRecord{}, errNotShared
	}
	rec, _, _, err := s.runContext(ctx, readScript)
	if err != nil {
		return inspect.FleetRecord{}, err
	}
	fr := inspect.FleetRecord{
		Key: s.cfg.Key, State: "closed", Cause: rec.cause, By: rec.by,
		Generation: rec.gen, Replica: s.cfg.ID,
	}
	switch {
	case !rec.open:
	case rec.rem < 0:
		fr.State, fr.RetryAfterSeconds = "open", -1
	case rec.rem == 0:
		fr.State = "half-open"
	default:
		fr.State, fr.RetryAfterSeconds = "open", rec.rem.Seconds()
	}
	return fr, nil
}

var _ inspect.Fleet = (*Shared)(nil)
