package retry

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rampart-go/rampart/internal/nilvalue"
	"github.com/rampart-go/rampart/internal/tuned"
	"github.com/rampart-go/rampart/observe"
)

// Settings are the part of a retry layer's [Config] that can change while
// the layer runs, through a [Tuner]: how many attempts a call makes and
// how long it waits between them. Each field means what the Config field
// of the same name means, zero values and defaults included.
type Settings struct {
	// MaxAttempts bounds the calls per request, the first included.
	MaxAttempts int
	// Backoff gives the delay before each retry.
	Backoff Backoff
}

// Tuner holds the [Settings] of the retry layers built with it
// ([Config.Tuner]) and changes them while calls flow. A call reads them
// once, when its first attempt wants a retry, and keeps them for the rest
// of its loop: a call already retrying finishes with the settings it
// started with, and a call whose first attempt fails after [Tuner.Tune]
// uses the new ones. A call that succeeds at once never reads them. A
// Tuner is safe for concurrent use; make one with [NewTuner]. The zero
// Tuner holds the defaults, and so, for Settings, does a nil *Tuner,
// whose Tune is an error.
type Tuner struct {
	cur atomic.Pointer[schedule]

	// tuning orders the changes: each is stored and told before the
	// next, so the last event told is of the settings held.
	tuning sync.Mutex

	// watchers are the Observers of the layers built with the Tuner,
	// told of each change. A Tuner keeps them for its lifetime: share one
	// among layers that live as long as it.
	watchers tuned.Watchers
}

// schedule is a validated Settings with its defaults filled in.
type schedule struct {
	maxAttempts int
	backoff     Backoff
}

// defaultSchedule is the zero Settings' schedule.
var defaultSchedule = &schedule{maxAttempts: DefaultMaxAttempts, backoff: defaultBackoff}

// NewTuner returns a Tuner holding s, or the error [NewLayer] would return
// for the same fields.
func NewTuner(s Settings) (*Tuner, error) {
	sc, err := s.schedule()
	if err != nil {
		return nil, err
	}
	t := &Tuner{}
	t.cur.Store(sc)
	return t, nil
}

// schedule validates s and fills its defaults. Errors name the field.
func (s Settings) schedule() (*schedule, error) {
	sc := &schedule{maxAttempts: s.MaxAttempts, backoff: s.Backoff}
	switch {
	case sc.maxAttempts < 0 || sc.maxAttempts > MaxAttemptsLimit:
		return nil, fmt.Errorf("retry: MaxAttempts must be 0 (the default, %d) or between 1 and %d, got %d", DefaultMaxAttempts, MaxAttemptsLimit, sc.maxAttempts)
	case sc.maxAttempts == 0:
		sc.maxAttempts = DefaultMaxAttempts
	}
	switch {
	case sc.backoff == nil:
		sc.backoff = defaultBackoff
	case nilvalue.Is(sc.backoff):
		return nil, fmt.Errorf("retry: Backoff must not be a nil func or pointer, got %T(nil)", sc.backoff)
	}
	return sc, nil
}

// Tune replaces t's settings with s, or returns the error [NewLayer] would
// return for the same fields (or one saying that t is nil), changing
// nothing. Each layer built with t
// that has an Observer is told with an event of kind [observe.Tuned]
// (Source [observe.Retry], the layer's Name, Attempt the new MaxAttempts).
// Concurrent changes are told in the order they take effect, each before
// the next is made, so an Observer must not call Tune from the event.
// Safe for concurrent use, with calls in flight.
func (t *Tuner) Tune(s Settings) error {
	if t == nil {
		return errors.New("retry: Tune of a nil *Tuner")
	}
	sc, err := s.schedule()
	if err != nil {
		return err
	}
	t.tuning.Lock()
	defer t.tuning.Unlock()
	t.cur.Store(sc)
	t.watchers.Tell(observe.Event{Source: observe.Retry, Attempt: sc.maxAttempts})
	return nil
}

// Settings returns the settings t holds, defaults filled in: for a nil
// Tuner, as for the zero one, the defaults. Safe for concurrent use.
func (t *Tuner) Settings() Settings {
	sc := defaultSchedule
	if t != nil {
		sc = t.schedule()
	}
	return Settings{MaxAttempts: sc.maxAttempts, Backoff: sc.backoff}
}

// schedule returns the current schedule.
func (t *Tuner) schedule() *schedule {
	if sc := t.cur.Load(); sc != nil {
		return sc
	}
	return defaultSchedule
}
