package rampart_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/internal/nilcheck"
)

type nilLayer struct{}

func (nilLayer) Wrap(rampart.Service[string, string]) rampart.Service[string, string] { return nil }

// A nil service or a layer that returns nil makes the Builder return a
// service failing every call with an error naming it; nothing panics.
func TestBuilder_NilServicesFail(t *testing.T) {
	returnsNil := rampart.LayerFunc[string, string](func(rampart.Service[string, string]) rampart.Service[string, string] { return nil })
	built := func(b rampart.Builder[string, string], s rampart.Service[string, string]) func() (rampart.Service[string, string], error) {
		return func() (rampart.Service[string, string], error) { return b.Service(s), nil }
	}
	b := rampart.NewBuilder[string, string]()
	nilcheck.Run(t, "req", []nilcheck.Case[string, string]{
		{
			Name:       "nil service, no layers",
			Build:      built(b, nil),
			Want:       "rampart: Builder.Service given a nil service: rampart: nil service",
			NilService: true,
		},
		{
			Name:       "nil service under layers",
			Build:      built(b.Layer(appendLayer("a")), nil),
			Want:       "rampart: Builder.Service given a nil service: rampart: nil service",
			NilService: true,
		},
		{
			Name:       "LayerFunc returns nil",
			Build:      built(b.Layer(appendLayer("a")).Layer(returnsNil).Layer(appendLayer("b")), echo),
			Want:       "rampart: Builder.Service: layer 1 (rampart.LayerFunc[string,string]) returned a nil service: rampart: nil service",
			NilService: true,
		},
		{
			Name:       "Layer returns nil",
			Build:      built(b.Layer(nilLayer{}), echo),
			Want:       "rampart: Builder.Service: layer 0 (rampart_test.nilLayer) returned a nil service: rampart: nil service",
			NilService: true,
		},
		{
			Name: "nil LayerFunc wraps",
			Build: func() (rampart.Service[string, string], error) {
				return rampart.LayerFunc[string, string](nil).Wrap(echo), nil
			},
			Want:       "rampart: nil LayerFunc: rampart: nil service",
			NilService: true,
		},
	})
}

// A nil LayerFunc is a nil layer: the Builder skips it.
func TestBuilder_NilLayerFuncSkipped(t *testing.T) {
	svc := rampart.NewBuilder[string, string]().Layer(rampart.LayerFunc[string, string](nil)).Layer(appendLayer("x")).Service(echo)
	got, err := svc.Call(t.Context(), "")
	require.NoError(t, err)
	assert.Equal(t, "x", got)
}
