package record_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/internal/nilcheck"
	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/record"
	"github.com/rampart-go/rampart/sim"
	"github.com/rampart-go/rampart/timeout"
)

// script returns a service whose i-th call sleeps durs[i] and returns
// errs[i].
func script(durs []time.Duration, errs []error) rampart.Service[string, string] {
	i := 0
	return rampart.ServiceFunc[string, string](func(ctx context.Context, _ string) (string, error) {
		d, err := durs[i], errs[i]
		i++
		time.Sleep(d)
		return "", err
	})
}

// Each call becomes one line, which package sim reads back exactly.
func TestRecorder_SM8_WritesEntriesSimReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		rec, err := record.New(&out, record.Config{})
		require.NoError(t, err)
		start := time.Now()
		svc := record.NewLayer(record.LayerConfig[string, string]{Recorder: rec, Key: func(r string) string { return r }}).Wrap(script(
			[]time.Duration{10 * time.Millisecond, 1500 * time.Microsecond, 7, time.Second},
			[]error{nil, errors.New("boom"), context.Canceled, &timeout.Error{After: time.Second, Err: context.DeadlineExceeded}}))
		for _, key := range []string{"a", `b"\`, "", "d"} {
			_, _ = svc.Call(context.Background(), key)
		}
		require.NoError(t, rec.Close())
		require.NoError(t, rec.Close(), "twice is harmless")

		s := start.UTC().Format(time.RFC3339Nano)
		at := func(d time.Duration) string { return start.Add(d).UTC().Format(time.RFC3339Nano) }
		assert.Equal(t, `{"start":"`+s+`","duration":"10ms","outcome":"success","key":"a"}
{"start":"`+at(10*time.Millisecond)+`","duration":"1500us","outcome":"failure","class":"error","key":"b\"\\"}
{"start":"`+at(11500*time.Microsecond)+`","duration":"7ns","outcome":"failure","class":"canceled"}
{"start":"`+at(11500*time.Microsecond+7)+`","duration":"1000ms","outcome":"failure","class":"timeout","key":"d"}
`, out.String())

		tr := sim.NewTraceReader(strings.NewReader(out.String()), "out")
		var got []record.Entry
		for {
			e, err := tr.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			got = append(got, e)
		}
		require.Len(t, got, 4)
		assert.Equal(t, record.Entry{Start: start.Add(10 * time.Millisecond).UTC(), Duration: 1500 * time.Microsecond, Outcome: record.Failure, Class: "error", Key: `b"\`, Attempt: 1}, got[1])
	})
}

// Sample 3 records every third call.
func TestRecorder_SM8_Sample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		rec, err := record.New(&out, record.Config{Sample: 3})
		require.NoError(t, err)
		svc := record.NewLayer(record.LayerConfig[string, string]{Recorder: rec}).Wrap(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", nil }))
		for range 10 {
			_, _ = svc.Call(context.Background(), "")
		}
		require.NoError(t, rec.Close())
		assert.Equal(t, 3, strings.Count(out.String(), "\n"))
	})
}

// blocked is a writer that blocks until released, holding the recorder's
// writer goroutine.
type blocked struct {
	release chan struct{}
	mu      sync.Mutex
	n       int
}

func (b *blocked) Write(p []byte) (int, error) {
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

// The buffer bounds memory: while the writer is stuck, calls beyond the
// buffer are dropped and counted, and never wait.
func TestRecorder_SM8_BoundedDropsWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &blocked{release: make(chan struct{})}
		rec, err := record.New(w, record.Config{Buffer: 4})
		require.NoError(t, err)
		svc := record.NewLayer(record.LayerConfig[string, string]{Recorder: rec}).Wrap(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", nil }))
		for range 3 { // wakes the writer at 3 of 4, which then blocks
			_, _ = svc.Call(context.Background(), "")
		}
		synctest.Wait()
		start := time.Now()
		for range 10 { // 4 fit, 6 dropped
			_, _ = svc.Call(context.Background(), "")
		}
		assert.Equal(t, start, time.Now(), "no call waited")
		assert.Equal(t, uint64(6), rec.Dropped())
		close(w.release)
		require.NoError(t, rec.Close())
		assert.Equal(t, 7, w.n)
	})
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// recordOneCall records one call to w and returns what Close returns.
func recordOneCall(t *testing.T, w io.Writer) error {
	t.Helper()
	rec, err := record.New(w, record.Config{})
	require.NoError(t, err)
	svc := record.NewLayer(record.LayerConfig[string, string]{Recorder: rec}).Wrap(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", nil }))
	_, _ = svc.Call(context.Background(), "")
	return rec.Close()
}

func TestRecorder_SM8_CloseReturnsWriteError(t *testing.T) {
	defer goleak.VerifyNone(t)
	assert.EqualError(t, recordOneCall(t, failing{}), "disk full")
}

// panicking is a Writer whose Write panics.
type panicking struct{}

func (panicking) Write([]byte) (int, error) { panic("disk exploded") }

// A Writer that panics on the Recorder's goroutine does not end the
// program: its panic is the Recorder's write error, which Close returns
// as a *rampart.PanicError with the Write's stack, and nothing more is
// written; before, the program ended from the writer goroutine.
func TestRecorder_SM8_PanickingWriterIsAWriteError(t *testing.T) {
	defer goleak.VerifyNone(t)

	err := recordOneCall(t, panicking{})

	pe, ok := errors.AsType[*rampart.PanicError](err)
	require.True(t, ok, "Close's error %v", err)
	assert.Equal(t, "disk exploded", pe.Value)
	assert.Contains(t, string(pe.Stack), "record_test.panicking.Write")
}

func TestRecorder_SM8_BadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  record.Config
		w    io.Writer
		want string
	}{
		{record.Config{}, nil, "record: w must not be nil"},
		{record.Config{}, (*bytes.Buffer)(nil), "record: w must not be nil, got a nil *bytes.Buffer"},
		{record.Config{Buffer: -1}, io.Discard, "record: Buffer must be 0 (the default, 4096) or between 1 and 1048576, got -1"},
		{record.Config{Sample: -2}, io.Discard, "record: Sample must be 0 or 1 (every call) or more (one call in Sample), got -2"},
		{record.Config{FlushInterval: -1}, io.Discard, "record: FlushInterval must be 0 (the default, 1s) or positive, got -1ns"},
	} {
		_, err := record.New(tc.w, tc.cfg)
		assert.EqualError(t, err, tc.want)
	}
}

func TestRecorder_NilServiceAndRecorder(t *testing.T) {
	rec, err := record.New(io.Discard, record.Config{})
	require.NoError(t, err)
	defer rec.Close()
	_, err = record.NewLayer(record.LayerConfig[string, string]{Recorder: rec}).Wrap(nil).Call(context.Background(), "")
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "record: Wrap: rampart: nil service")
	ok := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", nil })
	_, err = record.NewLayer(record.LayerConfig[string, string]{Recorder: nil}).Wrap(ok).Call(context.Background(), "")
	assert.ErrorIs(t, err, rampart.ErrNilService)
	assert.EqualError(t, err, "record: NewLayer's Recorder: rampart: nil service")
}

// Recording a call allocates nothing.
func TestRecorder_SM8_NoAllocation(t *testing.T) {
	rec, err := record.New(io.Discard, record.Config{})
	require.NoError(t, err)
	defer rec.Close()
	svc := record.NewLayer(record.LayerConfig[string, string]{Recorder: rec}).Wrap(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", errors.ErrUnsupported }))
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = svc.Call(ctx, "") }))
}

func BenchmarkRecorder(b *testing.B) {
	ok := rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "", nil })
	for _, sample := range []int{1, 100} {
		rec, err := record.New(io.Discard, record.Config{Sample: sample, Buffer: record.MaxBuffer})
		require.NoError(b, err)
		svc := record.NewLayer(record.LayerConfig[string, string]{Recorder: rec}).Wrap(ok)
		ctx := context.Background()
		name := "every call"
		if sample > 1 {
			name = "1 in 100"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = svc.Call(ctx, "")
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = svc.Call(ctx, "")
				}
			})
		})
		b.Logf("%s: dropped %d", name, rec.Dropped())
		require.NoError(b, rec.Close())
	}
}

// Wrap is the layer applied to a service, with the same
// arguments: a nil service or Recorder fails each call.
func TestWrap_SameAsTheLayers(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(_ context.Context, i int) (int, error) { return i, nil })
	for _, tc := range []struct {
		name string
		svc  rampart.Service[int, int]
		want string
	}{
		{"nil Recorder", record.NewLayer(record.LayerConfig[int, int]{}).Wrap(ok), "record: NewLayer's Recorder: rampart: nil service"},
	} {
		_, err := tc.svc.Call(t.Context(), 1)
		assert.ErrorIs(t, err, rampart.ErrNilService, tc.name)
		assert.EqualError(t, err, tc.want, tc.name)
	}
}

// Overlapping calls, recorded for real: each batch is written in order of
// start, and what one batch cannot order (a long call written a batch
// after shorter calls that started later) the simulator's reorder window
// does, so the trace replays.
func TestRecorder_SM8_ConcurrentTraceReplays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		rec, err := record.New(&out, record.Config{FlushInterval: time.Second})
		require.NoError(t, err)
		// A request is the call's duration; "1ms" fails.
		svc := record.NewLayer(record.LayerConfig[string, string]{Recorder: rec, Key: func(r string) string { return r }}).Wrap(
			rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
				d, _ := time.ParseDuration(req)
				time.Sleep(d)
				if req == "1ms" {
					return "", errors.New("boom")
				}
				return "", nil
			}))
		start := time.Now()
		var wg sync.WaitGroup
		for _, c := range []struct {
			at  time.Duration
			req string
		}{
			{0, "100ms"},                   // returns at 0.1s: batch of 1s
			{10 * time.Millisecond, "1ms"}, // returns at 11ms: batch of 1s, before A
			{500 * time.Millisecond, "2s"}, // returns at 2.5s: batch of 3s
			{1200 * time.Millisecond, "10ms"},
		} {
			wg.Go(func() {
				time.Sleep(c.at)
				_, _ = svc.Call(context.Background(), c.req)
			})
		}
		wg.Wait()
		require.NoError(t, rec.Close())

		at := func(d time.Duration) string { return start.Add(d).UTC().Format(time.RFC3339Nano) }
		assert.Equal(t, `{"start":"`+at(0)+`","duration":"100ms","outcome":"success","key":"100ms"}
{"start":"`+at(10*time.Millisecond)+`","duration":"1ms","outcome":"failure","class":"error","key":"1ms"}
{"start":"`+at(1200*time.Millisecond)+`","duration":"10ms","outcome":"success","key":"10ms"}
{"start":"`+at(500*time.Millisecond)+`","duration":"2000ms","outcome":"success","key":"2s"}
`, out.String())

		res, err := sim.Replay(sim.NewTraceReader(strings.NewReader(out.String()), "rec.jsonl"), []sim.Candidate{{Name: "none"}}, sim.Config{})
		require.NoError(t, err)
		assert.Equal(t, 4, res[0].Calls)
		assert.Equal(t, 3, res[0].Succeeded)
		assert.Equal(t, 1, res[0].Failed)
		assert.Equal(t, 2500*time.Millisecond, res[0].Span, "from A's start to C's end")
	})
}

// A dependency that panics is an outage, not a quiet trace: each call the
// breaker counts as a failure (a panic) is a failure line, and the calls
// the breaker then refuses are refused lines, so the trace tells what the
// breaker counted. The panic still reaches the caller.
func TestRecorder_SM8_PanicIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		rec, err := record.New(&out, record.Config{})
		require.NoError(t, err)
		var seen observetest.Counter
		br, err := circuitbreaker.New(circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 3}, Observer: &seen})
		require.NoError(t, err)
		svc := rampart.NewBuilder[string, string]().
			Layer(record.NewLayer(record.LayerConfig[string, string]{Recorder: rec})).
			Layer(circuitbreaker.NewLayer[string, string](br, nil)).
			Service(rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) {
				panic("dependency bug")
			}))
		for range 3 {
			assert.PanicsWithValue(t, "dependency bug", func() { _, _ = svc.Call(context.Background(), "x") })
		}
		_, err = svc.Call(context.Background(), "x")
		require.ErrorIs(t, err, circuitbreaker.ErrOpen)
		require.NoError(t, rec.Close())

		var outcomes []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			_, rest, _ := strings.Cut(line, `"outcome":`)
			outcomes = append(outcomes, rest)
		}
		assert.Equal(t, []string{`"failure","class":"panic"}`, `"failure","class":"panic"}`, `"failure","class":"panic"}`, `"refused","class":"open"}`}, outcomes)
		assert.Equal(t, map[string]int{"success": 0, "failure": 3, "ignored": 0, "rejected": 1}, seen.Outcomes())
	})
}

// A call Later takes is recorded once its done is called, and only then:
// a success lasting until the call returned, a failure of done's error's
// class lasting until done, Ignored when the caller cancelled first; a
// call Later does not take is recorded at once, and one whose done is
// never called is never recorded.
func TestRecorder_SM8_LaterRecordsOnceDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		rec, err := record.New(&out, record.Config{})
		require.NoError(t, err)
		var done []func(error)
		svc := record.NewLayer(record.LayerConfig[string, string]{
			Recorder: rec,
			Key:      func(r string) string { return r },
			Later: func(_ context.Context, resp string, d func(error)) bool {
				if resp == "now" {
					return false
				}
				done = append(done, d)
				return true
			},
		}).Wrap(rampart.ServiceFunc[string, string](func(_ context.Context, req string) (string, error) {
			time.Sleep(time.Second)
			if req == "now" {
				return "now", nil
			}
			return "later", nil
		}))
		start := time.Now()
		for _, key := range []string{"ok", "cut", "never"} {
			_, err := svc.Call(context.Background(), key)
			require.NoError(t, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		_, err = svc.Call(ctx, "cancelled")
		require.NoError(t, err)
		_, err = svc.Call(context.Background(), "now")
		require.NoError(t, err)
		require.Len(t, done, 4, "all but now")
		time.Sleep(time.Second) // 6s from the start
		done[0](nil)
		done[1](errors.New("cut"))
		cancel()
		done[3](context.Canceled)
		require.NoError(t, rec.Close())

		// Batches are written as they fill or age: in start order within
		// each, and now's before the others'.
		lines := strings.SplitAfter(out.String(), "\n")
		slices.Sort(lines)

		at := func(d time.Duration) string { return start.Add(d).UTC().Format(time.RFC3339Nano) }
		assert.Equal(t, `{"start":"`+at(0)+`","duration":"1000ms","outcome":"success","key":"ok"}
{"start":"`+at(time.Second)+`","duration":"5000ms","outcome":"failure","class":"error","key":"cut"}
{"start":"`+at(3*time.Second)+`","duration":"3000ms","outcome":"ignored","class":"canceled","key":"cancelled"}
{"start":"`+at(4*time.Second)+`","duration":"1000ms","outcome":"success","key":"now"}
`, strings.Join(lines, ""))
	})
}

// TestRecorder_NZ1_NilRecorder calls every exported method of a nil
// *Recorder: it has recorded nothing, and there is nothing to close.
func TestRecorder_NZ1_NilRecorder(t *testing.T) {
	var r *record.Recorder
	nilcheck.Calls(t, []nilcheck.Call{
		{Name: "Dropped", Call: func() any { return r.Dropped() }, Want: uint64(0)},
		{Name: "Close", Call: func() any { return r.Close().Error() }, Want: "record: Close of a nil *Recorder"},
	})
}
