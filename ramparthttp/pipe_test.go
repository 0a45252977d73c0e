package ramparthttp_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
)

// pipeServer serves h with a real net/http server over in-memory
// connections (net.Pipe) and returns a real *http.Transport that dials it,
// whatever the URL's host. Inside a synctest bubble every wait on these
// connections is durable, so the server's and the client's timers run on
// the bubble's virtual clock and durations are exact. Everything is closed
// when the test ends.
func pipeServer(t *testing.T, h http.Handler) *http.Transport {
	t.Helper()
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	tr := &http.Transport{DialContext: l.dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
		<-served
	})
	return tr
}

// pipeListener hands the server end of each net.Pipe that dial makes.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	srv, cli := net.Pipe()
	select {
	case l.conns <- srv:
		return cli, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
