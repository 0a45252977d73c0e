package rampart

import (
	"context"
	"fmt"
	"strings"
)

// Criticality says how much a request matters when there is not room for
// every request: a server that must refuse work refuses [Sheddable]
// requests first and [Critical] ones last. The idea and the names are the
// Google SRE book's ("Handling Overload": CRITICAL, SHEDDABLE); gRPC's
// and Envoy's deployments at Google carry the same three levels.
//
// The zero Criticality is [DefaultCriticality], what every request has
// until someone says otherwise, so code that never sets one behaves as if
// criticality did not exist. A larger value is more critical.
type Criticality int8

// The criticalities, least critical first.
const (
	// Sheddable work may be refused first: prefetching, batch jobs,
	// analytics, anything that is retried later or not missed.
	Sheddable Criticality = -1
	// DefaultCriticality is the zero Criticality: ordinary requests.
	DefaultCriticality Criticality = 0
	// Critical work is refused last: a user waiting on a checkout, a
	// health probe that must not fail.
	Critical Criticality = 1
)

// String returns "sheddable", "default" or "critical", the words the HTTP
// and gRPC adapters send, and "Criticality(N)" for any other value.
func (c Criticality) String() string {
	switch c {
	case Sheddable:
		return "sheddable"
	case DefaultCriticality:
		return "default"
	case Critical:
		return "critical"
	}
	return fmt.Sprintf("Criticality(%d)", int8(c))
}

// ParseCriticality returns the Criticality [Criticality.String] names,
// ignoring ASCII case and surrounding spaces. Any other text is an error
// naming it.
func ParseCriticality(s string) (Criticality, error) {
	switch t := strings.TrimSpace(s); {
	case strings.EqualFold(t, "sheddable"):
		return Sheddable, nil
	case strings.EqualFold(t, "default"):
		return DefaultCriticality, nil
	case strings.EqualFold(t, "critical"):
		return Critical, nil
	}
	return DefaultCriticality, fmt.Errorf("rampart: criticality must be sheddable, default or critical, got %q", s)
}

type criticalityKey struct{}

// WithCriticality returns a copy of ctx that carries c, for the layers
// that refuse work by criticality (package concurrency's limiters,
// package loadshed) and for the adapters, which send it to the next hop.
// A value other than the three criticalities is stored as the nearest of
// them.
func WithCriticality(ctx context.Context, c Criticality) context.Context {
	return context.WithValue(ctx, criticalityKey{}, min(max(c, Sheddable), Critical))
}

// CriticalityOf returns the criticality ctx carries, [DefaultCriticality]
// when it carries none. It is a context lookup: it allocates nothing.
func CriticalityOf(ctx context.Context) Criticality {
	c, _ := ctx.Value(criticalityKey{}).(Criticality)
	return c
}

type attemptKey struct{}

// WithAttempt returns a copy of ctx that says the call it carries is
// attempt n at its request: 1 for the first, 2 for the first retry. The
// retry layers set it on each retry; the adapters send it to the next hop
// and, from a trusted peer, put the attempt the peer sent into the
// handler's context. A retry layer whose context says the request is
// already a retry (n > 1) does not retry it again: the hop that sent it
// owns its retries, so attempts do not multiply down a chain of services.
// n below 1 is stored as 1.
func WithAttempt(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, attemptKey{}, max(n, 1))
}

// AttemptOf returns the attempt ctx carries, 0 when it carries none. It
// allocates nothing.
func AttemptOf(ctx context.Context) int {
	n, _ := ctx.Value(attemptKey{}).(int)
	return n
}
