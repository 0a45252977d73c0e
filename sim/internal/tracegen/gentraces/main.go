// Command gentraces writes the sample traces of package sim, 5 minutes of
// each scenario of package tracegen at 10 calls a second, to the
// directory given as its argument (sim/testdata when run by go generate
// in package sim).
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rampart-go/rampart/sim/internal/tracegen"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gentraces DIR")
		os.Exit(2)
	}
	for _, s := range tracegen.Scenarios {
		if err := write(filepath.Join(os.Args[1], s.Name+".jsonl"), s); err != nil {
			fmt.Fprintln(os.Stderr, "gentraces:", err)
			os.Exit(1)
		}
	}
}

func write(path string, s tracegen.Scenario) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, tracegen.Reader(s, 5*60*10)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
