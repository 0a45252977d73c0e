package circuitbreaker

// The fast paths of the built-in trackers, for the external tests.

// Timing is the unexported timing, for the tests.
type Timing = timing

const (
	TimingNone    = timingNone
	TimingNow     = timingNow
	TimingLatency = timingLatency
)

// TimingOf is timingOf, for the tests.
func TimingOf(t Tracker) Timing { return timingOf(t) }

// WantsSuccess reports whether t wants a Closed success under the lock.
func WantsSuccess(t Tracker) bool { return wanterOf(t).wantsSuccess() }

// CountsOf is countsOf, for the tests.
func CountsOf(t Tracker) Counts { return countsOf(t) }
