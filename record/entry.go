package record

import (
	"encoding/json"
	"strconv"
	"time"
)

// Outcome is what one recorded call did, as a circuit breaker would count
// it, or that it never reached the dependency.
type Outcome string

const (
	// Success is a call the layer's classifier judged a success (by
	// default, one that returned a nil error).
	Success Outcome = "success"
	// Failure is a call the classifier judged a failure (by default, one
	// that returned an error).
	Failure Outcome = "failure"
	// Ignored is a call a breaker counts neither way: the caller gave up
	// on it, or the classifier said so (an HTTP 429, say).
	Ignored Outcome = "ignored"
	// Refused is a call a breaker or concurrency limit below the recorder
	// refused: it never reached the dependency, so what the dependency
	// would have done is unknown. Its Class is the live decision: "open"
	// (an error matching rampart.ErrOpen) or "limited" (any other refusal,
	// matching rampart.ErrRefused: a concurrency or rate limit, shedding).
	Refused Outcome = "refused"
)

// Entry is one recorded call, one line of a trace. Its JSON form, one
// object per line (JSON Lines), is
//
//	{"start":"2026-12-01T15:00:00.123456789Z","duration":"12.5ms","outcome":"failure","class":"timeout","key":"eu-1","attempt":2}
//
// start is RFC 3339 with nanoseconds (UTC), duration a Go duration
// ([time.ParseDuration]), outcome one of the [Outcome] values, class a
// short word for the kind of error (empty for a success; see
// [Config.Class]) or for a refusal the breaker's decision, key the
// request's key when the layer was given one, and attempt the attempt's
// number when it is a retry (2 for the first retry); empty fields and an
// attempt of 1 are left out. A nil *Entry is no line: Retry is false and
// AppendJSON appends nothing.
type Entry struct {
	// Start is when the call began, by the wall clock.
	Start time.Time
	// Duration is how long the call took, by the monotonic clock.
	Duration time.Duration
	// Outcome is Success, Failure, Ignored or Refused.
	Outcome Outcome
	// Class is the kind of error ("timeout", "canceled", "error"…), or a
	// refusal's decision ("open"); empty for a success.
	Class string
	// Key is the request's key, or empty.
	Key string
	// Attempt is the attempt's number, from 1, as retry.Attempt reads
	// it: above 1 the entry is a retry of an earlier entry's request.
	// Zero means 1 (package sim's reader reads an absent attempt as 1).
	Attempt int
}

// Retry reports whether e is a retry: an attempt after the first.
func (e *Entry) Retry() bool { return e != nil && e.Attempt > 1 }

// AppendJSON appends e's JSON line, newline included, to b and returns
// the extended buffer. It allocates only when b must grow.
func (e *Entry) AppendJSON(b []byte) []byte {
	if e == nil {
		return b
	}
	b = append(b, `{"start":"`...)
	b = e.Start.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","duration":"`...)
	b = appendDuration(b, e.Duration)
	b = append(b, `","outcome":`...)
	b = appendString(b, string(e.Outcome))
	if e.Class != "" {
		b = append(b, `,"class":`...)
		b = appendString(b, e.Class)
	}
	if e.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, e.Key)
	}
	if e.Attempt > 1 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(e.Attempt), 10)
	}
	return append(b, "}\n"...)
}

// appendDuration appends d in a form time.ParseDuration reads back
// exactly: whole nanoseconds, or microseconds or milliseconds when d is a
// multiple of them, so common values stay readable ("12ms", "1500us").
func appendDuration(b []byte, d time.Duration) []byte {
	switch {
	case d != 0 && d%time.Millisecond == 0:
		return append(strconv.AppendInt(b, int64(d/time.Millisecond), 10), "ms"...)
	case d != 0 && d%time.Microsecond == 0:
		return append(strconv.AppendInt(b, int64(d/time.Microsecond), 10), "us"...)
	}
	return append(strconv.AppendInt(b, int64(d), 10), "ns"...)
}

// appendString appends s as a JSON string: as it is when it holds only
// printable ASCII other than quote and backslash (every class and most
// keys), else through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
