package main

import (
	"fmt"
	"io"

	"github.com/rampart-go/rampart/ramparttoml"
	"github.com/rampart-go/rampart/sim"
)

// loadCandidates reads and checks a candidates file (package ramparttoml's
// settings file) and returns its candidates as the replay takes them. A
// candidate's concurrency and rate_limit tables, which the replay does
// not simulate, are noted on stderr. Every error names the file, the line
// and the key at fault.
func loadCandidates(path string, stderr io.Writer) ([]sim.Candidate, sim.Config, error) {
	f, err := ramparttoml.Load(path)
	if err != nil {
		return nil, sim.Config{}, err
	}
	out := make([]sim.Candidate, len(f.Candidates))
	for i, c := range f.Candidates {
		out[i] = c.Sim()
		if c.Concurrency != 0 || c.RateLimit != nil {
			fmt.Fprintf(stderr, "note: candidate %q: its concurrency and rate_limit tables are not replayed\n", c.Name)
		}
	}
	return out, f.Replay, nil
}
