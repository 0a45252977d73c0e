// Package ramparthttp adapts rampart stacks to net/http, so that an
// [*http.Client] gains a circuit breaker, retries bounded by a retry budget
// and per-attempt timeouts, and an [http.Handler] gains concurrency limits,
// load shedding and rate limits, without the caller writing type parameters.
//
// # Quick start
//
// A client ([NewTransport]):
//
//	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
//		Breaker:       br,                                  // a *circuitbreaker.Breaker
//		Retry:         ramparthttp.RetryConfig{Budget: rb}, // a *budget.Budget
//		HeaderTimeout: time.Second,
//	})
//	if err != nil { ... }
//	client := &http.Client{Transport: tr}
//
// A server ([NewHandler]):
//
//	h, err := ramparthttp.NewHandler(mux, ramparthttp.ServerConfig{
//		Layers: []ramparthttp.ServerLayer{rateLimit, shed, concurrency}, // outermost first
//	})
//	if err != nil { ... }
//	http.ListenAndServe(addr, h)
//
// # Client side
//
// [NewTransport] builds the recommended stack around a base
// [http.RoundTripper], in the order the [rampart] package documentation
// gives: retries outside the breaker, so each attempt consults the breaker
// and an open breaker ends the retries at once (the caller gets an error
// matching [circuitbreaker.ErrOpen], wrapped by net/http in a *url.Error);
// per-attempt timeouts inside it, so a timed-out attempt counts as a
// breaker failure. [ClientConfig] also hedges ([ClientConfig.Hedge]),
// bounds the attempts in flight ([ClientConfig.Limit]) and lets health
// checks bypass everything ([ClientConfig.Skip]). For another order or
// more layers, build the stack from the HTTP layers ([RetryLayer],
// [HedgeLayer], [BreakerLayer], [TimeoutLayer], [HeaderTimeoutLayer]),
// which know about bodies and Retry-After, and any
// rampart.Layer[*http.Request, *http.Response], with [NewBuilder], and
// turn it into a RoundTripper with [NewRoundTripper]. Each HTTP layer
// takes a Config ([RetryConfig], [HedgeConfig], [BreakerConfig]), or a
// duration where that is its whole configuration.
//
// One breaker ([ClientConfig.Breaker]) guards one dependency. A client
// that talks to many hosts (replicas, shards) gives each host its own
// breaker with [ClientConfig.Breakers], a [circuitbreaker.Group] keyed by
// [ClientConfig.BreakerKey] (by default [Host]): a host that fails trips
// only its own breaker, and the others keep getting traffic.
//
// Two timeouts bound an attempt. [ClientConfig.HeaderTimeout] bounds the
// wait for the response headers only, so a server that never answers is a
// failure while a slow but healthy download is not: use it when responses
// may be large or streamed. [ClientConfig.AttemptTimeout] bounds the whole
// attempt, body included: use it when the exchange must end in time
// whatever is being sent. Both may be set, the header timeout the shorter.
//
// How each attempt is judged, by default:
//
//	attempt                                  breaker   retried
//	transport error                          failure   yes
//	5xx except 501 and 505                   failure   yes
//	429 Too Many Requests                    neither   yes, after its Retry-After
//	501, 505 (no retry can cure them)        success   no
//	any other status (2xx, 3xx, 4xx)         success   no
//	body read fails (stall or reset)         failure   (already returned)
//	caller cancelled                         neither   no
//
// A 429 is the server asking this client to slow down, not evidence that
// the dependency is down, so the breaker counts it neither way. Change the
// breaker's column with [ClientConfig.Classify] (or
// [BreakerConfig.Classify]), starting from [Classify]; change the retry column with
// [RetryConfig.Retryable], starting from [Retryable]. A response judged a
// success by the breaker is judged again by its body: one whose read fails
// (a server that stalls or resets after good headers) is a failure.
//
// A response the stack does not return to the caller (one that is retried,
// or the losing copy of a hedged request) has its body closed; it is read
// to its end first only when it declares at most 4 KiB, and then for at
// most 10 ms, so its connection can be reused, and otherwise closed unread:
// a server that stalls mid-body cannot hold up the next attempt, with or
// without an AttemptTimeout. A response the stack does return is returned
// as-is, even a 503 after the last attempt: the status is the caller's to
// read, and net/http reports responses, not errors, for HTTP statuses.
//
// What is retried: requests whose method is idempotent by RFC 9110 (GET,
// HEAD, OPTIONS, TRACE, PUT, DELETE), requests carrying an Idempotency-Key
// header, and any request when [RetryConfig.RetryNonIdempotent] is set; and
// only when the body can be sent again (no body, or [http.Request.GetBody]
// set, as [http.NewRequest] does for in-memory bodies). A Retry-After header
// on a 429 or 503, in seconds or as an HTTP date, sets the next delay when it
// is longer than the backoff's. With Retry.MaxAttempts 1 nothing is retried
// and errors come back as the transport returned them.
//
// # Server side
//
// [NewHandler] puts a stack of [ServerLayer]s in front of an [http.Handler],
// so a server refuses at once what it cannot serve soon instead of letting a
// queue build up until every request is slow. A refusal is answered with a
// status computed from the layer's error, never a bare 500: 429 Too Many
// Requests for a rate limit ([ratelimit.ErrLimited]); 503 Service Unavailable
// for a full concurrency limit, load shedding, an open breaker or a timeout;
// with a Retry-After header in whole seconds, rounded up, from the error's
// RetryAfter method.
// [ServerConfig.OnError] can answer other errors, and [ServerConfig.Skip]
// lets health checks past the layers. The request type of a server stack
// is [Exchange], which carries the ResponseWriter with the request, so any
// rampart layer composes in front of a handler, built with the type
// arguments [Exchange] and struct{} (see [ServerLayer]); [KeyPeer] and
// [KeyHeader] key a per-client rate limit. Layers that send a request
// twice (retry, hedge) do not belong there.
//
// # Across hops
//
// In a chain of services, what a caller says about a request travels with
// it: [Propagate], as the Base of a client, sends each attempt's time left
// before its context's deadline ([TimeoutHeader], relative, in
// grpc-timeout's format), its attempt number ([AttemptHeader]) and its
// [rampart.Criticality] ([CriticalityHeader]); [PropagatedLayer], first in
// a server's layers, gives a trusted peer's values to the handler's
// context, with its deadline capped, so a handler stops working for a
// caller that gave up, a retry layer below does not retry a request that
// is already a retry, and limits shed sheddable work first. A server can
// ask clients not to retry its refusals ([NoRetryHeader]); [RetryLayer]
// obeys.
//
// rampartgrpc mirrors this package for gRPC: the same [ClientConfig] and
// [ServerConfig] names and fields, with the protocol's own defaults where
// they must differ.
package ramparthttp
