package nilvalue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rampart-go/rampart/internal/nilvalue"
)

type fn func()

func (fn) M() {}

type ptr struct{}

func (*ptr) M() {}

func TestIs(t *testing.T) {
	type m interface{ M() }
	for name, tc := range map[string]struct {
		v    any
		want bool
	}{
		"nil interface": {v: nil, want: false},
		"nil pointer":   {v: m((*ptr)(nil)), want: true},
		"pointer":       {v: m(&ptr{}), want: false},
		"nil func":      {v: m(fn(nil)), want: true},
		"func":          {v: m(fn(func() {})), want: false},
		"value":         {v: 3, want: false},
	} {
		assert.Equal(t, tc.want, nilvalue.Is(tc.v), name)
	}
}
