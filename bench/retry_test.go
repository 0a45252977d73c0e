package bench_test

import (
	"testing"
	"time"

	resbreaker "github.com/eapache/go-resiliency/breaker"
	"github.com/eapache/go-resiliency/retrier"
	"github.com/failsafe-go/failsafe-go"
	fsbudget "github.com/failsafe-go/failsafe-go/budget"
	fscircuitbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/rampart-go/rampart"
)

// The retry scenarios: a call that succeeds at once, through a retry layer
// allowing 3 attempts in all, alone (RetrySuccess) and with a retry budget
// and a circuit breaker inside it (RetryStack). The floor is the direct call.

func BenchmarkRetrySuccess(b *testing.B)         { retrySuccess().run(b, false) }
func BenchmarkRetrySuccessParallel(b *testing.B) { retrySuccess().run(b, true) }
func BenchmarkRetryStack(b *testing.B)           { retryStack().run(b, false) }
func BenchmarkRetryStackParallel(b *testing.B)   { retryStack().run(b, true) }

// attempts is every retry contender's bound on attempts, the first included.
const attempts = 3

func retrySuccess() scenario {
	return scenario{want: allSucceed, contenders: append([]contender{floor}, append(rampartRetry(),
		contender{name: "failsafe", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			return failsafeLayer(failsafe.With[Resp](failsafeRetry(false)))
		}},
		contender{name: "resiliency", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			return resiliencyLayer(resiliencyRetrier(), nil)
		}},
	)...)}
}

func retryStack() scenario {
	return scenario{want: allSucceed, contenders: append([]contender{floor}, append(rampartRetryStack(),
		contender{name: "failsafe", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			return failsafeLayer(failsafe.With[Resp](failsafeRetry(true), failsafeBreaker()))
		}},
		contender{name: "resiliency", newLayer: func(*testing.B) rampart.Layer[Req, Resp] {
			return resiliencyLayer(resiliencyRetrier(), resbreaker.New(5, 1, time.Minute))
		}},
	)...)}
}

// failsafeRetry returns failsafe-go's retry policy with rampart's attempt
// bound and, when budgeted, failsafe-go's retry budget at its defaults (at
// most 20% of in-flight executions are retries, at least 3).
func failsafeRetry(budgeted bool) retrypolicy.RetryPolicy[Resp] {
	builder := retrypolicy.NewBuilder[Resp]().WithMaxAttempts(attempts).WithBackoff(100*time.Millisecond, 10*time.Second)
	if budgeted {
		builder = builder.WithBudget(fsbudget.New())
	}
	return builder.Build()
}

// failsafeBreaker returns failsafe-go's breaker tripping after 5 failures in
// a row (5 out of the last 5).
func failsafeBreaker() fscircuitbreaker.CircuitBreaker[Resp] {
	return fscircuitbreaker.NewBuilder[Resp]().WithFailureThreshold(5).WithDelay(time.Minute).Build()
}

// resiliencyRetrier returns a go-resiliency retrier with 2 retries after
// the first attempt, backing off exponentially from 100ms, retrying every
// error.
func resiliencyRetrier() *retrier.Retrier {
	return retrier.New(retrier.ExponentialBackoff(attempts-1, 100*time.Millisecond), nil)
}
