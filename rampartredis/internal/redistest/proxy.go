package redistest

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of a server, for partitions:
// [Proxy.Cut] closes every connection through it and refuses new ones
// until [Proxy.Heal]. Clients connect to its Addr instead of the
// server's. It also makes a slow link: [Proxy.Throttle] limits what each
// connection receives per second, and [Proxy.StallAfter] pauses it
// mid-reply.
type Proxy struct {
	Addr string // host:port to connect to

	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool                  // guarded by mu
	conns map[net.Conn]struct{} // guarded by mu
	// rate is the bytes per second forwarded to each client (0: no
	// limit); after each marker the forwarding pauses for stall. Guarded
	// by mu.
	rate   int
	marker []byte
	stall  time.Duration
}

// NewProxy starts a proxy to target for t and stops it when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

// forward pipes c to a new connection to the target until either ends
// or the proxy is cut.
func (p *Proxy) forward(c net.Conn) {
	if !p.track(c) {
		c.Close()
		return
	}
	defer p.untrack(c)
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(s) {
		s.Close()
		return
	}
	defer p.untrack(s)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { p.down(c, s); done <- struct{}{} }()
	<-done
}

// down forwards what the server sends to the client, as slowly as the
// proxy is told to.
func (p *Proxy) down(client, server net.Conn) {
	buf := make([]byte, 32*1024)
	for {
		n, err := server.Read(buf)
		if n > 0 && !p.send(client, buf[:n]) {
			return
		}
		if err != nil {
			return
		}
	}
}

// send writes b to the client, pausing after each marker and keeping to
// the rate: writes of a tenth of a second's worth, each followed by the
// time it takes at the rate (the link's latency, not a wait for an
// outcome). It reports false if the client is gone.
func (p *Proxy) send(client net.Conn, b []byte) bool {
	p.mu.Lock()
	rate, marker, stall := p.rate, p.marker, p.stall
	p.mu.Unlock()
	for len(b) > 0 {
		n := len(b)
		cut := false
		if i := bytes.Index(b, marker); len(marker) > 0 && i >= 0 {
			n, cut = i+len(marker), true
		}
		if rate > 0 {
			n, cut = min(n, max(rate/10, 1)), cut && n <= max(rate/10, 1)
		}
		if _, err := client.Write(b[:n]); err != nil {
			return false
		}
		b = b[n:]
		if rate > 0 {
			time.Sleep(time.Duration(n) * time.Second / time.Duration(rate))
		}
		if cut {
			time.Sleep(stall)
		}
	}
	return true
}

// Throttle limits what each connection through the proxy receives from
// the server to about bytesPerSecond (0: no limit), from the next
// bytes forwarded on.
func (p *Proxy) Throttle(bytesPerSecond int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate = bytesPerSecond
}

// StallAfter has the proxy pause for d after forwarding each occurrence
// of marker from the server (within one read of the server's bytes), as
// a slow link or a starved process would in the middle of a reply; nil
// stops it.
func (p *Proxy) StallAfter(marker []byte, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker, p.stall = marker, d
}

// track records a connection, or reports false while the proxy is cut.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// Cut closes every connection through the proxy and refuses new ones
// (accepted, then closed at once) until Heal: the clients behind it are
// partitioned from the server.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal ends a Cut: new connections reach the server again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}
