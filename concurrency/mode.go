package concurrency

import "strconv"

// Mode says what a call does when its limiter has no slot for it now.
type Mode int

const (
	// Wait makes the call wait for room, bounded by its context; a limiter
	// that knows the wait would end at or after the context's deadline
	// refuses at once instead (a rate limit knows; a concurrency Limiter
	// does not). Wait is the zero Mode.
	Wait Mode = iota
	// Reject refuses the call at once with a LimitedError, taking nothing
	// from the limiter.
	Reject
)

// String returns "Wait", "Reject", or "Mode(n)" for any other value.
func (m Mode) String() string {
	switch m {
	case Wait:
		return "Wait"
	case Reject:
		return "Reject"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}
