package sim_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/sim"
	"github.com/rampart-go/rampart/sim/internal/tracegen"
)

// The sample traces are what the generator makes (go generate ./sim
// rewrites them), and each reads without error: 3000 calls, 5 minutes.
func TestSamples_SM9_UpToDate(t *testing.T) {
	for _, s := range tracegen.Scenarios {
		t.Run(s.Name, func(t *testing.T) {
			want, err := io.ReadAll(tracegen.Reader(s, 3000))
			require.NoError(t, err)
			got, err := os.ReadFile("testdata/" + s.Name + ".jsonl")
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "testdata/%s.jsonl differs from the generator's: run go generate ./sim", s.Name)

			tr := sim.NewTraceReader(bytes.NewReader(got), s.Name)
			n := 0
			for {
				_, err := tr.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				n++
			}
			assert.Equal(t, 3000, n)
		})
	}
}
