package record

import (
	"context"
	"errors"
	"time"

	"github.com/rampart-go/rampart"
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
// call fails, matching [rampart.ErrNilService] or naming the zero
// Recorder.
func NewLayer[Req, Resp any](cfg LayerConfig[Req, Resp]) rampart.Layer[Req, Resp] {
	return rampart.LayerFunc[Req, Resp](func(inner rampart.Service[Req, Resp]) rampart.Service[Req, Resp] {
		switch {
		case inner == nil:
			return rampart.Failing[Req, Resp]("record: Wrap")
		case cfg.Recorder == nil:
			return rampart.Failing[Req, Resp]("record: NewLayer's Recorder")
		case cfg.Recorder.w == nil:
			return rampart.ServiceFunc[Req, Resp](func(context.Context, Req) (resp Resp, err error) {
				return resp, errZeroRecorder
			})
		}
		return &service[Req, Resp]{r: cfg.Recorder, key: cfg.Key, classify: cfg.Classify, inner: inner}
	})
}

// errZeroRecorder is the error of every call through a layer over a
// Recorder not made by New.
var errZeroRecorder = errors.New("record: Recorder must be made by New, got a zero Recorder")

type service[Req, Resp any] struct {
	r        *Recorder
	key      func(Req) string
	classify func(Resp, error) rampart.Outcome
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
	s.add(ctx, req, start, o, class)
	return resp, err
}

// ClassPanic is the class of a call whose service or classifier panicked:
// the layer records it as a [Failure], as a circuit breaker counts it, and
// the panic goes on.
const ClassPanic = "panic"

// add records the call to req that started at start.
func (s *service[Req, Resp]) add(ctx context.Context, req Req, start time.Time, o Outcome, class string) {
	e := Entry{Start: start, Duration: time.Since(start), Attempt: max(1, rampart.AttemptOf(ctx)), Outcome: o, Class: class}
	if s.key != nil {
		e.Key = s.key(req)
	}
	s.r.add(&e)
}
