// Package ramparttoml reads rampart's settings file: one TOML format for
// a stack's settings, whichever tool reads it, so that a configuration a
// replay found can be shadowed on live traffic and then applied as it is.
// cmd/rampart-sim replays a trace through its candidates
// ([Candidate.Sim]); package shadow runs one beside the live breaker
// ([Candidate.Shadow]); a running program applies one with the packages'
// Tune methods (examples/reload does, on SIGHUP).
//
// # Quick start
//
//	f, err := ramparttoml.Load("candidates.toml") // checks the whole file
//	if err != nil {
//		log.Fatal(err) // c.toml:4: candidate.0.breaker.max_probes: circuitbreaker: MaxProbes must be in [0, 1024], got 5000
//	}
//	c, err := f.Candidate("half of 20, 5s")
//	…
//	err = br.Tune(circuitbreaker.Tuning{CoolDown: c.Breaker.CoolDown, …, Policy: c.Breaker.Policy})
//
// # The format
//
//	[options]                   # the replay's (sim.Config), optional
//	burst_min = 5
//	resolution = "1s"
//	seed = 1
//
//	[[candidate]]               # one or more, each with its own name
//	name = "half of 20, 5s"
//	timeout = "1s"              # per attempt, inside the breaker; durations as time.ParseDuration reads them
//
//	[candidate.breaker]         # circuitbreaker.Config
//	cool_down = "5s"            # or "immediate", "forever"
//	max_cool_down = "1m"        # a growing cool-down
//	cool_down_multiplier = 2
//	max_probes = 1
//	probe_lease = "10s"
//	[candidate.breaker.consecutive]     # trip rules: Consecutive ...
//	failures = 5
//	successes = 1
//	[candidate.breaker.failure_rate]    # ... FailureRate ...
//	ratio = 0.5
//	window = {size = 20, min_calls = 10} # or {period = "10s", buckets = 10}
//	[candidate.breaker.slow_calls]      # ... SlowCalls (several: Any of them)
//	threshold = "500ms"
//	ratio = 0.5
//	window = {size = 100}
//	[candidate.breaker.probes]          # SuccessRate's probe rule
//	probes = 10
//	ratio = 0.8
//
//	[candidate.retry]           # retry.Settings and retry.Exponential
//	max_attempts = 3
//	base = "100ms"
//	max = "10s"
//	multiplier = 2
//	jitter = "full"             # or "equal", "decorrelated", "none"
//	no_budget = false
//	[candidate.retry.budget]    # budget.Config
//	window = "10s"
//	min_per_second = 10
//	ratio = 0.2
//
//	[candidate.concurrency]     # concurrency.Limiter's Max (not replayed)
//	max = 64
//	[candidate.rate_limit]      # ratelimit.Tuning (not replayed)
//	limit = 100.0               # tokens per second
//	burst = 10
//
// Every key is the snake_case of the Go field it sets, and every zero or
// missing value means what the Go field's zero value means. Unknown keys
// are errors, never ignored.
package ramparttoml
