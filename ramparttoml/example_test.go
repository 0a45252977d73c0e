package ramparttoml_test

import (
	"fmt"

	"github.com/rampart-go/rampart/ramparttoml"
)

// A settings file's candidate, as a replay, a shadow and a running
// breaker take it.
func Example() {
	f, err := ramparttoml.Parse("candidates.toml", []byte(`
[[candidate]]
name = "half of 20, 5s"
timeout = "1s"
[candidate.breaker]
cool_down = "5s"
[candidate.breaker.failure_rate]
ratio = 0.5
window = {size = 20}
[candidate.retry]
max_attempts = 2
[candidate.concurrency]
max = 64
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := f.Candidate("")
	if err != nil {
		fmt.Println(err)
		return
	}
	sh, err := c.Shadow()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Name, c.Timeout, c.Breaker.CoolDown, c.Breaker.Policy, c.Retry.MaxAttempts, c.Concurrency)
	fmt.Println(sh.Name, sh.Breaker.CoolDown)

	_, err = ramparttoml.Parse("c.toml", []byte("[[candidate]]\nname = \"a\"\n[candidate.breaker]\nmax_probez = 2\n"))
	fmt.Println(err)
	// Output:
	// half of 20, 5s 1s 5s {{20 0s 0 0} 0.5} 2 64
	// half of 20, 5s 5s
	// c.toml:4: candidate.0.breaker.max_probez: unknown key "max_probez" (misspelt?)
}
