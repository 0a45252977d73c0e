//go:build race

package rampartotel_test

// raceEnabled is set under the race detector, whose allocator keeps freed
// memory a while, so that heap measurements mean nothing.
const raceEnabled = true
