package ramparthttp

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryAfter reads a Retry-After header (RFC 9110 section 10.2.3), given in
// whole seconds or as an HTTP date, as a delay from now. ok is false when the
// header is absent or malformed; a sign makes a number malformed, since the
// RFC's delay-seconds is digits only. A number of seconds too large for a
// Duration (any number of digits) is a delay of maxHintSeconds, which the
// retry layer caps at its MaxHint (retry.Config.MaxHint), so no overflow
// turns a huge wait into a short, zero or negative one. A date in the past
// is a delay of zero.
func retryAfter(h http.Header) (d time.Duration, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if allDigits(v) {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil || secs > maxHintSeconds {
			// Only a value too large to represent fails to parse here.
			secs = maxHintSeconds
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(time.Until(t), 0), true
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// maxHintSeconds keeps the conversion to a Duration from overflowing (it is
// about 136 years); the retry layer's MaxHint caps it far lower.
const maxHintSeconds = 1 << 32
