package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/inspect"
)

// TestDebugPage_OP4_Browser opens the -debug page of a running demo in a
// real browser (Debian's chromium, headless, driven by chromedp), sees the
// breaker's row turn open within a second of the trip (from the trip's
// transition to the moment the page's row shows it, both by the system's
// clock; the page is told at once, by its long poll) and the transition
// listed with its cause, sees the page say it stopped updating once the
// server is gone, and keeps a screenshot as the test's artifact
// (go test -artifacts keeps it under -outputdir; ./test.sh does). With
// RAMPART_DEBUG_SCREENSHOT set, the screenshot is also written there (the
// README's picture). A missing chromium fails the test.
func TestDebugPage_OP4_Browser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	require.NoError(t, err, "the browser test needs Debian's chromium on PATH (./test.sh installs it)")

	reg, addr, stop, err := serveDebug("127.0.0.1:0")
	require.NoError(t, err)
	defer stop()
	o := loaded()
	o.registry = reg
	shot := os.Getenv("RAMPART_DEBUG_SCREENSHOT")
	if shot != "" {
		// The README's picture needs a probe that fails: a fault that
		// outlasts the trip (at 2s, the attempt timeout), a cool-down and
		// a probe's timeout.
		o.fault = 8 * time.Second
	}
	alloc, cancel := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 430),
	)
	defer cancel()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// The first action starts the browser, which lives as long as the
	// context of that action: no timeout on it.
	require.NoError(t, chromedp.Do(browser, chromedp.Navigate("http://"+addr+debugPath)))
	ctx, cancel := context.WithTimeout(browser, 2*time.Minute)
	defer cancel()
	// The page notes, by the system's clock, when the breaker's row first
	// shows each state: the test measures the page, not how soon
	// chromedp, asking the browser, notices it. (It asks by polls of the
	// page's script: chromedp's node queries can miss a row that the
	// page replaces several times a second.)
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`window.shown = {};
		new MutationObserver(function () {
			var row = document.querySelector('#breakers tr[data-name="backend"]');
			if (row && !(row.dataset.state in window.shown)) { window.shown[row.dataset.state] = Date.now(); }
		}).observe(document.getElementById("content"), {childList: true, subtree: true})`))
	require.NoError(t, err)

	// The page is open before the demo starts, so that it sees the whole
	// run (a browser may take seconds to start on a loaded machine).
	done := make(chan error, 1)
	go func() {
		_, err := simulate(o, loopback, io.Discard)
		done <- err
	}()
	defer func() { require.NoError(t, <-done) }()
	poll := []chromedp.PollOption{chromedp.WithPollingInterval(50 * time.Millisecond), chromedp.WithPollingTimeout(time.Minute)}
	shown, err := chromedp.Run(ctx, chromedp.Poll[map[string]int64](`"open" in window.shown && window.shown`, poll...))
	require.NoError(t, err, "the row never showed open")
	require.Contains(t, shown, "closed", "the row showed open, never closed before")
	require.Less(t, shown["closed"], shown["open"], "the row showed closed before open")
	opened := time.UnixMilli(shown["open"])
	// Date.now() is in whole milliseconds: the trip is at most one before.
	trip := lastOpen(reg.Status(ctx).Transitions, opened.Add(time.Millisecond))
	require.False(t, trip.IsZero(), "the row shows open, but no transition to open was seen before")
	assert.LessOrEqual(t, opened.Sub(trip), time.Second, "the row turned open %v after the trip", opened.Sub(trip))
	t.Logf("the row turned open %v after the trip", opened.Sub(trip))

	cause, err := chromedp.Run(ctx, chromedp.Poll[string](`(function () {
		var td = document.querySelector('#transitions tr[data-name="backend"][data-to="open"] td.cause');
		return td && td.textContent;
	})()`, poll...))
	require.NoError(t, err, "the trip is not listed")
	assert.Equal(t, "timeout: deadline of 2s exceeded", cause)

	if shot != "" {
		// The README's picture: in the middle of the fault, after a probe
		// (open, half-open, then open again), the breaker open.
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll('#transitions tr[data-to]').length >= 3 &&
			document.querySelector('#breakers tr[data-name="backend"]').dataset.state == "open"`, chromedp.WithPollingTimeout(time.Minute)))
		require.NoError(t, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(t.ArtifactDir(), "debug-page.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
	if shot != "" {
		require.NoError(t, os.WriteFile(shot, png, 0o644))
	}

	// A page whose server has gone says so, rather than showing the last
	// state as if it were live (Hystrix's dashboard kept "loading...").
	stop()
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("live").textContent.startsWith("not updating: ")`,
		chromedp.WithPollingTimeout(time.Minute)))
	require.NoError(t, err, "the page does not say it stopped updating")
}

// lastOpen returns the time of the latest transition to open in ts (newest
// first) no later than at, or the zero time.
func lastOpen(ts []inspect.Transition, at time.Time) time.Time {
	for _, tr := range ts {
		if tr.To == "open" && !tr.Time.After(at) {
			return tr.Time
		}
	}
	return time.Time{}
}
