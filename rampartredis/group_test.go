package rampartredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
)

// shareGroup starts one replica whose group of per-host breakers is
// shared through its own client.
func shareGroup(t *testing.T, opts *redis.Options, gcfg circuitbreaker.GroupConfig, scfg rampartredis.Config) (*circuitbreaker.Group[string], *rampartredis.SharedGroup[string]) {
	t.Helper()
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	g, err := circuitbreaker.NewGroup[string](gcfg)
	require.NoError(t, err)
	sg, err := rampartredis.ShareGroup(g, c, scfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sg.Close()) })
	return g, sg
}

func hostGroup() circuitbreaker.GroupConfig {
	return circuitbreaker.GroupConfig{Breaker: breakerConfig()} // "payments/host"
}

// A key's breaker joins the fleet's record for the key when the group
// makes it: a trip of host a on one replica opens host a, and only it,
// on the other; a breaker the group held before ShareGroup joins too.
func TestShareGroup_FL22_NewKeyJoins(t *testing.T) {
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{Refresh: time.Hour})
	g1, sg1 := shareGroup(t, opts, hostGroup(), scfg)
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	g2, err := circuitbreaker.NewGroup[string](hostGroup())
	require.NoError(t, err)
	before := g2.Breaker("a") // held before sharing
	sg2, err := rampartredis.ShareGroup(g2, c, scfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sg2.Close()) })

	a1 := &replica{br: g1.Breaker("a")}
	g1.Breaker("b")
	g2.Breaker("b")
	assert.Equal(t, 2, sg1.Len())
	assert.Equal(t, 2, sg2.Len())
	rc := admin(t, srv)
	waitFor(t, "both replicas subscribed to hosts a and b", func() bool {
		n := numsub(t, rc, channelOf("payments/a"), channelOf("payments/b"))
		return n[channelOf("payments/a")] == 2 && n[channelOf("payments/b")] == 2
	})
	a1.trip(t)
	waitFor(t, "host a open on the other replica", stateIs(before, circuitbreaker.Open))
	assert.Same(t, before, g2.Breaker("a"))
	assert.Equal(t, circuitbreaker.Closed, g2.Breaker("b").State().State, "host b is not host a")
	assert.Equal(t, "open", rc.HGet(context.Background(), "rampart:{payments/a}:state", "state").Val())
}

// A key the group drops (idle) leaves: its channel is unsubscribed from
// and its record no longer read, while a kept key's record still is.
func TestShareGroup_FL22_EvictedKeyLeaves(t *testing.T) {
	srv := server(t)
	opts, scfg := patient(srv.Options(), rampartredis.Config{Refresh: 20 * time.Millisecond})
	gcfg := hostGroup()
	gcfg.IdleTimeout = 100 * time.Millisecond
	g, sg := shareGroup(t, opts, gcfg, scfg)
	kept, gone := g.Breaker("kept"), g.Breaker("gone")
	rc := admin(t, srv)
	waitFor(t, "both hosts subscribed", func() bool {
		n := numsub(t, rc, channelOf("payments/kept"), channelOf("payments/gone"))
		return n[channelOf("payments/kept")] == 1 && n[channelOf("payments/gone")] == 1
	})
	waitFor(t, "host gone dropped as idle", func() bool {
		assert.Same(t, kept, g.Breaker("kept")) // in use
		return g.Len() == 1
	})
	assert.Equal(t, 1, sg.Len())
	waitFor(t, "host gone's channel unsubscribed", func() bool {
		n := numsub(t, rc, channelOf("payments/kept"), channelOf("payments/gone"))
		return n[channelOf("payments/kept")] == 1 && n[channelOf("payments/gone")] == 0
	})
	// Open both records behind the replicas' backs (no publish): only a
	// read can bring it, and only the kept host is read.
	ctx := context.Background()
	for _, key := range []string{"rampart:{payments/kept}:state", "rampart:{payments/gone}:state"} {
		require.NoError(t, rc.HSet(ctx, key, "gen", 1, "state", "open", "until", -1, "cause", "", "by", "x").Err())
	}
	waitFor(t, "the kept host opened by its read", func() bool {
		g.Breaker("kept")
		return kept.State().State == circuitbreaker.Open
	})
	// Had the dropped breaker still been read, the script that opened the
	// kept one would have read it too; three more make sure.
	scripts := scriptCalls(t, rc)
	waitFor(t, "three more reads", func() bool {
		g.Breaker("kept")
		return scriptCalls(t, rc) >= scripts+3
	})
	assert.Equal(t, circuitbreaker.Closed, gone.State().State, "the dropped breaker is no longer read")
}

func TestShareGroup_FL11_BadInput(t *testing.T) {
	srv := server(t)
	g, err := circuitbreaker.NewGroup[string](hostGroup())
	require.NoError(t, err)
	var nilClient *redis.Client
	for _, tt := range []struct {
		name   string
		g      *circuitbreaker.Group[string]
		client redis.UniversalClient
		cfg    rampartredis.Config
		want   string
	}{
		{name: "nil group", client: srv.Client(), want: "rampartredis: group must not be nil"},
		{name: "nil client", g: g, want: "rampartredis: client must not be nil"},
		{name: "typed nil client", g: g, client: nilClient, want: "rampartredis: client must not be nil"},
		{name: "quorum", g: g, client: srv.Client(), cfg: rampartredis.Config{Quorum: -1},
			want: "rampartredis: Config.Quorum must be >= 0 (0 or 1: every trip opens the fleet), got -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sg, err := rampartredis.ShareGroup(tt.g, tt.client, tt.cfg)
			assert.Nil(t, sg)
			assert.EqualError(t, err, tt.want)
		})
	}
	var zero rampartredis.SharedGroup[string]
	assert.EqualError(t, zero.Close(), "rampartredis: the SharedGroup was not returned by ShareGroup")
	assert.Equal(t, 0, zero.Len())
	var none *rampartredis.SharedGroup[string]
	assert.Error(t, none.Close())
	assert.Equal(t, 0, none.Len())

	// The zero Group is a group too; Close twice does nothing more.
	var zg circuitbreaker.Group[string]
	sg, err := rampartredis.ShareGroup(&zg, srv.Client(), rampartredis.Config{})
	require.NoError(t, err)
	zg.Breaker("a")
	assert.Equal(t, 1, sg.Len())
	require.NoError(t, sg.Close())
	require.NoError(t, sg.Close())
	zg.Breaker("b")
	assert.Equal(t, 0, sg.Len(), "closed: new keys are not shared")
}
