//go:build !race

package rampartotel_test

const raceEnabled = false
