package loadshed

import (
	"context"

	"github.com/rampart-go/rampart"
)

// CriticalReadiness is a [Readiness] that tells criticalities apart: it
// reports whether a call with ctx's [rampart.Criticality] would be served
// now. The limiters of package concurrency implement it, keeping the last
// quarter of their slots from sheddable calls and a reserve beyond the
// limit for critical ones.
//
// The layer of [NewLayer] given a CriticalReadiness refuses a call when
// ReadyFor(ctx) is false. Given a Readiness that does not tell them
// apart, it refuses sheddable and default calls when Ready is false and
// lets critical calls through to the resource it guards, which then
// decides: so sheddable work is refused first and critical work last.
// Either way a call whose context carries no criticality is judged by
// readiness alone, as without criticality, and costs no more.
type CriticalReadiness interface {
	Readiness
	// ReadyFor reports whether a call with ctx's criticality would be
	// served now. It must be safe for concurrent use and cheap.
	ReadyFor(ctx context.Context) bool
}

// admits reports whether the layer lets a call with ctx through.
func (s *shed[Req, Resp]) admits(ctx context.Context) bool {
	if s.crit != nil {
		return s.crit.ReadyFor(ctx)
	}
	return s.ready.Ready() || rampart.CriticalityOf(ctx) == rampart.Critical
}
