// Package shadow runs candidate circuit-breaker configurations beside the
// live one, on the same calls, without ever affecting them: each candidate
// sees every call and its outcome, decides whether it would have let the
// call through, and counts what it would have refused, how many of those
// succeeded (the goodput it would have cost), and when it would have
// opened and closed. A configuration found by a replay of a recorded
// trace (package sim) can so be tried on live traffic, during an
// incident, before it is applied.
//
// # Quick start
//
//	sh, err := shadow.New(shadow.Config{Candidates: []shadow.Candidate{
//		{Name: "half of 20", Breaker: circuitbreaker.Config{
//			Policy: circuitbreaker.FailureRate{Window: circuitbreaker.Window{Size: 20}}}},
//	}})
//	svc := rampart.NewBuilder[Req, Resp]().
//		Layer(retryLayer).
//		Layer(shadow.NewLayer[Req, Resp](sh, classify, nil)). // the breaker's classifier
//		Layer(circuitbreaker.NewLayer[Req, Resp](live, classify)).
//		Service(backend)
//	…
//	sim.WriteTable(os.Stdout, sh.Results()) // the replay's table
//
// # What a shadow sees
//
// Put the layer where a recorder goes (package record): outside the live
// breaker, inside any retry layer. Each attempt through it is one call for
// every candidate; the candidates' breakers are real breakers, given only
// permits and outcomes, so each behaves exactly as it would live, on the
// same clock (a candidate's cool-down ends as it would, its probes are the
// calls that come then). A call the live breaker (or a concurrency limit
// below the layer) refused has an unknown outcome: a candidate that would
// have let it through is given the latest known outcome, the rule a replay
// follows (package sim), and counts it as Unknown.
//
// Candidates report through the observer their Config names, as breakers
// (their Rejected, Transition and outcome events, so OpenTelemetry shows
// them beside the live breaker), and with an event of kind observe.Lost
// for each refusal of a call that succeeded.
package shadow
