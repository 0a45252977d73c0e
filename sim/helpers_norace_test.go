//go:build !race

package sim_test

// raceEnabled reports whether the race detector is on: tests that replay
// long traces size them down under it (it slows a replay about tenfold).
const raceEnabled = false
