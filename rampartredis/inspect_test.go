package rampartredis_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/inspect"
	"github.com/rampart-go/rampart/rampartredis"
)

// TestRecord_OP5_FleetView checks the fleet's row on the live page of a
// replica, read from a real redis-server: the record before and after
// another replica's trip, a replica forced closed that disagrees, and
// Redis down shown as the row's error.
func TestRecord_OP5_FleetView(t *testing.T) {
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{ID: "a"})
	a := join(t, opts, breakerConfig(), scfg)
	scfg.ID = "b"
	b := join(t, opts, breakerConfig(), scfg)
	var sw circuitbreaker.Switch
	ccfg := breakerConfig()
	ccfg.Switch = &sw
	scfg.ID = "c"
	c := join(t, opts, ccfg, scfg)
	synced(t, a, b, c)
	var reg inspect.Registry
	reg.AddFleet(b.br, b.sh)
	reg.AddFleet(c.br, c.sh)
	key := b.br.State().Name

	fleets := reg.Status(t.Context()).Fleets
	require.Len(t, fleets, 2)
	assert.Equal(t, inspect.FleetRecord{Key: key, State: "closed", Replica: "b"}, fleets[0].Record)
	assert.Equal(t, "closed", fleets[0].Local.State)
	assert.True(t, fleets[0].Agree)
	assert.Equal(t, int64(0), fleets[0].Record.Generation)

	sw.ForceClosed()
	a.trip(t)
	waitFor(t, "replica b to open", stateIs(b.br, circuitbreaker.Open))
	fleets = reg.Status(t.Context()).Fleets
	rec := fleets[0].Record
	assert.Equal(t, "open", rec.State)
	assert.Equal(t, "a", rec.By)
	assert.Equal(t, "backend down", rec.Cause)
	assert.Equal(t, int64(1), rec.Generation)
	assert.Greater(t, rec.RetryAfterSeconds, 0.0)
	assert.LessOrEqual(t, rec.RetryAfterSeconds, breakerConfig().CoolDown.Seconds())
	assert.Equal(t, "open", fleets[0].Local.State)
	assert.True(t, fleets[0].Local.Remote)
	assert.True(t, fleets[0].Agree, "b follows the fleet")
	assert.Equal(t, "forced-closed", fleets[1].Local.State)
	assert.Equal(t, "c", fleets[1].Record.Replica)
	assert.False(t, fleets[1].Agree, "c is forced closed while the fleet is open")

	rr := httptest.NewRecorder()
	reg.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/?format=json", nil))
	body, err := io.ReadAll(rr.Result().Body)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(body), `"agree": false`))

	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 5e9)
	defer cancel()
	fleets = reg.Status(ctx).Fleets
	assert.NotEmpty(t, fleets[0].Error, "Redis is down")
	assert.Equal(t, inspect.FleetRecord{}, fleets[0].Record)
	assert.True(t, fleets[0].Agree, "unknown: not a disagreement")
	assert.Equal(t, "open", fleets[0].Local.State)
}

// Record of a Shared that Share did not return is an error, as Close's.
func TestRecord_OP5_NotShared(t *testing.T) {
	for _, s := range []*rampartredis.Shared{nil, {}} {
		_, err := s.Record(context.Background())
		require.EqualError(t, err, "rampartredis: the Shared was not returned by Share")
	}
}
