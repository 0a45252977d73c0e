package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The summary is by nearest rank (the ⌈p·n⌉th of n round trips), over the
// commands sent within [from, to).
func TestRoundTrips_StatsByNearestRank(t *testing.T) {
	ms := time.Millisecond
	r := roundTrips{took: []timedCommand{{10 * ms, 4 * ms}, {11 * ms, 1 * ms}, {12 * ms, 3 * ms}, {13 * ms, 2 * ms}}}
	assert.Equal(t, roundTripStats{Commands: 4, MedianMS: 2, P99MS: 4, MaxMS: 4}, r.stats(0, 0))
	assert.Equal(t, roundTripStats{Commands: 2, MedianMS: 1, P99MS: 3, MaxMS: 3}, r.stats(11*ms, 13*ms))
	assert.Equal(t, roundTripStats{}, r.stats(14*ms, 0), "nothing sent")
}
