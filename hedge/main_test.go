package hedge_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// step scripts one attempt of a backend, in the order attempts arrive.
type step struct {
	latency   time.Duration // how long the attempt takes
	err       error         // returned when the latency has passed
	ignoreCtx bool          // keep working after cancellation
}

// backend is a scripted inner service. It logs when each attempt starts,
// answers or is cancelled, in virtual time since t0, and counts attempts in
// flight, so a test can check that none outlives a call.
type backend struct {
	t0    time.Time
	steps []step

	inflight atomic.Int32
	mu       sync.Mutex
	calls    int      // guarded by mu
	log      []string // guarded by mu
}

func newBackend(steps ...step) *backend {
	return &backend{t0: time.Now(), steps: steps}
}

func (b *backend) logf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.log = append(b.log, fmt.Sprintf("%v ", time.Since(b.t0))+fmt.Sprintf(format, args...))
}

func (b *backend) Call(ctx context.Context, req string) (string, error) {
	b.inflight.Add(1)
	defer b.inflight.Add(-1)
	b.mu.Lock()
	k := b.calls
	b.calls++
	b.mu.Unlock()
	st := b.steps[k]
	b.logf("start %d", k)

	done := ctx.Done()
	if st.ignoreCtx {
		done = nil
	}
	t := time.NewTimer(st.latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
		b.logf("cancelled %d", k)
		return "", ctx.Err()
	}
	b.logf("answer %d", k)
	return fmt.Sprintf("%s#%d", req, k), st.err
}

func (b *backend) Calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

func (b *backend) Log() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.log...)
}

func always(string) bool { return true }

// discards records the responses passed to Config.Discard, which may be
// called from several goroutines.
type discards struct {
	mu    sync.Mutex
	resps []string // guarded by mu
}

func (d *discards) Discard(resp string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.resps = append(d.resps, resp)
}

func (d *discards) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.resps...)
}

// pushback is an error carrying a server's retry-after hint.
type pushback time.Duration

func (p pushback) Error() string             { return fmt.Sprintf("pushback %v", time.Duration(p)) }
func (p pushback) RetryAfter() time.Duration { return time.Duration(p) }
