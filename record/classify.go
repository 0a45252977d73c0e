package record

import (
	"context"
	"errors"

	"github.com/rampart-go/rampart"
)

// judge returns the outcome and class of a call that returned (resp, err)
// in the order a breaker judges one: a refusal first (the call was not
// made), then the caller's cancellation, then the classifier.
func (s *service[Req, Resp]) judge(ctx context.Context, resp Resp, err error) (Outcome, string) {
	switch {
	case err == nil:
	case errors.Is(err, rampart.ErrOpen):
		return Refused, "open"
	case errors.Is(err, rampart.ErrRefused):
		return Refused, "limited"
	}
	o := rampart.Success
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		o = rampart.Ignored // the caller gave up, as a breaker judges it
	case s.classify != nil:
		o = s.classify(resp, err)
	case err != nil:
		o = rampart.Failure
	}
	switch {
	case o == rampart.Ignored:
		return Ignored, s.class(err)
	case o == rampart.Success:
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
