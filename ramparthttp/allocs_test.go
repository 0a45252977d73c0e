package ramparthttp_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
)

// memTransport answers every request in memory with the same 200
// response and an empty body, allocating nothing, so that what a stack
// around it allocates is all the stack's.
type memTransport struct{ resp http.Response }

func (m *memTransport) RoundTrip(*http.Request) (*http.Response, error) {
	m.resp.Body = eofBody{} // the stack may have put a wrapper there
	return &m.resp, nil
}

// eofBody is a body at its end; a zero-size value, it allocates nothing
// when stored in an interface.
type eofBody struct{}

func (eofBody) Read([]byte) (int, error) { return 0, io.EOF }
func (eofBody) Close() error             { return nil }

// The allocations NewTransport's stack adds to a request, over calling
// the base RoundTripper directly (bench/README.md, Findings, has the same
// count against a loopback GET, where net/http adds 3 more under a
// cancelable context):
//   - retry + budget + breaker: 1, the breaker's judged body, which holds
//     the permit until the body is read to its end or closed (the retry
//     layer and the budget allocate nothing);
//   - with an AttemptTimeout as well: 6 more, 7 in all: the deadline
//     context (context.WithDeadlineCause's timerCtx, its cancel func, and
//     its time.AfterFunc: the callback and the runtime timer: 4), the copy
//     of the request that carries the attempt's context
//     (Request.WithContext: 1), and the body wrapper that cancels that
//     context when the body is closed (1).
func TestTransport_AllocsOverBare(t *testing.T) {
	base := &memTransport{resp: http.Response{StatusCode: http.StatusOK, Header: http.Header{}}}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://mem.test/", nil)
	require.NoError(t, err)
	buf := make([]byte, 16)
	allocs := func(rt http.RoundTripper) float64 {
		return testing.AllocsPerRun(1000, func() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = resp.Body.Read(buf)
			_ = resp.Body.Close()
		})
	}
	bare := allocs(base)
	for _, tc := range []struct {
		name string
		cfg  ramparthttp.ClientConfig
		want float64
	}{
		{name: "retry+budget+breaker", want: 1, cfg: ramparthttp.ClientConfig{Base: base,
			Retry:   ramparthttp.RetryConfig{Budget: allocsBudget(t)},
			Breaker: allocsBreaker(t),
		}},
		{name: "retry+budget+breaker+AttemptTimeout", want: 7, cfg: ramparthttp.ClientConfig{Base: base,
			Retry:          ramparthttp.RetryConfig{Budget: allocsBudget(t)},
			Breaker:        allocsBreaker(t),
			AttemptTimeout: 10 * time.Second,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := ramparthttp.NewTransport(tc.cfg)
			require.NoError(t, err)
			assert.Equal(t, tc.want, allocs(rt)-bare)
		})
	}
}

func allocsBudget(t *testing.T) *budget.Budget {
	b, err := budget.New(budget.Config{})
	require.NoError(t, err)
	return b
}

func allocsBreaker(t *testing.T) *circuitbreaker.Breaker {
	b, err := circuitbreaker.New(circuitbreaker.Config{})
	require.NoError(t, err)
	return b
}
