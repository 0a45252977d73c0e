package rampart_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rampart-go/rampart"
)

func TestCriticality_PG1_WordsAndContext(t *testing.T) {
	for _, c := range []rampart.Criticality{rampart.Sheddable, rampart.DefaultCriticality, rampart.Critical} {
		got, err := rampart.ParseCriticality(" " + c.String() + " ")
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	got, err := rampart.ParseCriticality("CRITICAL")
	require.NoError(t, err)
	assert.Equal(t, rampart.Critical, got)
	_, err = rampart.ParseCriticality("urgent")
	assert.EqualError(t, err, `rampart: criticality must be sheddable, default or critical, got "urgent"`)
	assert.Equal(t, "Criticality(7)", rampart.Criticality(7).String())

	ctx := context.Background()
	assert.Equal(t, rampart.DefaultCriticality, rampart.CriticalityOf(ctx))
	assert.Equal(t, rampart.Critical, rampart.CriticalityOf(rampart.WithCriticality(ctx, 9)), "stored as the nearest")
	assert.Equal(t, rampart.Sheddable, rampart.CriticalityOf(rampart.WithCriticality(ctx, -9)))
	assert.Zero(t, rampart.AttemptOf(ctx))
	assert.Equal(t, 1, rampart.AttemptOf(rampart.WithAttempt(ctx, -3)))
	assert.Equal(t, 4, rampart.AttemptOf(rampart.WithAttempt(ctx, 4)))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = rampart.CriticalityOf(ctx) }))
}
