package ramparthttp_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
	"github.com/rampart-go/rampart/timeout"
)

// A request to a server that never answers fails with a timeout whether or
// not the retry layer retried it: the retries' exhausted error answers
// Timeout() like the per-attempt timeout it wraps.
func TestTransport_RT11_TimeoutStaysATimeoutThroughRetries(t *testing.T) {
	for _, attempts := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("MaxAttempts %d", attempts), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done() // hangs until the attempt gives up
			}))
			defer srv.Close()
			noWait, err := retry.NewConstant(0)
			require.NoError(t, err)
			rt, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
				Base:           srv.Client().Transport,
				Retry:          ramparthttp.RetryConfig{MaxAttempts: attempts, Backoff: noWait},
				AttemptTimeout: 20 * time.Millisecond,
			})
			require.NoError(t, err)
			client := &http.Client{Transport: rt}

			resp, err := client.Get(srv.URL)
			if resp != nil {
				resp.Body.Close()
			}

			require.Error(t, err)
			assert.ErrorIs(t, err, timeout.ErrTimeout)
			assert.True(t, os.IsTimeout(err), "os.IsTimeout(%v)", err)
			var uerr *url.Error
			require.ErrorAs(t, err, &uerr)
			assert.True(t, uerr.Timeout(), "(*url.Error).Timeout()")
			var nerr net.Error
			require.ErrorAs(t, err, &nerr)
			assert.True(t, nerr.Timeout(), "net.Error's Timeout()")
			if attempts > 1 {
				var ex *retry.ExhaustedError
				require.True(t, errors.As(err, &ex), "the retries ran out: %v", err)
				assert.Equal(t, attempts, ex.Attempts)
				assert.ErrorIs(t, err, retry.ErrMaxAttempts)
			}
		})
	}
}
