// Package rampartgrpc adapts rampart stacks to gRPC (grpc-go): client
// interceptors with a circuit breaker, retries bounded by a retry budget,
// per-attempt timeouts and hedging, and server interceptors and a tap
// handle with concurrency limits, load shedding, rate limits and timeouts.
// It is a module of its own, so that the core rampart module does not
// depend on grpc-go.
//
// # Quick start
//
// Client side:
//
//	ic, err := rampartgrpc.NewUnaryClientInterceptor(rampartgrpc.ClientConfig{
//		Breaker:        br, // a *circuitbreaker.Breaker, shared by every client of the dependency
//		Retry:          rampartgrpc.RetryConfig{Methods: rampartgrpc.Methods("/pkg.Svc/Get"), Budget: rb},
//		AttemptTimeout: time.Second,
//	})
//	cc, err := grpc.NewClient(target, grpc.WithUnaryInterceptor(ic), grpc.WithDisableRetry(), …)
//
// Server side:
//
//	lim, err := concurrency.NewLayer[rampartgrpc.ServerCall, any](concurrency.Config{Limiter: l, Mode: concurrency.Refuse}) // l: a *concurrency.Limiter
//	si, err := rampartgrpc.NewUnaryServerInterceptor(rampartgrpc.ServerConfig{
//		Layers: []rampartgrpc.ServerLayer{rl, shed, lim}, // outermost first
//	})
//	srv := grpc.NewServer(grpc.UnaryInterceptor(si))
//
// [NewStreamClientInterceptor] and [NewStreamServerInterceptor] take the
// same configurations for streaming calls, and [NewTapHandle] refuses calls
// before their requests are decoded.
//
// # Client side
//
// The client stack runs, outermost first: retry, hedge, breaker,
// per-attempt timeout (the order the package rampart documentation gives).
// So every attempt asks the breaker, an open breaker ends the retries at
// once, and an attempt that runs out of time counts as a breaker failure.
// Breakers are one per client ([ClientConfig.Breaker]) or one per method or
// per target from a [circuitbreaker.Group] ([ClientConfig.Breakers],
// [PerMethod], [PerTarget]).
//
// How each attempt is judged, by default:
//
//	attempt ends with                                breaker   retried
//	OK                                               success   no
//	UNAVAILABLE                                      failure   yes, if the method is safe to repeat
//	ClientConfig.AttemptTimeout ran out              failure   yes, if the method is safe to repeat
//	DEADLINE_EXCEEDED (the caller's deadline ran     failure   no
//	  out in flight, or the server's)
//	INTERNAL, UNKNOWN, DATA_LOSS                     failure   no
//	CANCELLED, the caller did not cancel             failure   no
//	RESOURCE_EXHAUSTED (the server's back-pressure)  neither   no
//	any other code (INVALID_ARGUMENT, NOT_FOUND,     success   no
//	  PERMISSION_DENIED, …): the service answered
//	the caller cancelled                             neither   no
//	a grpc-retry-pushback-ms trailer                 —         after it; never if negative, out of
//	                                                           range or malformed
//	refused by ClientConfig.Limit (not sent)         neither   no: RESOURCE_EXHAUSTED with a RetryInfo
//
// Change the breaker's column with [ClientConfig.Classify], starting from
// [Classify]; change the retry column with [RetryConfig.Retryable],
// starting from [Retryable]. Only methods declared safe to send twice
// ([RetryConfig.Methods]) are retried or hedged; every call deposits into
// the retry budget. A server's grpc-retry-pushback-ms trailer (gRFC A6)
// sets the delay before the next attempt when it is longer than the
// backoff's, and a negative or malformed one ends the retries. A call the
// breaker refuses is not sent and fails with UNAVAILABLE, matching
// [circuitbreaker.ErrOpen]. [ClientConfig.Skip] names the methods that
// bypass all of this (health checks), and [ClientConfig.Limit] bounds the
// unary attempts in flight.
//
// [ClientConfig] and [ServerConfig] have the names, fields and meanings of
// ramparthttp's: the same Breaker, Breakers and BreakerKey, Skip, Limit,
// Hedge (nil means no hedging; a HedgeConfig without a Budget is an
// error), and AttemptTimeout (retried when it runs out). What differs is
// the protocol's: gRPC retries only UNAVAILABLE by default and only
// methods declared safe to repeat, where HTTP retries transport errors,
// 429 and 5xx of idempotent requests; the wait hint is the
// grpc-retry-pushback-ms trailer, not Retry-After.
//
// Streams are judged by their final status, retried only before the
// call is committed (before the server's response headers), and never
// ended by the per-attempt timeout once open; see
// [NewStreamClientInterceptor].
//
// # grpc-go's own retries
//
// grpc-go retries by itself when a service config carries a retryPolicy,
// inside the invoker a unary client interceptor calls: the interceptor sees
// one outcome for all of grpc-go's attempts. With both retrying, attempts
// multiply (3 of rampart's times 4 of grpc-go's is 12 calls to a failing
// server). Use one of the two:
//
//   - Recommended: rampart's retries, with [grpc.WithDisableRetry] on the
//     connection. Each attempt then consults the breaker, is bounded by the
//     retry budget shared with other clients, and is timed on its own.
//   - Or grpc-go's retryPolicy alone, with no method declared to rampart
//     (RetryConfig.Methods nil): the breaker then counts one outcome per
//     call, whatever grpc-go's attempts were, and grpc-go's
//     retryThrottling is the only budget. This is the choice for streams
//     that must be retried after they started, which grpc-go can replay and
//     the interceptor does not (a stream that receives while it sends, or
//     that failed after its response headers).
//
// # Server side
//
// The server interceptors send each call through a stack of
// [ServerLayer]s, any rampart layer typed [ServerCall] and any, in front of
// the handler. A refusal is answered with a status computed from the
// layer's error, and a grpc-retry-pushback-ms trailer telling clients when
// to come back ([ServerConfig.Skip] lets health checks past the layers):
//
//	refusal                          code                 grpc-retry-pushback-ms
//	rate limit                       RESOURCE_EXHAUSTED   the limiter's delay; -1 if no token ever comes
//	concurrency limit, load shed     UNAVAILABLE          ServerConfig.Pushback (DefaultPushback)
//	open breaker                     UNAVAILABLE          its remaining cool-down, else Pushback
//	timeout                          DEADLINE_EXCEEDED    none
//
// Per-client rate limits key calls by a metadata value ([KeyMetadata]) or
// by the peer's address ([KeyPeer]) with [ratelimit.NewKeyedLayer]. A
// [NewTapHandle] refuses even earlier, before the request is decoded and
// before a goroutine is started for it, at the price of no trailer.
//
// # Across hops
//
// grpc-go sends the time left before a call's deadline (grpc-timeout) and
// gives the server's handler that deadline; the client interceptors add
// the call's [rampart.Criticality] and attempt number in metadata
// ([CriticalityKey], [AttemptKey]) on every attempt, and
// [PropagatedLayer], first in a server's layers, gives a trusted peer's
// values to the handler's context and caps every deadline. A retry layer
// below then does not retry a call that is already a retry, and limits
// shed sheddable work first.
package rampartgrpc
