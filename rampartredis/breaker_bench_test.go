package rampartredis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/rampartredis"
)

// A Closed success through a shared breaker is the plain breaker's path:
// sharing adds a listener, which only transitions reach.
func BenchmarkClosedSuccess(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "plain"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			br, err := circuitbreaker.New(breakerConfig())
			require.NoError(b, err)
			if shared {
				srv := server(b)
				c := srv.Client()
				sh, err := rampartredis.Share(br, c, rampartredis.Config{Refresh: time.Hour})
				require.NoError(b, err)
				b.Cleanup(func() { sh.Close() })
			}
			b.ReportAllocs()
			for b.Loop() {
				p, _ := br.TryAcquire()
				p.Success()
			}
		})
	}
}

func TestShare_FL4_ClosedSuccessAllocatesNothing(t *testing.T) {
	srv := server(t)
	br, err := circuitbreaker.New(breakerConfig())
	require.NoError(t, err)
	sh, err := rampartredis.Share(br, srv.Client(), rampartredis.Config{Refresh: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { sh.Close() })
	allocs := testing.AllocsPerRun(1000, func() {
		p, _ := br.TryAcquire()
		p.Success()
	})
	assert.Zero(t, allocs)
}
