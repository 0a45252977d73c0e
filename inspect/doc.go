// Package inspect serves a live page of the breakers, groups, retry
// budgets, concurrency limits and shared (fleet) breakers a program
// registers, for the people who look at it during an incident, and the
// same data as JSON for scripts.
//
// # Quick start
//
//	reg := new(inspect.Registry)
//	obs := observe.Join(metrics, reg.Observer()) // since when, transitions, refusals
//	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "payments", Observer: obs})
//	...
//	reg.AddBreaker(br)
//	reg.AddBudget("payments", rb)
//	inspect.AddGroup(reg, "tenants", group)
//	debug := http.NewServeMux() // on an address only operators reach
//	debug.Handle("/debug/rampart", reg)
//
// The page shows each breaker's state and since when, its rest of
// cool-down, the counters its policy keeps and the probes of a half-open
// round, the calls it refused and the cause of its trip; each budget's
// balance and refusals; each limit's limit, calls in flight and refusals;
// for a shared breaker, the fleet's record next to this replica's view and
// whether they agree; and the latest transitions with their causes. It
// shows a transition the moment it happens (the page's script waits at
// the server for the next change, or for RefreshInterval, 500 ms by
// default, when nothing changes) and asks again 100 ms after each answer,
// so an unchanged page is read about every 600 ms. ?format=json gives the same
// data (a [Status]) for scripts.
//
// # Exposure
//
// Nothing is mounted or registered by itself, as net/http/pprof's
// handlers are mounted by importing it: a program shows what it passes
// to the Add methods, where it mounts the [Registry]. The page names the
// program's dependencies and the errors they returned; mount it on a
// listener or behind a check that only operators pass, as pprof's.
//
// # Cost
//
// The page reads only what the values keep anyway: Breaker.State,
// Group.States, Budget.Balance, a limiter's limit and in-flight count,
// all safe to call while calls run. A registered value is read when the
// page or Status is asked for, never on a call's path. What the values
// do not keep (since when a breaker is in its state, its latest
// transitions, the calls refused) comes from the Registry's Observer,
// which a layer reports to as to any other observer: a breaker's call
// costs one interface call and a check of the event's kind, a refusal one
// atomic add. A shared breaker's fleet record is read from its store
// when the page asks for it (see Fleet).
//
// The design follows Go's own live views (net/http/pprof, expvar,
// golang.org/x/net/trace's /debug/requests) and Hystrix's dashboard.
package inspect
