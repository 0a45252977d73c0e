package rampart

import "strconv"

// Outcome is how a finished call counts for the health of the dependency
// it called. A circuit breaker's classifier returns one, the breaker
// counts it, and a recorded trace (package record) writes it; the events
// of package observe are named the same. The zero Outcome is Success.
type Outcome uint8

const (
	// Success is a call that shows the dependency is healthy.
	Success Outcome = iota
	// Failure is a call that shows the dependency is unhealthy.
	Failure
	// Ignored is a call that says nothing about the dependency (one the
	// caller cancelled, say): not counted.
	Ignored
)

// String returns "success", "failure", "ignored", or "Outcome(n)" for any
// other value.
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}
