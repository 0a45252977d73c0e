package ratelimit

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A key that a layer's call has looked up and not yet taken its token from
// is not full, so a lookup of another key in between does not drop it (a
// new full bucket for it would let the key through more than its burst).
// It is the interleaving that TestKeyed_Hammer meets when the scheduler
// preempts a call between the two, on a loaded machine.
func TestKeyed_LM16_LookedUpKeyIsKeptUntilItsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, err := NewKeyed(KeyedConfig{Limit: 1, Burst: 3})
		require.NoError(t, err)
		x := k.entry("x", true)
		k.entry("y", false) // "x" is now the least recently used, its bucket full
		assert.Same(t, x, k.keys["x"], "x is held while a call holds it")

		require.NoError(t, take(t.Context(), &x.q, Refuse, "", nil))
		x.users.Add(-1)
		assert.Same(t, x.q.lim, k.Limiter("x"), "the same bucket, one token spent")
		for range 2 {
			assert.NoError(t, k.take(t.Context(), "x", Refuse))
		}
		assert.ErrorIs(t, k.take(t.Context(), "x", Refuse), ErrLimited, "exactly its burst of 3")
		assert.Zero(t, x.users.Load())
	})
}
