package observe_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart/internal/observetest"
	"github.com/rampart-go/rampart/observe"
)

// binder is a Binder that notes each Bind and hands out a recorder per
// binding.
type binder struct {
	observetest.Recorder
	binds []string
	bound []*observetest.Recorder
}

func (b *binder) Bind(source observe.Source, name string) observe.Observer {
	b.binds = append(b.binds, source.String()+" "+name)
	r := &observetest.Recorder{}
	b.bound = append(b.bound, r)
	return r
}

func TestBind_EV13_BindsABinderOnly(t *testing.T) {
	var b binder
	bound := observe.Bind(&b, observe.Breaker, "db")
	require.Equal(t, []string{"circuitbreaker db"}, b.binds)
	require.Same(t, b.bound[0], bound)

	var plain observetest.Recorder
	require.Same(t, &plain, observe.Bind(&plain, observe.Breaker, "db"))
	require.Nil(t, observe.Bind(nil, observe.Breaker, "db"))
}

func TestJoin_EV13_BindsItsParts(t *testing.T) {
	var b binder
	var plain observetest.Recorder
	joined := observe.Join(&b, &plain)
	bound := observe.Bind(joined, observe.Retry, "api")
	require.Equal(t, []string{"retry api"}, b.binds)

	e := observe.Event{Source: observe.Retry, Name: "api", Kind: observe.Retrying, Attempt: 2}
	bound.Observe(context.Background(), e)
	require.Equal(t, []observe.Event{e}, b.bound[0].Events(), "the binder's part gets the event through its bound form")
	require.Empty(t, b.Events(), "not through the unbound one")
	require.Equal(t, []observe.Event{e}, plain.Events())
}
