package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilvalue"
)

// Defaults and limits of [Config].
const (
	// DefaultBuffer is how many entries a Recorder holds between writes.
	DefaultBuffer = 4096
	// MaxBuffer is the largest Config.Buffer.
	MaxBuffer = 1 << 20
	// DefaultFlushInterval is how often a Recorder writes what it holds.
	DefaultFlushInterval = time.Second
)

// Config configures a [Recorder]. Every zero field takes its documented
// default.
type Config struct {
	// Buffer is how many entries the Recorder holds until its writer
	// goroutine writes them: the bound on its memory. A call that finds
	// the buffer full is not recorded and counts as dropped
	// ([Recorder.Dropped]); the writer is woken when the buffer is half
	// full. Zero means [DefaultBuffer]; otherwise it must be between 1
	// and [MaxBuffer].
	Buffer int
	// Sample records one call in Sample, every Sample-th one (by a
	// counter, so the choice costs one atomic add). Zero or 1 records
	// every call; negative is an error.
	Sample int
	// FlushInterval is how often the writer goroutine writes the entries
	// held. Zero means [DefaultFlushInterval]; negative is an error.
	FlushInterval time.Duration
	// Class names the kind of a call's error in its entry. It must be
	// safe for concurrent use and should return constant strings (it
	// runs on every recorded failure). Nil means [DefaultClass].
	Class func(err error) string
}

// DefaultClass names an error's kind: "timeout" for an error matching
// [context.DeadlineExceeded] (the timeout layer's errors do),
// "canceled" for [context.Canceled], and "error" for anything else.
func DefaultClass(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}

// Recorder writes entries to an [io.Writer] as JSON Lines, off the
// callers' path: a call through its layer ([NewLayer]) stores its entry
// in a bounded buffer, and a goroutine of the Recorder writes the buffer
// every FlushInterval, or sooner when it is half full, each batch in order
// of start. Entries of different batches can be out of order by up to the
// longest call's duration plus FlushInterval (a long call is written when
// it returns, after shorter calls that started later), and by any step of
// the wall clock; package sim's reader puts them back in order within its
// reorder window (a minute by default). It is cheap enough
// to leave on: recording a call reads the clock twice, takes a mutex and
// copies the entry, and allocates nothing (bench/README.md has the
// figures); when the writer cannot keep up, calls are dropped and
// counted, never delayed.
//
// A Recorder is safe for concurrent use. [Recorder.Close] writes what is
// left and stops its goroutine. Make one with [New]: a zero Recorder has
// no writer, and a layer over one fails every call with an error saying
// so. A nil *Recorder is the same: Dropped is 0 and Close an error.
type Recorder struct {
	w      io.Writer
	sample uint64
	class  func(error) string
	every  time.Duration

	n       atomic.Uint64 // calls seen, for sampling
	dropped atomic.Uint64

	mu     sync.Mutex
	buf    []Entry // guarded by mu: entries not yet written
	closed bool    // guarded by mu

	wake chan struct{} // the buffer is half full
	stop chan struct{} // closed by Close
	done chan struct{} // closed by the writer goroutine as it ends
	err  error         // the first write error; read after done
}

// New returns a Recorder writing to w, and starts its writer goroutine.
// It returns an error naming the field when cfg has one out of range, or
// when w is nil or a nil pointer (a nil *os.File or *bytes.Buffer, whose
// Write would panic at the first flush).
func New(w io.Writer, cfg Config) (*Recorder, error) {
	switch {
	case w == nil:
		return nil, errors.New("record: w must not be nil")
	case nilvalue.Is(w):
		return nil, fmt.Errorf("record: w must not be nil, got a nil %T", w)
	case cfg.Buffer < 0 || cfg.Buffer > MaxBuffer:
		return nil, fmt.Errorf("record: Buffer must be 0 (the default, %d) or between 1 and %d, got %d", DefaultBuffer, MaxBuffer, cfg.Buffer)
	case cfg.Sample < 0:
		return nil, fmt.Errorf("record: Sample must be 0 or 1 (every call) or more (one call in Sample), got %d", cfg.Sample)
	case cfg.FlushInterval < 0:
		return nil, fmt.Errorf("record: FlushInterval must be 0 (the default, %v) or positive, got %v", DefaultFlushInterval, cfg.FlushInterval)
	}
	r := &Recorder{
		w:      w,
		sample: uint64(max(cfg.Sample, 1)),
		class:  cfg.Class,
		every:  cfg.FlushInterval,
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	if r.class == nil {
		r.class = DefaultClass
	}
	if r.every == 0 {
		r.every = DefaultFlushInterval
	}
	n := cfg.Buffer
	if n == 0 {
		n = DefaultBuffer
	}
	r.buf = make([]Entry, 0, n)
	go r.write(make([]Entry, 0, n))
	return r, nil
}

// Dropped returns how many sampled calls were not recorded because the
// buffer was full (or the Recorder closed).
func (r *Recorder) Dropped() uint64 {
	if r == nil {
		return 0
	}
	return r.dropped.Load()
}

// Close writes the entries held, stops the writer goroutine, and returns
// the first error the writer returned, if any: a panic in the writer's
// Write is such an error, a [*rampart.PanicError], and nothing is written
// after it. Calls recorded after Close
// are dropped. Close is safe to call more than once.
//
// A zero Recorder (not made by New) has nothing to close: Close returns
// an error saying so, and for a nil one an error naming the nil *Recorder.
func (r *Recorder) Close() error {
	if r == nil {
		return errNilRecorderClose
	}
	if r.done == nil {
		return errZeroRecorder
	}
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.stop)
	}
	r.mu.Unlock()
	<-r.done
	return r.err
}

// errNilRecorderClose is what Close of a nil *Recorder returns.
var errNilRecorderClose = errors.New("record: Close of a nil *Recorder")

// sampled reports whether the next call is to be recorded.
func (r *Recorder) sampled() bool {
	return r.sample == 1 || r.n.Add(1)%r.sample == 0
}

// add stores e, or drops it when the buffer is full.
func (r *Recorder) add(e *Entry) {
	r.mu.Lock()
	if r.closed || len(r.buf) == cap(r.buf) {
		r.mu.Unlock()
		r.dropped.Add(1)
		return
	}
	r.buf = append(r.buf, *e)
	half := len(r.buf) == cap(r.buf)/2+1
	r.mu.Unlock()
	if half {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// write is the writer goroutine: it swaps the buffer for spare and writes
// the entries taken, at each tick, wake-up and at Close.
func (r *Recorder) write(spare []Entry) {
	defer close(r.done)
	t := time.NewTicker(r.every)
	defer t.Stop()
	var line []byte
	for {
		stopping := false
		select {
		case <-t.C:
		case <-r.wake:
		case <-r.stop:
			stopping = true
		}
		r.mu.Lock()
		spare, r.buf = r.buf, spare[:0]
		r.mu.Unlock()
		// Calls are added as they return; write them in order of start.
		slices.SortStableFunc(spare, byStart)
		line = line[:0]
		for i := range spare {
			line = spare[i].AppendJSON(line)
		}
		clear(spare) // drop the keys' references
		if len(line) > 0 && r.err == nil {
			r.err = r.put(line)
		}
		if stopping {
			return
		}
	}
}

// put writes line to the Recorder's Writer. A panic in the Writer is
// recovered and returned as a [*rampart.PanicError], a write error like
// any other (Close returns it), so that the user's Writer cannot end the
// program from the Recorder's goroutine, where nobody could recover it.
func (r *Recorder) put(line []byte) (err error) {
	normal := false
	defer func() {
		if !normal {
			err = &rampart.PanicError{Value: recover(), Stack: debug.Stack()}
		}
	}()
	_, err = r.w.Write(line)
	normal = true
	return err
}

// byStart orders entries by their start on the wall clock, the time
// written (not the monotonic reading, which a wall-clock step would
// make disagree with it).
func byStart(a, b Entry) int {
	return a.Start.Round(0).Compare(b.Start.Round(0))
}
