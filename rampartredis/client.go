package rampartredis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/rampart-go/rampart/internal/nilvalue"
)

// DefaultPrefix starts every Redis key and channel when the Prefix of a
// Config or QuotaConfig is empty.
const DefaultPrefix = "rampart:"

// checkClient reports a nil client (a typed nil too) or one whose
// commands would not end at their context's deadline.
func checkClient(client redis.UniversalClient) error {
	if client == nil || nilvalue.Is(client) {
		return errors.New("rampartredis: client must not be nil")
	}
	switch c := client.(type) {
	case *redis.Client:
		if !c.Options().ContextTimeoutEnabled {
			return errors.New("rampartredis: the client's Options.ContextTimeoutEnabled must be true, so that the configured Timeout bounds every command")
		}
	case *redis.ClusterClient:
		if !c.Options().ContextTimeoutEnabled {
			return errors.New("rampartredis: the client's ClusterOptions.ContextTimeoutEnabled must be true, so that the configured Timeout bounds every command")
		}
	case *redis.Ring:
		if !c.Options().ContextTimeoutEnabled {
			return errors.New("rampartredis: the client's RingOptions.ContextTimeoutEnabled must be true, so that the configured Timeout bounds every command")
		}
	}
	return nil
}

// randomID returns a random replica id.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// reloadSlots has a cluster client reload the cluster's slots after a
// failed command, in the background (once at a time, as go-redis does on
// a MOVED reply): a cluster client learns that a replica took over a
// dead master's slots only from a MOVED reply, which the dead master
// cannot send, or every ClusterOptions.ClusterStateReloadInterval (a
// minute by default), so without it the fleet would stay cut off from
// the new master for up to that long. Other clients need nothing.
func reloadSlots(client redis.UniversalClient) {
	if c, ok := client.(*redis.ClusterClient); ok {
		c.ReloadState(context.Background())
	}
}
