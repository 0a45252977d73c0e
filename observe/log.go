package observe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults for the zero fields of [LogConfig].
const (
	// DefaultLogEvery is how often, at most, a [Log] writes a record for
	// one kind of event of one layer once its burst is spent.
	DefaultLogEvery = time.Second
	// DefaultLogBurst is how many records in a row a [Log] writes for one
	// kind of event of one layer before it slows to one per Every.
	DefaultLogBurst = 10
)

// LogConfig configures a [Log].
type LogConfig struct {
	// Logger receives the records. Required.
	Logger *slog.Logger

	// Every is how often, at most, a record is written for one kind of
	// event of one layer (one Source, Name and Kind) once Burst records
	// have been written in a row. Zero means [DefaultLogEvery]; negative
	// is an error.
	Every time.Duration

	// Burst is how many records in a row may be written for one kind of
	// event of one layer. Zero means [DefaultLogBurst]; negative is an
	// error.
	Burst int

	// Level, if not nil, chooses each event's level. Nil means: a
	// breaker's transition to open or forced-open is [slog.LevelWarn],
	// its other transitions and every change of settings ([Tuned])
	// [slog.LevelInfo], and every other event (a retry, a refusal, a
	// timeout: events of single calls) [slog.LevelDebug]. It must be safe for concurrent use.
	Level func(Event) slog.Level
}

// Log is an [Observer] that writes events to a [*slog.Logger], and cannot
// flood it: in an outage every call may be refused, and a log line per
// refusal would bury the lines that matter and cost more than the calls.
//
// # How it limits itself
//
// Each kind of event of each layer (each Source, Name and Kind) has its
// own token bucket (golang.org/x/time/rate): Burst records in a row, then
// one per Every. An event that finds its bucket empty is not written but
// counted, and the count is written, so nothing goes unaccounted: as the
// attribute "suppressed" of the next record written for that kind of
// event of that layer, or, when none is written by Every after the bucket
// has a token again, in a summary record of its own (the event's message
// and level, the attributes "layer", "name" and "suppressed"), written by
// a timer with [context.Background]. So a count is written at most twice
// Every after the first event it counts, and the records written plus
// the counts they carry are exactly the events observed at an enabled
// level. [Log.Flush] writes the counts pending at once. A breaker's transitions are never suppressed: a breaker
// changes state at most a few times per cool-down. A breaker's successful
// calls are not logged at all: they are the normal case, one per call; a
// breaker given a Log does not report them ([Log.Wants]), and when the
// Log is joined with an Observer that wants them a check of the event's
// kind is all they cost. Events whose level the
// Logger does not enable cost one Enabled call, and nothing is counted for
// them.
//
// # Records
//
// The message is the source and kind ("circuitbreaker transition",
// "concurrency refused"); the attributes are "layer" (the Source), "name"
// when not empty, then the event's fields that are set: "attempt",
// "duration" ("cool_down" for a transition to open: its cool-down, or
// "forever"), "error", "from", "to", "failures", "calls" (a trip's
// counts), and "suppressed".
//
// A nil or zero Log (one not made by [NewLog]) writes nothing, as a nil
// Observer reports nothing; make one with NewLog.
//
// A Log is safe for concurrent use. It holds one small entry per kind of
// event of each layer name it has written lately: when the entries double
// in number (from [LogPruneAt] on), it drops those whose bucket has filled
// up again with nothing suppressed, which a fresh entry would replace
// exactly. So the entries of layers that come and go (the breakers of a
// circuitbreaker.Group, named by key) do not pile up. Events at an enabled
// level allocate (slog's records do); events at a disabled level do not.
type Log struct {
	logger *slog.Logger
	every  rate.Limit
	burst  int
	level  func(Event) slog.Level

	mu      sync.Mutex
	buckets map[logKey]*logBucket // guarded by mu
	pruneAt int                   // guarded by mu: the size of buckets that prunes it
}

// LogPruneAt is the number of entries from which a [Log] drops the
// entries it does not need (see [Log]).
const LogPruneAt = 1024

type logKey struct {
	source Source
	kind   Kind
	name   string
}

type logBucket struct {
	lim *rate.Limiter
	// suppressed counts the events not written since the last record of
	// the bucket; level is the level of the last of them, for a summary.
	// timer, while suppressed > 0, writes the summary if no record
	// carries the count first. Guarded by Log.mu.
	suppressed int
	level      slog.Level
	timer      *time.Timer
}

// NewLog returns a Log configured by cfg, or an error naming the bad
// field: a nil Logger, a negative Every or Burst.
func NewLog(cfg LogConfig) (*Log, error) {
	switch {
	case cfg.Logger == nil:
		return nil, errors.New("observe: LogConfig.Logger must not be nil")
	case cfg.Every < 0:
		return nil, fmt.Errorf("observe: LogConfig.Every must be >= 0 (0 means DefaultLogEvery, %v), got %v", DefaultLogEvery, cfg.Every)
	case cfg.Burst < 0:
		return nil, fmt.Errorf("observe: LogConfig.Burst must be >= 0 (0 means DefaultLogBurst, %d), got %d", DefaultLogBurst, cfg.Burst)
	}
	l := &Log{
		logger:  cfg.Logger,
		every:   rate.Every(cmp.Or(cfg.Every, DefaultLogEvery)),
		burst:   cmp.Or(cfg.Burst, DefaultLogBurst),
		level:   cfg.Level,
		buckets: make(map[logKey]*logBucket),
		pruneAt: LogPruneAt,
	}
	if l.level == nil {
		l.level = defaultLevel
	}
	return l, nil
}

// defaultLevel is the level of an event when LogConfig.Level is nil.
func defaultLevel(e Event) slog.Level {
	switch {
	case e.Kind == Tuned:
		return slog.LevelInfo
	case e.Kind != Transition, e.From == "open" && e.To == "open":
		// The second: an Open's end moved by a fleet's record, no change.
		return slog.LevelDebug
	case e.To == "open" || e.To == "forced-open":
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// Wants reports whether l writes events of kind k: every kind but a
// breaker's [Success], which a Log never writes, so that a breaker given
// a Log alone does not report its successes (see [Selector]).
func (l *Log) Wants(k Kind) bool { return k != Success }

// Observe writes e, unless it is a breaker's success, its level is
// disabled or its bucket is empty (see [Log]).
func (l *Log) Observe(ctx context.Context, e Event) {
	if e.Kind == Success || l == nil || l.logger == nil {
		return
	}
	level := l.level(e)
	if !l.logger.Enabled(ctx, level) {
		return
	}
	suppressed := 0
	if e.Kind != Transition {
		var ok bool
		if suppressed, ok = l.admit(e, level); !ok {
			return
		}
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("layer", e.Source.String()))
	if e.Name != "" {
		attrs = append(attrs, slog.String("name", e.Name))
	}
	if e.Attempt != 0 {
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
	}
	switch {
	case e.Duration == 0:
	case e.Kind == Transition && e.Duration == math.MaxInt64:
		attrs = append(attrs, slog.String("cool_down", "forever")) // until a reset
	case e.Kind == Transition:
		attrs = append(attrs, slog.Duration("cool_down", e.Duration))
	default:
		attrs = append(attrs, slog.Duration("duration", e.Duration))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	if e.From != "" || e.To != "" {
		attrs = append(attrs, slog.String("from", e.From), slog.String("to", e.To))
	}
	if e.Calls != 0 || e.Failures != 0 {
		attrs = append(attrs, slog.Int("failures", e.Failures), slog.Int("calls", e.Calls))
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	l.logger.LogAttrs(ctx, level, e.Source.String()+" "+e.Kind.String(), attrs...)
}

// admit takes a token from e's bucket. It reports whether e may be
// written and, if so, how many events of its bucket were suppressed
// since the last one written. An event suppressed at level starts the
// bucket's summary timer, if it is not running.
func (l *Log) admit(e Event, level slog.Level) (suppressed int, ok bool) {
	k := logKey{source: e.Source, kind: e.Kind, name: e.Name}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[k]
	if b == nil {
		if len(l.buckets) >= l.pruneAt {
			l.prune()
		}
		b = &logBucket{lim: rate.NewLimiter(l.every, l.burst)}
		l.buckets[k] = b
	}
	if !b.lim.Allow() {
		b.suppressed++
		b.level = level
		if b.timer == nil {
			b.timer = time.AfterFunc(l.summaryDelay(b), func() { l.summarize(k, b) })
		}
		return 0, false
	}
	suppressed, b.suppressed = b.suppressed, 0
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	return suppressed, true
}

// summaryDelay is how long after now the summary of b's count is due:
// Every after b has a token again. Called with l.mu held.
func (l *Log) summaryDelay(b *logBucket) time.Duration {
	missing := max(0, 1-b.lim.Tokens())
	return time.Duration(missing/float64(l.every)*float64(time.Second)) + time.Duration(float64(time.Second)/float64(l.every))
}

// summarize writes the summary of bucket b of key k, if it still holds a
// count (a record may have carried it since the timer was set).
func (l *Log) summarize(k logKey, b *logBucket) {
	l.mu.Lock()
	n, level := b.suppressed, b.level
	b.suppressed, b.timer = 0, nil
	if n > 0 {
		b.lim.Allow() // the summary is a record of the bucket
	}
	l.mu.Unlock()
	l.writeSummary(k, level, n)
}

// writeSummary writes the record that reports n suppressed events of k.
func (l *Log) writeSummary(k logKey, level slog.Level, n int) {
	if n == 0 {
		return
	}
	attrs := make([]slog.Attr, 0, 3)
	attrs = append(attrs, slog.String("layer", k.source.String()))
	if k.name != "" {
		attrs = append(attrs, slog.String("name", k.name))
	}
	attrs = append(attrs, slog.Int("suppressed", n))
	l.logger.LogAttrs(context.Background(), level, k.source.String()+" "+k.kind.String(), attrs...)
}

// Flush writes at once the summary of every count of suppressed events
// not yet written, as the summary timers would, and stops those timers:
// call it before a program exits so that its last counts are not lost.
// Safe for concurrent use; the Log remains usable.
func (l *Log) Flush() {
	if l == nil {
		return
	}
	type pending struct {
		k     logKey
		level slog.Level
		n     int
	}
	var due []pending
	l.mu.Lock()
	for k, b := range l.buckets {
		if b.suppressed == 0 {
			continue
		}
		due = append(due, pending{k, b.level, b.suppressed})
		b.suppressed = 0
		if b.timer != nil {
			b.timer.Stop()
			b.timer = nil
		}
	}
	l.mu.Unlock()
	for _, p := range due {
		l.writeSummary(p.k, p.level, p.n)
	}
}

// prune drops the buckets a fresh one would replace exactly: full, with
// nothing suppressed. It prunes next when the buckets left have doubled,
// so that its cost stays a constant per bucket added. Called with l.mu
// held.
func (l *Log) prune() {
	now := time.Now()
	for k, b := range l.buckets {
		if b.suppressed == 0 && b.lim.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, k)
		}
	}
	l.pruneAt = max(LogPruneAt, 2*len(l.buckets))
}
