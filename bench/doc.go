// Package bench measures rampart's hot paths side by side with peer Go
// resilience libraries: sony/gobreaker, failsafe-go, afex/hystrix-go and
// eapache/go-resiliency.
//
// It is its own module so that the peers never enter rampart's go.mod. It
// holds no library code: the benchmarks live in the _test.go files,
// cmd/benchtable turns a results file into the README's table, and
// instructions.sh counts each hot path's instructions per call under
// valgrind's callgrind, from the same benchmarks.
//
// # Method
//
// Every contender is expressed as a [github.com/rampart-go/rampart.Layer] around the same no-op
// service, and every benchmark loop makes the same interface call, so the
// only difference between two rows is the library. The "floor" row in each
// scenario is the cheapest way to do the same work without a resilience
// library: a direct interface call of the no-op service, or, for the timeout
// scenarios, a bare [context.WithTimeoutCause] around that call. See
// README.md for how each peer is configured and for the results.
package bench
