package record

import (
	"context"
	"errors"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilservice"
)

// LayerConfig configures the layer of [NewLayer]. Only Recorder is
// required.
type LayerConfig[Req, Resp any] struct {
	// Recorder writes the entries; it must be made by [New].
	Recorder *Recorder
	// Key, if not nil, names each request's key in its entry, such as its
	// host or tenant. It is called once per recorded call and must be safe
	// for concurrent use.
	Key func(Req) string
	// Classify judges each call from its response and error, as the
	// breaker of the same stack does: give both the same function
	// (ramparthttp.Classify over HTTP, where a 503 is a response with a
	// nil error), or the trace records what the breaker counted as
	// failures as successes. It is not asked about a refusal (recorded as
	// [Refused]) nor about a call the caller cancelled (recorded as
	// [Ignored]), as a breaker does not ask; a [rampart.Ignored] it
	// returns is recorded as Ignored. Nil judges by the error alone, as a
	// breaker without a classifier does (circuitbreaker.ClassifyContext).
	// A circuitbreaker.Classifier is such a function. It must be safe for
	// concurrent use.
	Classify func(resp Resp, err error) rampart.Outcome
	// Later, if not nil, lets a call judged a success be judged again
	// after it returns, as an adapter's breaker judges a response's body
	// when it is read (ramparthttp's: a body whose read fails is a
	// failure). It is called with the call's context and response and a
	// function done; when it returns true, the call is recorded once done
	// is called, and only then: as the success it was judged when done's
	// error is nil, as [Ignored] when it is not and the caller cancelled
	// the context, and otherwise as a [Failure] of that error's class,
	// lasting until done was called (a success lasts until the call
	// returned, however long its body is held). done may be called from
	// any goroutine, once at most. A call whose done is never called is
	// never recorded, as its breaker never counts it.
	// Returning false records the call at once. It must be safe for
	// concurrent use.
	Later func(ctx context.Context, resp Resp, done func(err error)) bool
}

// NewLayer returns a layer that records each call through it with
// cfg.Recorder: its start, duration, outcome (judged by cfg.Classify),
// error class, key, and attempt number ([rampart.AttemptOf], from 1).
//
// Put it just outside the breaker, inside any retry layer: then it sees
// every attempt, each retry marked as one, and the calls the live breaker
// (or a concurrency limit below the recorder) refused, which never
// reached the dependency and are recorded as [Refused], so a replay knows
// which outcomes the trace cannot know. A per-attempt timeout below
// the breaker is then inside the recorder, so a slow attempt is recorded
// with the time it was given and its timeout. Replay its trace with
// package sim.
//
// A call whose service or Classify panics is recorded as a [Failure] of
// class [ClassPanic], as a breaker counts it, and the panic goes on.
//
// A nil service or a nil or zero Recorder gives a service whose every
// call fails with an error matching [rampart.ErrNilService] (so a retry
// layer above does not retry it), naming the zero Recorder for one.
func NewLayer[Req, Resp any](cfg LayerConfig[Req, Resp]) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		switch {
		case nilservice.Is(inner):
			return rampart.Failing[Req, Resp]("record: Wrap")
		case cfg.Recorder == nil:
			return rampart.Failing[Req, Resp]("record: NewLayer's Recorder")
		case cfg.Recorder.w == nil:
			return rampart.ServiceFunc[Req, Resp](func(context.Context, Req) (resp Resp, err error) {
				return resp, zeroRecorderError{}
			})
		}
		return &service[Req, Resp]{r: cfg.Recorder, key: cfg.Key, classify: cfg.Classify, later: cfg.Later, inner: inner}
	})
}

// errZeroRecorder is the error of Close of a Recorder not made by New.
var errZeroRecorder = errors.New("record: Recorder must be made by New, got a zero Recorder")

// zeroRecorderError is the error of every call through a layer over a
// Recorder not made by New. It has errZeroRecorder's message and matches
// rampart.ErrNilService, as a layer over a nil Recorder's error does: the
// layer is wired to nothing that can record, and every call fails alike.
type zeroRecorderError struct{}

func (zeroRecorderError) Error() string { return errZeroRecorder.Error() }

func (zeroRecorderError) Is(target error) bool {
	return target == errZeroRecorder || target == rampart.ErrNilService
}

type service[Req, Resp any] struct {
	r        *Recorder
	key      func(Req) string
	classify func(Resp, error) rampart.Outcome
	later    func(context.Context, Resp, func(error)) bool
	inner    rampart.Service[Req, Resp]
}

func (s *service[Req, Resp]) Call(ctx context.Context, req Req) (Resp, error) {
	if !s.r.sampled() {
		return s.inner.Call(ctx, req)
	}
	start := time.Now()
	ok := false
	defer func() {
		if !ok { // the call or the classifier panicked: a failure, as a breaker counts it
			s.add(ctx, req, start, Failure, ClassPanic)
		}
	}()
	resp, err := s.inner.Call(ctx, req)
	o, class := s.judge(ctx, resp, err)
	ok = true
	if o == Success && s.later != nil {
		took := time.Since(start)
		if s.later(ctx, resp, func(err error) { s.settle(ctx, req, start, took, err) }) {
			return resp, err
		}
	}
	s.add(ctx, req, start, o, class)
	return resp, err
}

// settle records the call to req that started at start and returned a
// success after took, judged again when it ended with err.
func (s *service[Req, Resp]) settle(ctx context.Context, req Req, start time.Time, took time.Duration, err error) {
	if err == nil {
		s.addTook(ctx, req, start, took, Success, "")
		return
	}
	o := Failure
	if errors.Is(ctx.Err(), context.Canceled) {
		o = Ignored // the caller gave up, as a breaker judges it
	}
	s.add(ctx, req, start, o, s.r.class(err))
}

// ClassPanic is the class of a call whose service or classifier panicked:
// the layer records it as a [Failure], as a circuit breaker counts it, and
// the panic goes on.
const ClassPanic = "panic"

// add records the call to req that started at start.
func (s *service[Req, Resp]) add(ctx context.Context, req Req, start time.Time, o Outcome, class string) {
	s.addTook(ctx, req, start, time.Since(start), o, class)
}

// addTook records the call to req that started at start and took took.
func (s *service[Req, Resp]) addTook(ctx context.Context, req Req, start time.Time, took time.Duration, o Outcome, class string) {
	e := Entry{Start: start, Duration: took, Attempt: max(1, rampart.AttemptOf(ctx)), Outcome: o, Class: class}
	if s.key != nil {
		e.Key = s.key(req)
	}
	s.r.add(&e)
}
