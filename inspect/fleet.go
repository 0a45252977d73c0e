package inspect

import (
	"context"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// DefaultFleetTimeout bounds the read of each fleet's record for one page
// when the request for it has no earlier deadline.
const DefaultFleetTimeout = time.Second

// Fleet is a breaker's state shared by the replicas of a fleet (module
// rampartredis's *Shared implements it). Record reads the shared record
// when asked, from where the fleet keeps it: the page calls it once per
// view, never on a call's path. It must honour ctx's deadline, return an
// error when it cannot read the record, and be safe for concurrent use.
type Fleet interface {
	Record(ctx context.Context) (FleetRecord, error)
}

// FleetRecord is a fleet's shared record of one breaker, as Fleet.Record
// reads it.
type FleetRecord struct {
	// Key names the record (the key every replica shares).
	Key string `json:"key"`
	// State is the fleet's state, as circuitbreaker.State prints it
	// ("closed", "open", "half-open"); "closed" for a record that does not
	// exist yet.
	State string `json:"state"`
	// RetryAfterSeconds is the rest of the fleet's cool-down, in seconds,
	// by the store's clock; -1 when it has no end; zero when not open.
	RetryAfterSeconds float64 `json:"retry_after_seconds,omitempty"`
	// Cause is the text of the failure that opened the fleet.
	Cause string `json:"cause,omitempty"`
	// By is the replica that wrote the record last.
	By string `json:"by,omitempty"`
	// Generation counts the record's changes.
	Generation int64 `json:"generation"`
	// Replica is this replica's ID in the fleet.
	Replica string `json:"replica,omitempty"`
}

// FleetStatus is one shared breaker's row: the fleet's record next to this
// replica's view of it.
type FleetStatus struct {
	// Record is the fleet's record; zero when it could not be read.
	Record FleetRecord `json:"record"`
	// Error says why the record could not be read; empty when it was.
	Error string `json:"error,omitempty"`
	// Local is this replica's breaker.
	Local BreakerStatus `json:"local"`
	// Agree is false when one of the record and this replica's breaker
	// refuses calls (open or forced open) and the other is closed (or
	// forced closed): the replica disagrees with the fleet. A half-open
	// side agrees with either (a probe round is being decided), and so
	// does a record that could not be read.
	Agree bool `json:"agree"`
}

// AddFleet shows the shared record f reads next to b, this replica's
// breaker whose state f shares, and returns the function that removes it.
// Adding b again replaces its fleet, in place. A nil b or f is ignored.
// Safe for concurrent use.
func (r *Registry) AddFleet(b *circuitbreaker.Breaker, f Fleet) (remove func()) {
	if b == nil || f == nil || isNil(f) {
		return noop
	}
	return r.add(fleetKey{b}, &entry{kind: kindFleet, status: func(ctx context.Context, r *Registry, s *Status) {
		fs := FleetStatus{Local: r.breakerStatus(b.State(), ""), Agree: true}
		rec, err := f.Record(ctx)
		if err != nil {
			fs.Error = err.Error()
		} else {
			fs.Record = rec
			fs.Agree = agree(rec.State, fs.Local.State)
		}
		s.Fleets = append(s.Fleets, fs)
	}})
}

// agree reports whether a fleet's state and a replica's do not contradict
// each other (see FleetStatus.Agree).
func agree(fleet, local string) bool {
	refusing := func(s string) bool { return s == "open" || s == "forced-open" }
	admitting := func(s string) bool { return s == "closed" || s == "forced-closed" }
	return !(refusing(fleet) && admitting(local) || admitting(fleet) && refusing(local))
}

// fleetKey is the registration key of a fleet: its breaker (a Fleet may be
// of a type that is not comparable).
type fleetKey struct{ b *circuitbreaker.Breaker }
