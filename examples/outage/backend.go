package main

import (
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// schedule is when the backend is down, measured from start.
type schedule struct {
	start       time.Time
	healthy     time.Duration // healthy before the outage
	outage      time.Duration // how long the backend is down
	slowLatency time.Duration // how long a slow failure hangs before answering 503
}

func (s schedule) outageStart() time.Time { return s.start.Add(s.healthy) }
func (s schedule) recovery() time.Time    { return s.outageStart().Add(s.outage) }
func (s schedule) down(t time.Time) bool {
	return !t.Before(s.outageStart()) && t.Before(s.recovery())
}

// backend is a real net/http server on 127.0.0.1 that follows a schedule:
// healthy, then down (half its answers are an immediate 503, half hang for
// slowLatency and then answer 503), then healthy again.
type backend struct {
	sched       schedule
	hits        atomic.Int64 // every request that reached the handler
	hitsOutage  atomic.Int64 // requests that arrived while the backend was down
	srv         *http.Server
	addr        string
	healthyWork time.Duration
}

func startBackend(sched schedule) (*backend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &backend{sched: sched, addr: "http://" + ln.Addr().String(), healthyWork: 2 * time.Millisecond}
	b.srv = &http.Server{Handler: http.HandlerFunc(b.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	n := b.hits.Add(1)
	if !b.sched.down(time.Now()) {
		time.Sleep(b.healthyWork)
		_, _ = w.Write([]byte("ok"))
		return
	}
	b.hitsOutage.Add(1)
	if n%2 == 0 {
		// A slow failure: the backend is overloaded and answers late, or
		// never if the client gives up first.
		select {
		case <-time.After(b.sched.slowLatency):
		case <-r.Context().Done():
			return
		}
	}
	http.Error(w, "backend down", http.StatusServiceUnavailable)
}

func (b *backend) close() { _ = b.srv.Close() }
