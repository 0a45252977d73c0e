package ramparthttp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/inbound"
	"github.com/rampart-go/rampart/internal/nilservice"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/ratelimit"
)

// The headers that carry what a caller says about a request to the next
// hop. [Propagate] sends them; [PropagatedLayer] honours them from
// trusted peers; [RetryLayer] obeys [NoRetryHeader].
const (
	// TimeoutHeader carries the time the caller still gives the request,
	// relative, so that the two hosts' clocks need not agree, in the
	// format of gRPC's grpc-timeout: 1 to 8 ASCII digits and a unit, H
	// (hours), M (minutes), S (seconds), m (milliseconds), u
	// (microseconds) or n (nanoseconds), as "250m" or "30S".
	TimeoutHeader = "Rampart-Timeout"
	// CriticalityHeader carries the request's [rampart.Criticality]:
	// "critical", "default" or "sheddable".
	CriticalityHeader = "Rampart-Criticality"
	// AttemptHeader carries which attempt at its request this one is, in
	// decimal: 1 for the first, 2 for the first retry (see
	// [rampart.WithAttempt]).
	AttemptHeader = "Rampart-Attempt"
	// NoRetryHeader, with the value "no", on a 429 or 503 answer says the
	// server is overloaded and no client should retry the request
	// (gRPC's negative grpc-retry-pushback-ms, gRFC A6, says the same).
	NoRetryHeader = "Rampart-Retry"
)

// Propagate returns an [http.RoundTripper] that sends each request
// through base (nil means [http.DefaultTransport]) with what its context
// says about it, in headers that [PropagatedLayer] reads at the next hop:
// the time left before the context's deadline in [TimeoutHeader] (rounded
// down to the millisecond, or finer below one), a criticality other than
// the default in [CriticalityHeader], and an attempt number in
// [AttemptHeader]. Use it as the Base of [NewTransport], so that every
// attempt sends its own time left and attempt number.
//
// A request whose context carries none of them is sent as it is, at no
// cost. Otherwise it is sent as a copy with a copy of its header (the
// caller's request is never modified), overwriting headers of those names
// the caller set. A request whose deadline has already passed is not sent:
// RoundTrip closes its body and returns [context.DeadlineExceeded]. The
// RoundTripper is safe for concurrent use when base is.
func Propagate(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return propagator{base: base}
}

type propagator struct{ base http.RoundTripper }

func (p propagator) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	deadline, hasDeadline := ctx.Deadline()
	c := rampart.CriticalityOf(ctx)
	n := rampart.AttemptOf(ctx)
	if !hasDeadline && c == rampart.DefaultCriticality && n == 0 {
		return p.base.RoundTrip(req)
	}
	r := new(http.Request)
	*r = *req
	r.Header = req.Header.Clone()
	if r.Header == nil {
		r.Header = make(http.Header, 3)
	}
	if hasDeadline {
		left := time.Until(deadline)
		if left <= 0 {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, fmt.Errorf("ramparthttp: not sent, the deadline has passed: %w", context.DeadlineExceeded)
		}
		r.Header.Set(TimeoutHeader, formatTimeout(left))
	}
	if c != rampart.DefaultCriticality {
		r.Header.Set(CriticalityHeader, c.String())
	}
	if n > 0 {
		r.Header.Set(AttemptHeader, strconv.Itoa(n))
	}
	return p.base.RoundTrip(r)
}

// timeoutUnits are grpc-timeout's units, coarsest first.
var timeoutUnits = []struct {
	unit byte
	d    time.Duration
}{{'H', time.Hour}, {'M', time.Minute}, {'S', time.Second}, {'m', time.Millisecond}, {'u', time.Microsecond}, {'n', time.Nanosecond}}

// maxTimeoutValue is the largest value grpc-timeout's 8 digits hold.
const maxTimeoutValue = 99_999_999

// formatTimeout writes d > 0 in TimeoutHeader's format: in milliseconds,
// rounded down, when that is at least 1 and fits in 8 digits; in a finer
// unit below a millisecond; in a coarser one above 8 digits of them.
func formatTimeout(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return strconv.FormatInt(int64(d), 10) + "n"
	case d < time.Millisecond:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "u"
	}
	for i := 3; i >= 0; i-- { // m, S, M, H
		u := timeoutUnits[i]
		if v := d / u.d; v <= maxTimeoutValue {
			return strconv.FormatInt(int64(v), 10) + string(u.unit)
		}
	}
	return strconv.Itoa(maxTimeoutValue) + "H"
}

// parseTimeout reads one TimeoutHeader value. It reports false for a
// malformed one: empty, a sign, a space or any other non-digit, more than
// 8 digits, no unit or an unknown one. A value too long for a
// time.Duration is math.MaxInt64 nanoseconds.
func parseTimeout(v string) (time.Duration, bool) {
	if len(v) < 2 || len(v) > 9 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v)-1; i++ {
		ch := v[i]
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	for _, u := range timeoutUnits {
		if v[len(v)-1] == u.unit {
			if n > math.MaxInt64/int64(u.d) {
				return math.MaxInt64, true
			}
			return time.Duration(n) * u.d, true
		}
	}
	return 0, false
}

// PropagateConfig configures [PropagatedLayer].
type PropagateConfig struct {
	// Trusted reports whether the request comes from a peer whose
	// headers the server honours: another service of the same system (by
	// its address, a client certificate, a header a proxy in front
	// sets), never a client on the internet, which could otherwise give
	// itself all the time it likes or mark itself critical. Nil means no
	// peer is trusted, and the layer changes nothing. It is called once
	// per request and must be safe for concurrent use.
	Trusted func(r *http.Request) bool
	// MaxTimeout caps the time a trusted peer's [TimeoutHeader] may give
	// the handler: a longer or an unrepresentable one is MaxTimeout. Zero
	// means no cap: the header's own time, however long; it must not be
	// negative.
	MaxTimeout time.Duration
	// NoRetry, if set, asks clients not to retry the requests this
	// server's limits refuse: a refusal of package concurrency, loadshed
	// or ratelimit that reaches the layer gets [NoRetryHeader] "no" on
	// the Handler's 429 or 503 answer. Set it on a server whose refusals
	// mean the whole service is overloaded, where a retry elsewhere
	// cannot help (the Google SRE book's "overloaded; don't retry").
	NoRetry bool
}

// PropagatedLayer returns a server layer that gives each request from a
// trusted peer (cfg.Trusted) what [Propagate] sent with it: the time left
// in [TimeoutHeader] as a deadline of the handler's context (capped by
// cfg.MaxTimeout, and never later than a deadline the context already
// has), the criticality in [CriticalityHeader] ([rampart.CriticalityOf]
// reads it), and the attempt number in [AttemptHeader]
// ([rampart.AttemptOf] reads it; a retry layer below then does not retry
// a request that is already a retry). Put it first in
// [ServerConfig.Layers], so that every layer after it sees them.
//
// From a peer that is not trusted, the headers are ignored. From a trusted
// one, each header is read as follows, and nothing it holds panics or
// gives a deadline later than cfg.MaxTimeout:
//
//   - missing: nothing is set (the handler's context has the deadline it
//     had, if any);
//   - malformed ([TimeoutHeader]: not 1 to 8 digits and a known unit, so a
//     negative, fractional or spaced value too; [CriticalityHeader]: not
//     one of the three words; [AttemptHeader]: not 1 to 4 digits, or 0):
//     ignored, as if missing;
//   - repeated (several header lines, or values joined by commas): the
//     shortest time, the least criticality, the highest attempt among the
//     well-formed ones, so a repeat can only shorten, lower or end the
//     retries, never extend or raise;
//   - a time of zero: the caller has no time left, so the handler is not
//     called, and the request is answered 503 as a timeout;
//   - a time too long for a time.Duration, or longer than
//     cfg.MaxTimeout: cfg.MaxTimeout, or no deadline when it is zero.
//
// The deadline is what makes a handler stop working for a caller that has
// given up even when the connection stays open (behind a proxy that keeps
// it, say): when it passes, the handler's context is done. A caller that
// closes its connection ends the request's context as net/http does.
//
// The layer costs nothing for a request from an untrusted peer beyond the
// Trusted call, and a context per value set otherwise. It returns an error
// when cfg.MaxTimeout is negative.
func PropagatedLayer(cfg PropagateConfig) (ServerLayer, error) {
	if cfg.MaxTimeout < 0 {
		return nil, fmt.Errorf("ramparthttp: PropagateConfig.MaxTimeout must be >= 0 (0 means no cap), got %v", cfg.MaxTimeout)
	}
	return rampart.LayerFunc[Exchange, struct{}](func(inner ServerService) ServerService {
		if nilservice.Is(inner) {
			return rampart.Failing[Exchange, struct{}]("ramparthttp: PropagatedLayer: Wrap")
		}
		return propagated{cfg: cfg, inner: inner}
	}), nil
}

type propagated struct {
	cfg   PropagateConfig
	inner ServerService
}

func (p propagated) Call(ctx context.Context, x Exchange) (struct{}, error) {
	if p.cfg.Trusted == nil || x.Request == nil || !p.cfg.Trusted(x.Request) {
		return p.call(ctx, x)
	}
	h := x.Request.Header
	if d, ok := inboundTimeout(h[TimeoutHeader]); ok {
		if p.cfg.MaxTimeout > 0 {
			d = min(d, p.cfg.MaxTimeout)
		}
		if d == 0 {
			return struct{}{}, fmt.Errorf("ramparthttp: the caller's %s is 0: %w", TimeoutHeader, context.DeadlineExceeded)
		}
		if d != math.MaxInt64 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	if c, ok := inbound.Criticality(h[CriticalityHeader]); ok {
		ctx = rampart.WithCriticality(ctx, c)
	}
	if n, ok := inbound.Attempt(h[AttemptHeader]); ok {
		ctx = rampart.WithAttempt(ctx, n)
	}
	return p.call(ctx, x)
}

func (p propagated) call(ctx context.Context, x Exchange) (struct{}, error) {
	_, err := p.inner.Call(ctx, x)
	if err != nil && p.cfg.NoRetry && x.Writer != nil && refusal(err) {
		x.Writer.Header().Set(NoRetryHeader, "no")
	}
	return struct{}{}, err
}

// refusal reports whether err is a limit's or load shedding's refusal.
func refusal(err error) bool {
	return errors.Is(err, concurrency.ErrLimited) || errors.Is(err, loadshed.ErrOverloaded) || errors.Is(err, ratelimit.ErrLimited)
}

func inboundTimeout(vs []string) (d time.Duration, ok bool) {
	inbound.Each(vs, func(v string) {
		if t, good := parseTimeout(v); good && (!ok || t < d) {
			d, ok = t, true
		}
	})
	return d, ok
}

// obeyNoRetry returns retryable, except that a 429 or 503 answer whose
// server asked for no retry is never retried.
func obeyNoRetry(retryable func(*http.Response, error) bool) func(*http.Response, error) bool {
	return func(resp *http.Response, err error) bool {
		if askedNoRetry(resp) {
			return false
		}
		return retryable(resp, err)
	}
}

// askedNoRetry reports whether resp is a 429 or 503 answer whose server
// asked for no retry ([NoRetryHeader] "no").
func askedNoRetry(resp *http.Response) bool {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		for _, v := range resp.Header[NoRetryHeader] {
			if strings.TrimSpace(v) == "no" {
				return true
			}
		}
	}
	return false
}

// noRetryHint is a hedge.Config.Hint: "never" for an answer whose server
// asked for no retry, so that no further copy is sent.
func noRetryHint(resp *http.Response, _ error) (time.Duration, bool) {
	if askedNoRetry(resp) {
		return rampart.Forever, true
	}
	return 0, false
}
