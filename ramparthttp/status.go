package ramparthttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/filter"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/timeout"
)

// writeError writes the default answer for err, as [Handler] documents.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	code, delay := status(err)
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		if delay == 0 {
			delay = h.retryAfter
		}
		// rate.InfDuration (a limiter that never grants) and
		// rampart.Forever (held open until reset) say "not by
		// waiting": no Retry-After.
		if delay > 0 && delay != rampart.Forever {
			w.Header().Set("Retry-After", seconds(delay))
		}
	}
	http.Error(w, http.StatusText(code), code)
}

// status returns the status code that answers err and the delay err asks
// the caller to wait (zero when none).
func status(err error) (code int, delay time.Duration) {
	delay, _ = rampart.RetryAfter(err)
	switch {
	case errors.Is(err, circuitbreaker.ErrOpen):
		// First: a refusal also matches the failures that tripped the
		// breaker (429s from a rate limit, say), yet it is a 503.
		return http.StatusServiceUnavailable, delay
	case errors.Is(err, ratelimit.ErrLimited):
		return http.StatusTooManyRequests, delay
	case errors.Is(err, concurrency.ErrLimited),
		errors.Is(err, loadshed.ErrOverloaded),
		errors.Is(err, timeout.ErrTimeout),
		errors.Is(err, context.DeadlineExceeded),
		delay > 0:
		return http.StatusServiceUnavailable, delay
	case errors.Is(err, filter.ErrRefused):
		return http.StatusForbidden, 0
	default:
		return http.StatusInternalServerError, 0
	}
}

// seconds formats d as a Retry-After value: whole seconds, rounded up.
func seconds(d time.Duration) string {
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return strconv.FormatInt(int64(s), 10)
}
