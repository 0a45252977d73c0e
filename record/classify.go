package record

import (
	"context"
	"errors"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
)

// judge returns the outcome and class of a call that returned (resp, err)
// in the order a breaker judges one: a refusal first (the call was not
// made), then the caller's cancellation, then the classifier.
func (s *service[Req, Resp]) judge(ctx context.Context, resp Resp, err error) (Outcome, string) {
	switch {
	case err == nil:
	case errors.Is(err, circuitbreaker.ErrOpen):
		return Refused, "open"
	case errors.Is(err, concurrency.ErrLimited):
		return Refused, "limited"
	}
	o := circuitbreaker.ClassifyContext(ctx, err)
	if o != circuitbreaker.Ignored && s.classify != nil {
		o = s.classify(resp, err)
	}
	switch {
	case o == circuitbreaker.Ignored:
		return Ignored, s.class(err)
	case o == circuitbreaker.Success:
		return Success, ""
	case err == nil:
		return Failure, "response" // a response judged a failure
	}
	return Failure, s.r.class(err)
}

// class is the class of an ignored call: its error's, or empty for a
// response the classifier ignored.
func (s *service[Req, Resp]) class(err error) string {
	if err == nil {
		return ""
	}
	return s.r.class(err)
}
