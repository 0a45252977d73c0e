package rampartgrpc

import (
	"errors"
	"math"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/timeout"
)

// PushbackKey is the trailer in which a server asks a client to wait before
// retrying, in whole milliseconds, as gRFC A6 defines it: a signed 32-bit
// decimal integer. A negative, out-of-range or malformed value asks the
// client not to retry at all.
const PushbackKey = "grpc-retry-pushback-ms"

// Classify is the default judgement of an attempt for the breaker
// ([ClientConfig.Classify] when nil), from the error the attempt ended
// with. It returns:
//   - [rampart.Failure] for UNAVAILABLE, DEADLINE_EXCEEDED (an
//     attempt's timeout or the caller's deadline ran out while the call was
//     in flight), INTERNAL, UNKNOWN, DATA_LOSS and CANCELLED: the
//     dependency is down, slow or broken;
//   - [rampart.Ignored] for RESOURCE_EXHAUSTED: the server asks this
//     client to slow down, as an HTTP 429 does, which is no evidence that it
//     is down, so the breaker counts it neither way (in HalfOpen it frees
//     its probe slot);
//   - [rampart.Success] for a nil error and for every other code
//     (INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, UNIMPLEMENTED …): the
//     service answered.
//
// An error that carries no gRPC status counts as UNKNOWN, as
// [status.Code] reads it. The interceptors call a classifier only once the
// caller's own cancellation has been ruled out, so a CANCELLED it sees came
// from the other side (the server, a proxy, or a layer below), and counts
// as a failure. Wrap Classify to change part of the judgement:
//
//	classify := func(err error) rampart.Outcome {
//		if status.Code(err) == codes.NotFound {
//			return rampart.Ignored
//		}
//		return rampartgrpc.Classify(err)
//	}
//
// It is safe for concurrent use.
func Classify(err error) rampart.Outcome {
	switch status.Code(err) {
	case codes.OK:
		return rampart.Success
	case codes.Unavailable, codes.DeadlineExceeded, codes.Internal, codes.Unknown, codes.DataLoss, codes.Canceled:
		return rampart.Failure
	case codes.ResourceExhausted:
		return rampart.Ignored
	}
	return rampart.Success
}

// Retryable is the default judgement of an attempt for the retry layer
// ([RetryConfig.Retryable] when nil): it reports true for UNAVAILABLE, the
// code gRPC defines as "most likely a transient condition, which can be
// corrected by retrying with a backoff", and for an attempt cut short by
// [ClientConfig.AttemptTimeout] (its error matches [timeout.ErrTimeout]),
// whose next attempt may well be faster; false for a nil error and every
// other code (a DEADLINE_EXCEEDED from the server, or the caller's own
// deadline, may have done its work, and RESOURCE_EXHAUSTED asks the client
// to send less). Whatever it says, the interceptors retry only the methods
// declared safe to repeat ([RetryConfig.Methods]), never retry an open
// breaker, the caller's cancellation or a refusal of
// [ClientConfig.Limit], and never retry an attempt whose server sent a
// negative or malformed grpc-retry-pushback-ms trailer. It is safe for
// concurrent use.
func Retryable(err error) bool {
	return status.Code(err) == codes.Unavailable || errors.Is(err, timeout.ErrTimeout)
}

// maxPushbackMillis is the largest grpc-retry-pushback-ms value gRFC A6
// allows: the value is a signed 32-bit integer.
const maxPushbackMillis = math.MaxInt32

// pushback reads a server's grpc-retry-pushback-ms trailer as gRFC A6
// defines it: no trailer is no hint; one non-negative decimal integer
// without a sign or unneeded leading zeros, at most 2147483647 (the
// largest signed 32-bit integer), is a delay in milliseconds; anything else
// (a negative number, a value out of that range, a sign, leading zeros,
// text, several values) means "do not retry", returned as [rampart.Forever],
// which ends the retry loop at once.
func pushback(trailer metadata.MD) (time.Duration, bool) {
	vs := trailer[PushbackKey]
	switch {
	case len(vs) == 0:
		return 0, false
	case len(vs) > 1:
		return rampart.Forever, true
	}
	ms, ok := pushbackMillis(vs[0])
	if !ok {
		return rampart.Forever, true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// pushbackMillis parses a well-formed non-negative pushback: 0, or a digit
// other than 0 followed by digits, within gRFC A6's range.
func pushbackMillis(v string) (int64, bool) {
	if v == "" || len(v) > len("2147483647") || (v[0] == '0' && v != "0") {
		return 0, false
	}
	var ms int64
	for i := range len(v) {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		ms = ms*10 + int64(c-'0')
	}
	return ms, ms <= maxPushbackMillis
}
