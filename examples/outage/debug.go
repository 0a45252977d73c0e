package main

import (
	"fmt"
	"net"
	"net/http"

	"github.com/rampart-go/rampart/inspect"
)

// debugPath is where -debug serves the live page.
const debugPath = "/debug/rampart"

// serveDebug starts serving a new inspect.Registry's live page on addr at
// debugPath, and returns the registry, the address it listens on and a
// function that stops the server.
func serveDebug(addr string) (*inspect.Registry, string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", nil, fmt.Errorf("-debug: %w", err)
	}
	reg := new(inspect.Registry)
	mux := http.NewServeMux()
	mux.Handle(debugPath, reg)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed when stopped
	return reg, ln.Addr().String(), func() { srv.Close() }, nil
}
