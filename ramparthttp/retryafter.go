package ramparthttp

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryAfter reads a Retry-After header (RFC 9110 section 10.2.3), given in
// whole seconds or as an HTTP date, as a delay from now. ok is false when the
// header is absent or malformed. A date in the past is a delay of zero;
// the retry layer caps long delays (retry.Config.MaxHint).
func retryAfter(h http.Header) (d time.Duration, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(maxHintSeconds) {
			secs = int64(maxHintSeconds)
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(time.Until(t), 0), true
}

// maxHintSeconds keeps the conversion to a Duration from overflowing; the
// retry layer's MaxHint caps it far lower.
const maxHintSeconds = 1 << 32
