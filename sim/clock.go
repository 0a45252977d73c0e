package sim

import (
	"container/heap"
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/clock"
)

// scheduler is the virtual clock of a replay, a discrete-event scheduler:
// time stands still while a participant runs and jumps to the next event
// when none does. It implements clock.Clock and clock.Sleeper.
//
// Participants are the goroutines the scheduler starts, one per recorded
// call. Exactly one of them runs at a time: the scheduler starts or wakes
// one, then waits until it blocks in Sleep or returns, and only then takes
// the next event. So every replay of a trace is the same, and layers see
// their calls one at a time, in an order fixed by the trace and the
// timers. A participant that blocked on anything but the clock (a
// concurrency limiter's queue, a channel of its own) would stall the
// replay; the layers the simulator builds do not.
//
// Timer functions run on the scheduler's goroutine, one at a time, in the
// order of their due times (and of their creation for equal times); they
// must not block. This differs from time.AfterFunc, which runs each on a
// goroutine of its own; the layers' timer functions only take a lock and
// change state or cancel a context.
type scheduler struct {
	origin time.Time // wall reading at virtual time 0

	mu      sync.Mutex
	now     time.Duration // guarded by mu
	seq     uint64        // guarded by mu: creation order of timers
	timers  timerHeap     // guarded by mu
	running int           // guarded by mu: participants not blocked (0 or 1)
	// sleepers are the participants blocked in Sleep with a context that
	// can be cancelled; the scheduler wakes one whose context is done
	// before taking the next event. guarded by mu
	sleepers []*sleeper

	idle chan struct{} // a participant blocked or returned
	// free are the goroutines that have run a participant and wait for
	// the next: a goroutine is reused, its stack already grown. guarded
	// by mu
	free []chan func()

	// ended is the first participant's panic or runtime.Goexit, for
	// Replay to raise on its caller's goroutine once the calls in flight
	// have ended.
	ended atomic.Pointer[ending]
}

// ending is how a participant ended other than by returning: a panic
// (p), or runtime.Goexit (p nil).
type ending struct {
	p *rampart.PanicError
}

func newScheduler(origin time.Time) *scheduler {
	return &scheduler{origin: origin, idle: make(chan struct{}, 1)}
}

// vtimer is a pending event: a timer function, or the end of a Sleep.
type vtimer struct {
	s     *scheduler
	when  time.Duration
	seq   uint64
	index int // in s.timers; -1 once fired or stopped
	f     func()
	wake  *sleeper
}

// sleeper is a participant blocked in Sleep, with the event that ends
// its sleep.
type sleeper struct {
	timer    vtimer
	ctx      context.Context
	ch       chan struct{}
	canceled bool // woken because ctx was done
}

// Now returns the wall reading: the trace's first start plus the virtual
// time elapsed.
func (s *scheduler) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.origin.Add(s.now)
}

// Monotonic returns the virtual time elapsed since the trace's first
// start.
func (s *scheduler) Monotonic() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// AfterFunc schedules f to run on the scheduler's goroutine once d has
// passed.
func (s *scheduler) AfterFunc(d time.Duration, f func()) clock.Timer {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &vtimer{f: f}
	s.push(t, d)
	return t
}

// push schedules t d from now. Called with mu held.
func (s *scheduler) push(t *vtimer, d time.Duration) {
	s.seq++
	t.s, t.when, t.seq = s, s.now+max(d, 0), s.seq
	heap.Push(&s.timers, t)
}

// Stop removes the timer if it has not fired.
func (t *vtimer) Stop() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.s.timers, t.index)
	return true
}

// Sleep blocks the calling participant until d has passed on the virtual
// clock or ctx is done.
func (s *scheduler) Sleep(ctx context.Context, d time.Duration) error {
	w := &sleeper{ctx: ctx, ch: make(chan struct{})}
	s.mu.Lock()
	if s.running != 1 {
		s.mu.Unlock()
		panic(fmt.Sprintf("sim: a goroutine the simulator did not start waited on its clock (%d running); a layer that starts goroutines (timeout's Abandon, hedging) cannot be replayed", s.running))
	}
	w.timer.wake = w
	s.push(&w.timer, d)
	if ctx.Done() != nil {
		s.sleepers = append(s.sleepers, w)
	}
	s.block()
	s.mu.Unlock()
	<-w.ch
	if w.canceled {
		return ctx.Err()
	}
	return nil
}

// block marks the running participant blocked and tells the scheduler.
// Called with mu held.
func (s *scheduler) block() {
	s.running--
	s.idle <- struct{}{}
}

// start runs f as a new participant at the current time, on a free
// goroutine or a new one, and returns once it has blocked or returned.
func (s *scheduler) start(f func()) {
	s.mu.Lock()
	s.running++
	var jobs chan func()
	if n := len(s.free); n > 0 {
		jobs = s.free[n-1]
		s.free = s.free[:n-1]
	}
	s.mu.Unlock()
	if jobs == nil {
		jobs = make(chan func(), 1)
		go s.work(jobs)
	}
	jobs <- f
	<-s.idle
}

// work runs the participants sent on jobs, one after the other, until
// jobs is closed.
func (s *scheduler) work(jobs chan func()) {
	for f := range jobs {
		if !s.participate(f) {
			return // runtime.Goexit: this goroutine is ending
		}
		s.mu.Lock()
		s.free = append(s.free, jobs)
		s.block()
		s.mu.Unlock()
	}
}

// participate runs f, the call under replay, and reports whether its
// goroutine goes on. The stack under replay holds the user's code (a
// policy, IsFailure, an Observer): a panic there is recovered and kept
// for Replay to raise on its caller's goroutine, since on this one it
// would end the program. A runtime.Goexit is kept too, and the
// participant counted as blocked, so that the replay does not wait for
// it forever; the goroutine then ends.
func (s *scheduler) participate(f func()) (goesOn bool) {
	normal := false
	defer func() {
		if normal {
			return
		}
		e := &ending{}
		if r := recover(); r != nil {
			e.p = &rampart.PanicError{Value: r, Stack: debug.Stack()}
			goesOn = true
		}
		s.ended.CompareAndSwap(nil, e)
		if !goesOn {
			s.mu.Lock()
			s.block()
			s.mu.Unlock()
		}
	}()
	f()
	normal = true
	return true
}

// close ends the free goroutines. Called once every participant has
// returned.
func (s *scheduler) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, jobs := range s.free {
		close(jobs)
	}
	s.free = nil
}

// wakeCanceled wakes one sleeper whose context is done, waits until it
// blocks or returns, and reports whether there was one.
func (s *scheduler) wakeCanceled() bool {
	s.mu.Lock()
	for i, w := range s.sleepers {
		if w.ctx.Err() == nil {
			continue
		}
		s.sleepers = append(s.sleepers[:i], s.sleepers[i+1:]...)
		if w.timer.index >= 0 {
			heap.Remove(&s.timers, w.timer.index)
		}
		w.canceled = true
		s.resume(w)
		return true
	}
	s.mu.Unlock()
	return false
}

// resume wakes w, unlocks mu, and waits until w blocks again or returns.
// Called with mu held.
func (s *scheduler) resume(w *sleeper) {
	s.running++
	s.mu.Unlock()
	close(w.ch)
	<-s.idle
}

// next reports the due time of the earliest event.
func (s *scheduler) next() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.timers) == 0 {
		return 0, false
	}
	return s.timers[0].when, true
}

// advance moves the clock to at, which must not be earlier than now.
func (s *scheduler) advance(at time.Duration) {
	s.mu.Lock()
	s.now = max(s.now, at)
	s.mu.Unlock()
}

// fire takes the earliest event, moves the clock to its time and runs it:
// wakes its sleeper and waits until that blocks or returns, or calls its
// function on this goroutine.
func (s *scheduler) fire() {
	s.mu.Lock()
	t := heap.Pop(&s.timers).(*vtimer)
	s.now = max(s.now, t.when)
	if w := t.wake; w != nil {
		if w.ctx.Done() != nil {
			for i, x := range s.sleepers {
				if x == w {
					s.sleepers = append(s.sleepers[:i], s.sleepers[i+1:]...)
					break
				}
			}
		}
		s.resume(w)
		return
	}
	s.mu.Unlock()
	t.f()
}

// timerHeap orders events by due time, then creation.
type timerHeap []*vtimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].when != h[j].when {
		return h[i].when < h[j].when
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*vtimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
