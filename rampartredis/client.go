package rampartredis

import (
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix starts every Redis key and channel when the Prefix of a
// Config or QuotaConfig is empty.
const DefaultPrefix = "rampart:"

// checkClient reports a client whose commands would not end at their
// context's deadline.
func checkClient(client redis.UniversalClient) error {
	switch c := client.(type) {
	case *redis.Client:
		if !c.Options().ContextTimeoutEnabled {
			return errors.New("rampartredis: the client's Options.ContextTimeoutEnabled must be true, so that the configured Timeout bounds every command")
		}
	case *redis.ClusterClient:
		if !c.Options().ContextTimeoutEnabled {
			return errors.New("rampartredis: the client's ClusterOptions.ContextTimeoutEnabled must be true, so that the configured Timeout bounds every command")
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
