package concurrency

import "github.com/rampart-go/rampart/internal/mode"

// Mode says what a call does when its limiter has no slot for it now:
// [Wait] or [Refuse]. Package ratelimit's Mode is the same type, so one
// value configures both kinds of limit. Its String method returns "Wait",
// "Refuse", or "Mode(n)" for any other value.
type Mode = mode.Mode

const (
	// Wait makes the call wait for a slot, bounded by its context. Wait is
	// the zero Mode.
	Wait = mode.Wait
	// Refuse refuses the call at once with a [*LimitedError], taking no
	// slot.
	Refuse = mode.Refuse
)
