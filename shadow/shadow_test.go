package shadow_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/clock"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/shadow"
	"github.com/rampart-go/rampart/sim"
)

// candidates are the configurations both the shadow and the replay run.
func candidates() []shadow.Candidate {
	return []shadow.Candidate{
		{Name: "5 in a row, 1s", Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 5}, CoolDown: time.Second}},
		{Name: "half of 10, 500ms", Breaker: circuitbreaker.Config{
			Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 10}, Ratio: 0.5}, CoolDown: 500 * time.Millisecond}},
	}
}

// outage is a dependency that fails calls 10 to 39 (of one every 100ms)
// in 20ms, and answers the others in 10ms.
func outage() rampart.Service[int, string] {
	return rampart.ServiceFunc[int, string](func(_ context.Context, i int) (string, error) {
		if i >= 10 && i < 40 {
			time.Sleep(20 * time.Millisecond)
			return "", errors.New("down")
		}
		time.Sleep(10 * time.Millisecond)
		return "ok", nil
	})
}

// A shadow's results on live traffic are a replay's of the trace of the
// same traffic, exactly: refusals, lost goodput, trips and time open.
// By hand for "5 in a row, 1s": the fifth failure (call 14, returning at
// 1.42s) trips it; calls 15-24 are refused; the probe 25 fails and so
// does the probe 36, each re-opening it; call 47 closes it. It refuses 30
// calls, of which 7 (40-46) succeeded.
func TestShadow_SH1_MatchesReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var trace bytes.Buffer
		rec, err := record.New(&trace, record.Config{})
		require.NoError(t, err)
		sh, err := shadow.New(shadow.Config{Candidates: candidates()})
		require.NoError(t, err)
		svc := rampart.NewBuilder[int, string]().
			Layer(record.NewLayer[int, string](record.LayerConfig[int, string]{Recorder: rec})).
			Layer(shadow.NewLayer[int, string](sh, nil, nil)).
			Service(outage())
		live := 0
		start := time.Now()
		for i := range 60 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * 100 * time.Millisecond)))
			if _, err := svc.Call(context.Background(), i); err == nil {
				live++
			}
		}
		got := sh.Results()
		require.NoError(t, rec.Close())
		assert.Equal(t, 30, live, "the shadow changed no call")

		var cands []sim.Candidate
		for _, c := range candidates() {
			b := c.Breaker
			cands = append(cands, sim.Candidate{Name: c.Name, Breaker: &b})
		}
		want, err := sim.Replay(sim.NewTraceReader(strings.NewReader(trace.String()), "trace"), cands, sim.Config{})
		require.NoError(t, err)
		for i := range want {
			w := want[i]
			w.Series, w.Resolution, w.Bursts, w.Detected, w.Recovered = []sim.Point{}, 0, 0, 0, 0
			w.DetectMean, w.DetectMax, w.RecoverMean, w.RecoverMax = 0, 0, 0, 0
			w.LatencyP50, w.LatencyP99, w.LatencyMax, w.LatencyMeasured = 0, 0, 0, false
			assert.Equal(t, w, got[i], want[i].Name)
		}
		assert.Equal(t, 30, got[0].Refused)
		assert.Equal(t, 7, got[0].LostGoodput)
		assert.Equal(t, 3, got[0].Trips)
		assert.Equal(t, 3*time.Second, got[0].TimeOpen, "three cool-downs")
		assert.Equal(t, 60, got[0].Calls)
	})
}

// Bad configurations are errors naming what is wrong.
func TestNew_SH2_BadConfig(t *testing.T) {
	ok := circuitbreaker.Config{}
	for _, tc := range []struct {
		cfg  shadow.Config
		want string
	}{
		{shadow.Config{}, "shadow: Config.Candidates must hold at least one candidate"},
		{shadow.Config{Candidates: make([]shadow.Candidate, 9)}, "shadow: Config.Candidates must hold at most 8 candidates, got 9"},
		{shadow.Config{Candidates: []shadow.Candidate{{Name: "a", Breaker: ok}, {Name: "a", Breaker: ok}}}, `shadow: Config.Candidates[1]: each candidate needs a Name of its own, got "a"`},
		{shadow.Config{Candidates: []shadow.Candidate{{Breaker: ok}}}, `shadow: Config.Candidates[0]: each candidate needs a Name of its own, got ""`},
		{shadow.Config{Candidates: []shadow.Candidate{{Name: "a", Breaker: circuitbreaker.Config{MaxProbes: -1}}}}, `shadow: candidate "a": circuitbreaker: MaxProbes must be in [0, 1024], got -1`},
		{shadow.Config{Candidates: []shadow.Candidate{{Name: "a", Breaker: circuitbreaker.Config{Switch: &circuitbreaker.Switch{}}}}}, `shadow: candidate "a": Breaker.Switch must be nil: nothing may force a shadow`},
	} {
		_, err := shadow.New(tc.cfg)
		assert.EqualError(t, err, tc.want)
	}
	_, err := shadow.NewLayer[int, int](nil, nil, nil).Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 0, nil })).Call(context.Background(), 0)
	assert.ErrorIs(t, err, rampart.ErrNilService)
	var nilShadow *shadow.Shadow
	assert.Nil(t, nilShadow.Results(), "a nil Shadow, as NewLayer takes it, has no results")
}

// A call the live breaker refused has an unknown outcome: a candidate
// that lets it through gets the latest known outcome and counts it as
// Unknown; one that refuses it loses no known goodput.
func TestShadow_SH1_LiveRefusalIsUnknown(t *testing.T) {
	sh, err := shadow.New(shadow.Config{Candidates: []shadow.Candidate{{Name: "never trips", Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 100}}}}})
	require.NoError(t, err)
	results := []error{nil, &circuitbreaker.OpenError{}, errors.New("down"), &circuitbreaker.OpenError{}}
	i := 0
	svc := shadow.NewLayer[int, int](sh, nil, nil).Wrap(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) {
		err := results[i]
		i++
		return 0, err
	}))
	for range results {
		_, _ = svc.Call(context.Background(), 0)
	}
	r := sh.Results()[0]
	assert.Equal(t, 4, r.Calls)
	assert.Equal(t, 2, r.Unknown)
	assert.Equal(t, 2, r.Succeeded, "the first, and the refusal after it")
	assert.Equal(t, 2, r.Failed, "the failure, and the refusal after it")
}

// A dependency that panics trips the live breaker (it counts each panic
// as a failure) and the same candidate beside it: the candidates see the
// failures the live breaker counted, not calls that never ended, and the
// live row of the table counts them too. The panic reaches the caller.
func TestShadow_SH1_PanicIsAFailure(t *testing.T) {
	cfg := circuitbreaker.Config{Name: "live", Policy: circuitbreaker.Consecutive{Failures: 3}, CoolDown: time.Minute}
	live, err := circuitbreaker.New(cfg)
	require.NoError(t, err)
	cand := cfg
	cand.Name = ""
	sh, err := shadow.New(shadow.Config{Live: live, Candidates: []shadow.Candidate{{Name: "same", Breaker: cand}}})
	require.NoError(t, err)
	svc := rampart.NewBuilder[int, int]().
		Layer(shadow.NewLayer[int, int](sh, nil, nil)).
		Layer(circuitbreaker.NewLayer[int, int](live, nil)).
		Service(rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { panic("dependency bug") }))
	for range 3 {
		assert.PanicsWithValue(t, "dependency bug", func() { _, _ = svc.Call(context.Background(), 0) })
	}
	_, err = svc.Call(context.Background(), 0)
	require.ErrorIs(t, err, circuitbreaker.ErrOpen)

	rs := sh.Results()
	require.Len(t, rs, 2)
	for _, r := range rs {
		assert.Equal(t, 4, r.Calls, r.Name)
		assert.Equal(t, 1, r.Trips, r.Name)
		assert.Equal(t, 1, r.Refused, r.Name)
	}
	assert.Equal(t, 3, rs[1].Failed, "the candidate")
	assert.Equal(t, 3, rs[0].Failed, "the live row")
}

// A call later takes is settled for the candidates once its done is
// called: the success it was judged, a failure for a non-nil error, an
// ignored call when the caller cancelled first; until then the candidate
// holds its permit and counts nothing. A call later does not take is
// settled at once.
func TestShadow_SH1_LaterSettlesOnceDone(t *testing.T) {
	sh, err := shadow.New(shadow.Config{Candidates: []shadow.Candidate{{Name: "c"}}})
	require.NoError(t, err)
	var done []func(error)
	svc := shadow.NewLayer[string, string](sh, nil, func(_ context.Context, resp string, d func(error)) bool {
		if resp == "now" {
			return false
		}
		done = append(done, d)
		return true
	}).Wrap(rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) { return req, nil }))
	counts := func() [4]int {
		rs := sh.Results()
		require.Len(t, rs, 1)
		return [4]int{rs[0].Calls, rs[0].Succeeded, rs[0].Failed, rs[0].Ignored}
	}
	ctx, cancel := context.WithCancel(context.Background())
	for _, c := range []struct {
		ctx context.Context
		req string
	}{{context.Background(), "ok"}, {context.Background(), "cut"}, {ctx, "cancelled"}, {context.Background(), "now"}} {
		_, err := svc.Call(c.ctx, c.req)
		require.NoError(t, err)
	}
	require.Len(t, done, 3, "all but now")
	assert.Equal(t, [4]int{1, 1, 0, 0}, counts(), "calls, succeeded, failed, ignored: now alone")
	done[0](nil)
	done[1](errors.New("cut"))
	cancel()
	done[2](context.Canceled)
	assert.Equal(t, [4]int{4, 2, 1, 1}, counts(), "calls, succeeded, failed, ignored")
}

// TestNew_NZ1_NilPointerClockIsAnError: a Clock that is a nil pointer inside the interface is refused
// at construction, not dereferenced at the first reading mid-traffic.
func TestNew_NZ1_NilPointerClockIsAnError(t *testing.T) {
	_, err := shadow.New(shadow.Config{Clock: (*clock.Fake)(nil)})
	assert.EqualError(t, err, "shadow: Config.Clock must not be a nil func or pointer, got *clock.Fake(nil)")
}
