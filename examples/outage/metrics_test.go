package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/rampartotel"
)

// The -metrics server exposes the events given to its observer in
// Prometheus's text format, over real loopback HTTP.
func TestMetrics_EV11_PrometheusEndpoint(t *testing.T) {
	obs, addr, stop, err := serveMetrics("127.0.0.1:0")
	require.NoError(t, err)
	defer stop()
	obs.Observe(context.Background(), observe.Event{Source: observe.Breaker, Name: "backend", Kind: observe.Transition, From: "closed", To: "open"})

	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var got []string
	stateTimes := 0
	for line := range strings.Lines(string(body)) {
		switch {
		case strings.HasPrefix(line, "rampart_breaker_state_time_seconds_total{"):
			stateTimes++ // its values are the run's real time
		case strings.HasPrefix(line, "rampart_"):
			got = append(got, strings.TrimSpace(line))
		}
	}
	require.Equal(t, 5, stateTimes, "one series per state")
	scope := `otel_scope_name="github.com/rampart-go/rampart/rampartotel",otel_scope_schema_url="",otel_scope_version="",`
	require.Equal(t, []string{
		// A breaker's series appear together, with its first event.
		`rampart_breaker_calls_total{` + scope + `rampart_layer="circuitbreaker",rampart_name="backend",rampart_outcome="failure"} 0`,
		`rampart_breaker_calls_total{` + scope + `rampart_layer="circuitbreaker",rampart_name="backend",rampart_outcome="ignored"} 0`,
		`rampart_breaker_calls_total{` + scope + `rampart_layer="circuitbreaker",rampart_name="backend",rampart_outcome="rejected"} 0`,
		`rampart_breaker_calls_total{` + scope + `rampart_layer="circuitbreaker",rampart_name="backend",rampart_outcome="success"} 0`,
		`rampart_breaker_state{` + scope + `rampart_breaker_state="closed",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_state{` + scope + `rampart_breaker_state="forced-closed",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_state{` + scope + `rampart_breaker_state="forced-open",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_state{` + scope + `rampart_breaker_state="half-open",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_state{` + scope + `rampart_breaker_state="open",rampart_layer="circuitbreaker",rampart_name="backend"} 1`,
		`rampart_breaker_transitions_total{` + scope + `rampart_breaker_from="closed",rampart_breaker_to="open",rampart_layer="circuitbreaker",rampart_name="backend"} 1`,
		// The transitions a breaker makes by itself are there from its
		// first event, at zero.
		`rampart_breaker_transitions_total{` + scope + `rampart_breaker_from="half-open",rampart_breaker_to="closed",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_transitions_total{` + scope + `rampart_breaker_from="half-open",rampart_breaker_to="open",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
		`rampart_breaker_transitions_total{` + scope + `rampart_breaker_from="open",rampart_breaker_to="half-open",rampart_layer="circuitbreaker",rampart_name="backend"} 0`,
	}, got)
}

// The rampart client's breaker metrics add up to the run's summary, exactly:
// the model, on synctest's clock, with the OpenTelemetry observer on a
// ManualReader.
func TestMetrics_EV12_BreakerCallsMatchTheTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		obs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
		require.NoError(t, err)
		o := short()
		o.observer = obs
		r, err := simulate(o, inMemory, io.Discard)
		require.NoError(t, err)

		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		got := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "rampart.breaker.calls" {
					continue
				}
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					outcome, _ := dp.Attributes.Value(rampartotel.KeyOutcome)
					got[outcome.AsString()] += dp.Value
				}
			}
		}
		b := r.Rampart.Breaker
		t.Logf("table: %+v; metrics: %v", b, got)
		require.Equal(t, map[string]int64{"success": b.Successes, "failure": b.Failures, "ignored": 0, "rejected": b.FailedFast}, got)
		require.Equal(t, b.Calls, got["success"]+got["failure"]+got["rejected"])
		require.Equal(t, r.Rampart.FastFails, b.FailedFast)
		require.Positive(t, b.FailedFast)
		require.Positive(t, b.Failures)
	})
}

// monitoring is the folder of the Grafana dashboard and the alert rules.
const monitoring = "../../monitoring"

// dashboard is what the tests read of the Grafana dashboard.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// query is one query of the dashboard, with its panel's title.
type query struct{ panel, expr string }

// scrapeInterval is how often the dashboard test's prometheus scrapes the
// demo and how long it waits for a scrape (the timeout cannot be longer):
// a scrape of the demo built with the race detector takes 0.3 to 1.7 s
// on a machine at a load of 37 on 2 cores (a few ms without it), and a
// scrape that fails marks every series stale, which resets the alerts'
// for:.
const scrapeInterval = 3 * time.Second

// rateInterval is Grafana's $__rate_interval for scrapeInterval (four
// scrape intervals, in PromQL).
const rateInterval = "12s"

// dashboardQueries returns every query of the dashboard, its variables
// replaced as Grafana would with "All" selected and a scrapeInterval
// scrape interval.
func dashboardQueries(t *testing.T) []query {
	b, err := os.ReadFile(filepath.Join(monitoring, "grafana-dashboard.json"))
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d))
	r := strings.NewReplacer(`$__rate_interval`, rateInterval, `$name`, `.*`)
	var qs []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, query{p.Title, r.Replace(tg.Expr)})
		}
	}
	require.NotEmpty(t, qs)
	return qs
}

// metricName matches a rampart metric's name in a query: followed by its
// label matchers, as every query of the dashboard and rules writes it.
var metricName = regexp.MustCompile(`\b(rampart_[a-z_]+)[{[]`)

// metricsOf returns the rampart metric names in expr.
func metricsOf(expr string) []string {
	var names []string
	for _, m := range metricName.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
	}
	return names
}

// TestMonitoring_OP6_MetricsExist checks that every metric the dashboard
// and the alert rules query is one rampartotel exports, as the Prometheus
// exporter names it: a renamed metric fails here even where the demo does
// not produce it. The exported names are read from a registry fed one
// event of every kind of every layer.
func TestMonitoring_OP6_MetricsExist(t *testing.T) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	require.NoError(t, err)
	obs, err := rampartotel.New(rampartotel.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))})
	require.NoError(t, err)
	ctx := context.Background()
	boom := errors.New("boom")
	for s := observe.Breaker; s <= observe.Coalesce; s++ {
		o := observe.Bind(obs, s, "x")
		for k := observe.Transition; k <= observe.Rejected; k++ {
			o.Observe(ctx, observe.Event{Source: s, Name: "x", Kind: k, Attempt: 2, Duration: time.Millisecond, Err: boom, From: "closed", To: "open"})
			o.Observe(ctx, observe.Event{Source: s, Name: "x", Kind: k, Attempt: 1, Duration: time.Millisecond})
		}
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	exported := map[string]bool{}
	for _, f := range families {
		n := f.GetName()
		exported[n] = true
		if f.GetType().String() == "HISTOGRAM" {
			exported[n+"_bucket"], exported[n+"_sum"], exported[n+"_count"] = true, true, true
		}
	}
	queried := map[string]bool{}
	for _, q := range dashboardQueries(t) {
		for _, m := range metricsOf(q.expr) {
			queried[m] = true
			assert.True(t, exported[m], "panel %q queries %s, which rampartotel does not export (it exports %v)", q.panel, m, keys(exported))
		}
	}
	rules, err := os.ReadFile(filepath.Join(monitoring, "alerts.yml"))
	require.NoError(t, err)
	inRules := metricsOf(string(rules))
	assert.Len(t, inRules, 4)
	for _, m := range inRules {
		assert.True(t, exported[m], "alerts.yml queries %s, which rampartotel does not export", m)
	}
	assert.GreaterOrEqual(t, len(queried), 10, "metrics the dashboard queries: %v", keys(queried))
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestMonitoring_OP6_AlertRules runs promtool on the alert rules: they
// parse, and their unit tests pass (alerts_test.yml: each alert fires
// during a fault and resolves after it). Every alert has a test.
func TestMonitoring_OP6_AlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "the alert tests need promtool (Debian's prometheus; ./test.sh installs it)")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = monitoring
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
		assert.Contains(t, string(out), "SUCCESS")
	}
	rules, err := os.ReadFile(filepath.Join(monitoring, "alerts.yml"))
	require.NoError(t, err)
	tests, err := os.ReadFile(filepath.Join(monitoring, "alerts_test.yml"))
	require.NoError(t, err)
	alerts := regexp.MustCompile(`(?m)^\s*- alert: (\w+)`).FindAllStringSubmatch(string(rules), -1)
	require.Len(t, alerts, 3)
	for _, a := range alerts {
		assert.Contains(t, string(tests), "alertname: "+a[1], "alert %s has no unit test", a[1])
	}
}

// notFromTheDemo are the dashboard's metrics the outage demo does not
// produce: it has no rate or concurrency limit, its breaker's policy
// (Consecutive) does not time calls and ramparthttp's per-attempt timeout
// reports no event. (Its budget is not exhausted, an open breaker ending
// the retries first, but its refusals are there at zero from its
// creation.) The test checks that exactly these return nothing.
var notFromTheDemo = []string{
	"rampart_breaker_duration_seconds_bucket",
	"rampart_timeout_fired_total",
	"rampart_limit_refusals_total",
	"rampart_limit_wait_seconds_bucket",
}

// TestMonitoring_OP6_Prometheus runs a real prometheus (Debian's) that
// scrapes the outage demo's -metrics endpoint every scrapeInterval, with
// the alert rules (their for: and rate windows shortened to the demo's
// seconds), and checks that every query of the dashboard returns data for
// the metrics the demo produced, and that the breaker alert fired during
// the fault and resolved after it. It keeps the data it read as a picture
// of the dashboard's panels, the alerts' states last, and one of the
// breaker's state and the alerts alone (the test's artifacts; with
// RAMPART_DASHBOARD_PNG, the first is also written there: the README's
// picture).
func TestMonitoring_OP6_Prometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	require.NoError(t, err, "the dashboard test needs Debian's prometheus (./test.sh installs it)")

	obs, metricsAddr, stopMetrics, err := serveMetrics("127.0.0.1:0")
	require.NoError(t, err)
	defer stopMetrics()

	dir := t.TempDir()
	rules, err := os.ReadFile(filepath.Join(monitoring, "alerts.yml"))
	require.NoError(t, err)
	shortRules := strings.NewReplacer("for: 2m", "for: 2s", "for: 1m", "for: 2s", "[1m]", "["+rateInterval+"]").Replace(string(rules))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alerts.yml"), []byte(shortRules), 0o644))
	config := fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %[1]s
  evaluation_interval: 1s
rule_files: [alerts.yml]
scrape_configs:
  - job_name: outage
    static_configs:
      - targets: [%q]
`, scrapeInterval, metricsAddr)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644))
	promAddr := freeAddr(t)
	cmd := exec.Command(bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr,
		"--log.level=warn")
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
		cmd.Wait()                          //nolint:errcheck // stopped by us
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", b)
		}
	}()
	api := "http://" + promAddr
	waitFor(t, 2*time.Minute, "prometheus ready", func() bool {
		resp, err := http.Get(api + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	// The demo starts once the first scrape has happened, so that the
	// data covers the whole run.
	waitFor(t, time.Minute, "a first scrape", func() bool {
		v, err := instant(api, `up{job="outage"}`)
		return err == nil && v == 1
	})

	// A fault long enough for the breaker alert (its for: shortened to 2s)
	// to fire however the breaker's cool-downs and probes fall, and a
	// prometheus on a loaded machine misses a scrape (the breaker trips
	// two seconds in, the attempt timeout, and is not closed for about
	// ten), on the schedule a loaded machine meets while the backend is
	// healthy.
	o := loaded()
	o.healthy, o.fault, o.after = 3*time.Second, 12*time.Second, 6*time.Second
	o.observer = obs
	start := time.Now()
	r, err := simulate(o, loopback, io.Discard)
	require.NoError(t, err)
	end := time.Now()
	t.Logf("demo: rampart success rate %.2f, breaker %v", r.Rampart.SuccessRate, r.Rampart.breaker)
	// The alerts below are the fault's only if the healthy phase was
	// healthy: the breaker first left closed after the fault started.
	require.NotEmpty(t, r.Rampart.breaker)
	assert.Equal(t, circuitbreaker.Closed, r.Rampart.breaker[0].state)
	assert.GreaterOrEqual(t, r.Rampart.breaker[0].to, o.healthy, "the breaker tripped before the fault")
	// Wait for two scrapes and rule evaluations after the end.
	waitFor(t, time.Minute, "a scrape after the run", func() bool {
		v, err := instant(api, `timestamp(up{job="outage"})`)
		return err == nil && v > float64(end.Add(2*time.Second).Unix())
	})
	stopAt := time.Now()

	var panels []panelData
	for _, q := range dashboardQueries(t) {
		series, err := rangeQuery(api, q.expr, start, stopAt)
		require.NoError(t, err, q.expr)
		hasData := slices.ContainsFunc(series, func(s seriesData) bool { return s.values() > 0 })
		absent := slices.ContainsFunc(metricsOf(q.expr), func(m string) bool { return slices.Contains(notFromTheDemo, m) })
		if absent {
			assert.False(t, hasData, "panel %q: %s returns data, yet is listed among the metrics the demo does not produce", q.panel, q.expr)
		} else {
			assert.True(t, hasData, "panel %q: %s returns no data", q.panel, q.expr)
		}
		panels = append(panels, panelData{title: q.panel, expr: q.expr, series: series})
	}

	// The breaker alert fired during the fault and resolved after it:
	// some time after the fault ended it was not firing (a breaker may
	// trip again later, and one that trips with no call after it stays
	// open: the state gauge follows transitions).
	faultStart, faultEnd := start.Add(o.healthy), start.Add(o.healthy+o.fault)
	firing, err := rangeQuery(api, `ALERTS{alertname="RampartBreakerOpen",alertstate="firing"}`, start, stopAt)
	require.NoError(t, err)
	if len(firing) == 0 {
		// A scrape that fails (past its timeout, scrapeInterval) marks
		// the series stale, which resets the alert's for:. Say what
		// prometheus saw.
		for _, expr := range []string{`up{job="outage"}`, `scrape_duration_seconds{job="outage"}`, `ALERTS`} {
			series, err := rangeQuery(api, expr, start, stopAt)
			require.NoError(t, err)
			for _, s := range series {
				t.Logf("%s %v: %v", expr, s.labels, s.points)
			}
		}
	}
	require.NotEmpty(t, firing, "RampartBreakerOpen never fired")
	at := map[float64]bool{} // step times at which it fired
	first := math.Inf(1)
	for _, s := range firing {
		for _, p := range s.points {
			at[p.t] = true
			first = min(first, p.t)
		}
	}
	assert.Greater(t, first, unix(faultStart), "fired after the fault started")
	assert.Less(t, first, unix(faultEnd), "fired during the fault")
	resolved := false
	for step := math.Ceil(unix(faultEnd)*2) / 2; step <= unix(stopAt); step += 0.5 {
		resolved = resolved || step > first && !at[step]
	}
	assert.True(t, resolved, "RampartBreakerOpen did not resolve after the fault")
	alerts, err := rangeQuery(api, `ALERTS`, start, stopAt)
	require.NoError(t, err)

	png, alertsPNG := filepath.Join(t.ArtifactDir(), "dashboard.png"), filepath.Join(t.ArtifactDir(), "alerts.png")
	require.NoError(t, renderDashboard(png, alertsPNG, panels, alerts, start, stopAt, faultStart, faultEnd))
	t.Logf("pictures: %s, %s", png, alertsPNG)
	if p := os.Getenv("RAMPART_DASHBOARD_PNG"); p != "" {
		b, err := os.ReadFile(png)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
}

// unix returns t in seconds since the epoch, as Prometheus writes times.
func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// freeAddr returns a free 127.0.0.1 address for a server of another
// process to listen on.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// waitFor polls cond every 100ms until it holds, failing the test after
// limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// point is one sample of a range query.
type point struct{ t, v float64 }

// seriesData is one series of a range query.
type seriesData struct {
	labels map[string]string
	points []point
}

// values returns how many of s's points are numbers (not NaN).
func (s seriesData) values() int {
	n := 0
	for _, p := range s.points {
		if !math.IsNaN(p.v) {
			n++
		}
	}
	return n
}

// promResponse is the Prometheus HTTP API's answer to a query.
type promResponse struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

func promGet(u string) (*promResponse, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var pr promResponse
	if err := json.NewDecoder(resp.Body).Decode(&pr); err != nil {
		return nil, err
	}
	if pr.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s", pr.Error)
	}
	return &pr, nil
}

// instant returns the value of the first series expr gives now.
func instant(api, expr string) (float64, error) {
	pr, err := promGet(api + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0, err
	}
	if len(pr.Data.Result) == 0 {
		return 0, errors.New("no data")
	}
	return strconv.ParseFloat(pr.Data.Result[0].Value[1].(string), 64)
}

// rangeQuery returns the series expr gives from start to end, every 500ms.
func rangeQuery(api, expr string, start, end time.Time) ([]seriesData, error) {
	v := url.Values{"query": {expr}, "start": {ts(start)}, "end": {ts(end)}, "step": {"0.5"}}
	pr, err := promGet(api + "/api/v1/query_range?" + v.Encode())
	if err != nil {
		return nil, err
	}
	var out []seriesData
	for _, r := range pr.Data.Result {
		s := seriesData{labels: r.Metric}
		for _, p := range r.Values {
			x, _ := p[0].(float64)
			y, err := strconv.ParseFloat(p[1].(string), 64)
			if err != nil {
				return nil, err
			}
			s.points = append(s.points, point{x, y})
		}
		out = append(out, s)
	}
	return out, nil
}

func ts(t time.Time) string { return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 3, 64) }
