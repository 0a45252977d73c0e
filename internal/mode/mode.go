// Package mode holds the Mode that packages concurrency and ratelimit
// share (each declares it as an alias), so one value configures both
// kinds of limit and neither package imports the other.
package mode

import "strconv"

// Mode says what a call does when its limiter has no room for it now.
type Mode int

const (
	// Wait makes the call wait for room, bounded by its context. It is the
	// zero Mode.
	Wait Mode = iota
	// Refuse refuses the call at once, taking nothing from the limiter.
	Refuse
)

// String returns "Wait", "Refuse", or "Mode(n)" for any other value.
func (m Mode) String() string {
	switch m {
	case Wait:
		return "Wait"
	case Refuse:
		return "Refuse"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}
