package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// loopback serves each tier on its own net/http server on 127.0.0.1.
type loopback struct {
	mu      sync.Mutex
	servers []*http.Server
	rts     []*http.Transport
}

func (l *loopback) serve(_ string, h http.Handler) (string, http.RoundTripper) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err) // the loopback interface is missing: nothing to demonstrate
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	rt := &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 30 * time.Second}
	l.mu.Lock()
	l.servers = append(l.servers, srv)
	l.rts = append(l.rts, rt)
	l.mu.Unlock()
	return "http://" + lis.Addr().String() + "/", rt
}

func (l *loopback) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.servers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.Shutdown(ctx)
		cancel()
	}
	for _, rt := range l.rts {
		rt.CloseIdleConnections()
	}
}

// inProcess calls the tiers' handlers in this process, as a client over
// HTTP would reach them: the handler gets a request of its own whose
// context has no deadline and no values, and is cancelled when the client
// gives up (as net/http cancels it when the connection closes); only the
// headers travel. Inside a synctest bubble, every time in the chain is
// virtual and exact.
type inProcess struct {
	mu       sync.Mutex
	handlers map[string]http.Handler
}

func (p *inProcess) serve(name string, h http.Handler) (string, http.RoundTripper) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handlers == nil {
		p.handlers = map[string]http.Handler{}
	}
	p.handlers[name] = h
	return "http://" + name + ".chain/", inProcessRT{h: h}
}

func (p *inProcess) close() {}

type inProcessRT struct{ h http.Handler }

func (t inProcessRT) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(context.Background())
	r := req.Clone(ctx)
	r.RemoteAddr = "127.0.0.1:1"
	r.RequestURI = req.URL.RequestURI()
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		t.h.ServeHTTP(rec, r)
	}()
	select {
	case <-done:
		return rec.Result(), nil
	case <-req.Context().Done():
		cancel()
		return nil, req.Context().Err()
	}
}
