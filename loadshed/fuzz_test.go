package loadshed_test

import (
	"math"
	"testing"

	"github.com/rampart-go/rampart/loadshed"
)

// The refusal probability is always the SRE formula, within [0, 1), and
// Allow refuses exactly when the draw is below it.
func FuzzThrottle_Probability(f *testing.F) {
	f.Add(uint16(10), uint16(4), 2.0, 0.1)
	f.Add(uint16(0), uint16(0), 0.0, 0.0)
	f.Add(uint16(1000), uint16(0), 1.0, 0.999)
	f.Add(uint16(5), uint16(9), 1.1, 0.5)
	f.Fuzz(func(t *testing.T, requests, accepts uint16, k, draw float64) {
		accepts = min(accepts, requests)
		if math.IsNaN(draw) || draw < 0 || draw >= 1 {
			draw = 0.5
		}
		th, err := loadshed.NewThrottle(loadshed.ThrottleConfig{K: k, Rand: func() float64 { return draw }})
		if k != 0 && (!(k >= 1) || math.IsInf(k, 1)) {
			if err == nil {
				t.Fatalf("NewThrottle accepted K = %v", k)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			k = loadshed.DefaultK
		}
		for i := range int(requests) {
			th.Record(i < int(accepts))
		}
		p := th.Probability()
		want := max(0, (float64(requests)-k*float64(accepts))/(float64(requests)+1))
		if p != want || p < 0 || p >= 1 {
			t.Fatalf("Probability() = %v, want %v in [0, 1) (requests %d, accepts %d, K %v)", p, want, requests, accepts, k)
		}
		if allowed := th.Allow(); allowed != !(draw < p) {
			t.Fatalf("Allow() = %v with draw %v and probability %v", allowed, draw, p)
		}
	})
}
