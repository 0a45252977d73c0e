package ramparthttp_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/retry"
)

// A Retry-After in seconds too large for any integer type is still a
// number of seconds: at least MaxHint, so it is capped like any huge value
// and never mistaken for a malformed header (which would fall back to the
// backoff's short delay).
func TestClient_RT7_HugeRetryAfterIsCappedAtMaxHint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   string
		wantGap time.Duration
	}{
		{name: "largest int64", value: "9223372036854775807", wantGap: 5 * time.Second},
		{name: "one past int64", value: "9223372036854775808", wantGap: 5 * time.Second},
		{name: "forty digits", value: "1234567890123456789012345678901234567890", wantGap: 5 * time.Second},
		{name: "leading zeros", value: "00000000000000000000000000000000000000002", wantGap: 2 * time.Second},
		{name: "sign is malformed", value: "+3", wantGap: 10 * time.Millisecond},
		{name: "negative is malformed", value: "-3", wantGap: 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				assert.Equal(t, tc.wantGap, retryGap(t, tc.value))
			})
		})
	}
}

// A Retry-After date in the past asks for no wait: the backoff's own delay
// applies, never a negative wait or a retry at once (httpx-retries#13,
// curl#15833); a date ahead is a wait until then.
func TestClient_RT7_RetryAfterDate(t *testing.T) {
	for name, tc := range map[string]struct {
		at      time.Duration // from now
		wantGap time.Duration
	}{
		"an hour ago":      {at: -time.Hour, wantGap: 10 * time.Millisecond},
		"now":              {at: 0, wantGap: 10 * time.Millisecond},
		"in three seconds": {at: 3 * time.Second, wantGap: 3 * time.Second},
		"in a day":         {at: 24 * time.Hour, wantGap: 5 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				date := time.Now().Add(tc.at).UTC().Format(http.TimeFormat)
				assert.Equal(t, tc.wantGap, retryGap(t, date))
			})
		})
	}
}

// retryGap returns how long a client with a 10ms backoff and a MaxHint of
// 5s waits before retrying a 503 whose Retry-After is value.
func retryGap(t *testing.T, value string) time.Duration {
	t.Helper()
	ft := &fakeTransport{statuses: []int{503, 200}, header: http.Header{"Retry-After": {value}}}
	small, err := retry.NewConstant(10 * time.Millisecond)
	require.NoError(t, err)
	c := newClient(t, ramparthttp.ClientConfig{Base: ft, Retry: ramparthttp.RetryConfig{Backoff: small, MaxHint: 5 * time.Second}})
	resp, err := c.Get("http://backend/x")
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, ft.at, 2)
	return ft.at[1].Sub(ft.at[0])
}
