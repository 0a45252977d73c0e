package loadshed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/internal/wrap"
	"github.com/rampart-go/rampart/loadshed"
)

// Given a limiter, loadshed sheds by its ReadyFor: sheddable calls above
// three quarters of the slots, default ones at the limit, critical ones
// only once the reserve is taken too. Given a plain Readiness, it sheds
// sheddable and default calls when not ready and lets critical ones
// through to the resource.
func TestShed_PG6_ByCriticality(t *testing.T) {
	ok := rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) { return 1, nil })
	sheddable := rampart.WithCriticality(context.Background(), rampart.Sheddable)
	critical := rampart.WithCriticality(context.Background(), rampart.Critical)
	lim, err := concurrency.New(4) // share 3, reserve 4
	require.NoError(t, err)
	svc, err := wrap.Service[int, int](ok, loadshed.NewLayer, loadshed.Config{Readiness: lim})
	require.NoError(t, err)
	calls := func() []bool {
		var got []bool
		for _, ctx := range []context.Context{sheddable, context.Background(), critical} {
			_, err := svc.Call(ctx, 1)
			got = append(got, err == nil)
		}
		return got
	}
	assert.Equal(t, []bool{true, true, true}, calls())
	for range 3 {
		require.True(t, lim.TryAcquire())
	}
	assert.Equal(t, []bool{false, true, true}, calls(), "3 of 4 held")
	require.True(t, lim.TryAcquire())
	assert.Equal(t, []bool{false, false, true}, calls(), "4 of 4 held")
	// Critical calls of the limiter's own layer take the reserve of 4:
	// now critical calls are shed too.
	release := make(chan struct{})
	held, err := wrap.Service[int, int](rampart.ServiceFunc[int, int](func(context.Context, int) (int, error) {
		<-release
		return 1, nil
	}), concurrency.NewLayer, concurrency.Config{Limiter: lim, Mode: concurrency.Refuse})
	require.NoError(t, err)
	done := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := held.Call(critical, 1)
			done <- err
		}()
	}
	require.Eventually(t, func() bool { return !lim.ReadyFor(critical) }, time.Minute, time.Millisecond)
	assert.Equal(t, []bool{false, false, false}, calls(), "4 of 4 and the reserve held")
	close(release)
	for range 4 {
		require.NoError(t, <-done)
	}
	assert.Equal(t, []bool{false, false, true}, calls(), "the reserve freed")

	plain, err := wrap.Service[int, int](ok, loadshed.NewLayer, loadshed.Config{Readiness: loadshed.ReadyFunc(func() bool { return false })})
	require.NoError(t, err)
	for ctx, want := range map[context.Context]bool{sheddable: false, context.Background(): false, critical: true} {
		_, err := plain.Call(ctx, 1)
		if want {
			assert.NoError(t, err)
		} else {
			assert.ErrorIs(t, err, loadshed.ErrOverloaded)
		}
	}
}
