// Package inbound reads what a trusted peer says about a request (its
// criticality and attempt number) from header or metadata values, by the
// one rule both adapters document: malformed values are ignored, and of
// several well-formed ones the least criticality and the highest attempt
// win, so a repeat can only lower or end, never raise.
package inbound

import (
	"strconv"
	"strings"

	"github.com/rampart-go/rampart"
)

// Each calls f with each comma-separated element of vs, trimmed of spaces
// and tabs.
func Each(vs []string, f func(string)) {
	for _, v := range vs {
		for e := range strings.SplitSeq(v, ",") {
			f(strings.Trim(e, " \t"))
		}
	}
}

// Criticality returns the least criticality among the well-formed values
// of vs, and whether there was one.
func Criticality(vs []string) (c rampart.Criticality, ok bool) {
	Each(vs, func(v string) {
		if t, err := rampart.ParseCriticality(v); err == nil && (!ok || t < c) {
			c, ok = t, true
		}
	})
	return c, ok
}

// Attempt returns the highest attempt among the well-formed values of vs
// (1 to 4 ASCII digits, at least 1), and whether there was one.
func Attempt(vs []string) (n int, ok bool) {
	Each(vs, func(v string) {
		if len(v) < 1 || len(v) > 4 {
			return
		}
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return
			}
		}
		t, _ := strconv.Atoi(v)
		if t >= 1 && (!ok || t > n) {
			n, ok = t, true
		}
	})
	return n, ok
}
