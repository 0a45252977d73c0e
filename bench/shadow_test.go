package bench_test

import (
	"fmt"
	"testing"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/shadow"
)

// BenchmarkShadow is a Closed success through a shadow layer with 1, 2 and
// 4 candidate breakers (the floor: no layer). The cost of one candidate is
// the slope of the cost over the number of candidates; what the layer
// costs whatever the number (its tallies, judging the call) is the
// intercept. Each candidate is a Consecutive breaker, as the live one
// mirrored in BenchmarkClosedSuccess/rampart.
func BenchmarkShadow(b *testing.B) { shadowScenario().run(b, false) }

func shadowScenario() scenario {
	cs := []contender{floor}
	for _, n := range []int{1, 2, 4} {
		cs = append(cs, contender{name: fmt.Sprint(n), newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
			var cands []shadow.Candidate
			for i := range n {
				cands = append(cands, shadow.Candidate{Name: fmt.Sprint("c", i),
					Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 5 + i}}})
			}
			sh, err := shadow.New(shadow.Config{Candidates: cands})
			if err != nil {
				b.Fatal(err)
			}
			return shadow.NewLayer[Req, Resp](sh, nil, nil)
		}})
	}
	return scenario{want: allSucceed, contenders: cs}
}
