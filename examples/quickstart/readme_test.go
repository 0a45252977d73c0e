package quickstart_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's first screen is Example's body, so that what a new user
// copies compiles and runs.
func TestREADMEShowsExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, body, ok := strings.Cut(string(src), "func Example() {\n")
	require.True(t, ok)
	body, _, ok = strings.Cut(body, "\n}\n")
	require.True(t, ok)
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "\t// Output:") {
			continue // the example's check, not the user's code
		}
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	want := strings.Join(lines, "\n")
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(readme), "```go\n"+want+"\n```\n"),
		"README.md's install section must show examples/quickstart's Example body, without its Output line:\n%s", want)
}
