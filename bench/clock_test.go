package bench_test

import (
	"testing"
	"time"
)

// BenchmarkClock measures the clock reads the other rows are explained by:
// time.Now reads the wall and the monotonic clock, time.Since a time.Now
// and a subtraction on the monotonic reading.
func BenchmarkClock(b *testing.B)         { clock(b, false) }
func BenchmarkClockParallel(b *testing.B) { clock(b, true) }

func clock(b *testing.B, parallel bool) {
	b.Run("now", func(b *testing.B) {
		b.ReportAllocs()
		loop(b, parallel, func() { _ = time.Now() })
	})
	start := time.Now()
	b.Run("since", func(b *testing.B) {
		b.ReportAllocs()
		loop(b, parallel, func() { _ = time.Since(start) })
	})
}

// loop calls op b.N times, serially with b.Loop or under b.RunParallel.
// The call through op costs the same in every row that uses loop.
func loop(b *testing.B, parallel bool, op func()) {
	if !parallel {
		for b.Loop() {
			op()
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			op()
		}
	})
}
