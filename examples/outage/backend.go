package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The backend model.
//
// A backend has a fixed number of workers and a bounded FIFO queue in front
// of them. A request that finds the queue full is refused at once with a 503.
// A worker takes the oldest queued request, calls the backend's downstream
// dependency and then works on the request for a fixed time. A worker finishes
// every request it takes, even one whose client has already given up: that
// work is wasted, as it is on real servers, which rarely notice that a caller
// has gone.
//
// The fault is a stalled downstream. From the fault's start to its end every
// downstream call hangs, until the downstream recovers or the backend's own
// timeout on it (the stall) passes, whichever comes first; a request whose
// downstream call times out fails with a 503. While the fault lasts the
// backend serves a worker's worth of requests per stall instead of per work
// time, so its queue fills and its clients time out.
//
// When the fault ends, the backend's capacity is back, but its queue is full
// of requests whose clients have given up. How long it takes to serve its
// clients again depends on the load it receives: if the load stays above its
// capacity, the queue stays full, every request waits longer than its client
// does, and all the backend's work is wasted, for as long as that load lasts
// (a metastable failure). A client that retries every timeout keeps the load
// there on its own.

// model is the backend's capacity and its fault.
type model struct {
	workers    int           // requests worked on at once
	queue      int           // requests waiting for a worker, at most
	work       time.Duration // a worker's time on one request when its downstream answers
	stall      time.Duration // how long a worker waits on the stalled downstream before failing
	faultStart time.Duration // when the downstream stalls, from the start of the run
	faultEnd   time.Duration // when it recovers
}

// backend is one instance of the model. Its timelines are counted per second
// of the run; events after the run's last second count only in the totals.
type backend struct {
	m     model
	start time.Time
	jobs  chan *job

	hits      atomic.Int64 // requests that reached the backend, refused ones included
	hitsFault atomic.Int64 // requests that arrived while the fault lasted
	wasted    atomic.Int64 // requests finished after their client gave up
	goodput   atomic.Int64 // successful responses given to a client that was still waiting

	arrivalsPerSec counter
	goodputPerSec  counter
	wastedPerSec   counter

	quit    chan struct{}
	workers sync.WaitGroup
}

// job is one queued request.
type job struct {
	gone <-chan struct{} // closed when the client has given up
	done chan int        // the status; buffered, so a worker never waits for a client
}

func newBackend(m model, start time.Time, seconds int) *backend {
	b := &backend{
		m:              m,
		start:          start,
		jobs:           make(chan *job, m.queue),
		arrivalsPerSec: newCounter(seconds),
		goodputPerSec:  newCounter(seconds),
		wastedPerSec:   newCounter(seconds),
		quit:           make(chan struct{}),
	}
	for range m.workers {
		b.workers.Go(b.work)
	}
	return b
}

// stop ends the workers, dropping what is still queued.
func (b *backend) stop() {
	close(b.quit)
	b.workers.Wait()
}

func (b *backend) since(t time.Time) time.Duration { return t.Sub(b.start) }

func (b *backend) faulty(t time.Time) bool {
	at := b.since(t)
	return at >= b.m.faultStart && at < b.m.faultEnd
}

// handle serves one request whose client is waiting on ctx, and returns its
// HTTP status, or 0 if the client gave up first.
func (b *backend) handle(ctx context.Context) int {
	now := time.Now()
	b.hits.Add(1)
	if b.faulty(now) {
		b.hitsFault.Add(1)
	}
	b.arrivalsPerSec.add(b.since(now))
	j := &job{gone: ctx.Done(), done: make(chan int, 1)}
	select {
	case b.jobs <- j:
	default:
		return http.StatusServiceUnavailable // queue full
	}
	select {
	case status := <-j.done:
		return status
	case <-ctx.Done():
		return 0 // the job stays queued: a worker will do it for nobody
	}
}

func (b *backend) work() {
	for {
		select {
		case <-b.quit:
			return
		case j := <-b.jobs:
			status := b.serve()
			at := b.since(time.Now())
			select {
			case <-j.gone:
				b.wasted.Add(1)
				b.wastedPerSec.add(at)
			default:
				if status == http.StatusOK {
					b.goodput.Add(1)
					b.goodputPerSec.add(at)
				}
			}
			j.done <- status
		}
	}
}

// serve is a worker's time on one request: the downstream call, then the
// work.
func (b *backend) serve() int {
	if now := time.Now(); b.faulty(now) {
		recovers := b.m.faultEnd - b.since(now)
		if recovers >= b.m.stall {
			time.Sleep(b.m.stall)
			return http.StatusServiceUnavailable
		}
		time.Sleep(recovers)
	}
	time.Sleep(b.m.work)
	return http.StatusOK
}

// ServeHTTP makes the backend a net/http handler.
func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch status := b.handle(r.Context()); status {
	case 0:
	case http.StatusOK:
		_, _ = io.WriteString(w, "ok")
	default:
		http.Error(w, "backend unavailable", status)
	}
}

// RoundTrip makes the backend an in-memory http.RoundTripper: the model
// without sockets, so that a test can run it on synctest's virtual clock.
func (b *backend) RoundTrip(req *http.Request) (*http.Response, error) {
	status := b.handle(req.Context())
	if status == 0 {
		return nil, context.Cause(req.Context())
	}
	body := "ok"
	if status != http.StatusOK {
		body = "backend unavailable\n"
	}
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// serveLoopback serves b over real HTTP on 127.0.0.1 and returns its URL and
// a function that closes the server.
func serveLoopback(b *backend) (url string, closeServer func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", func() { _ = srv.Close() }, nil
}

// counter counts events per second of the run.
type counter []atomic.Int64

func newCounter(seconds int) counter { return make(counter, seconds) }

// add counts one event at offset at from the start; events outside the run
// are not counted.
func (c counter) add(at time.Duration) {
	if i := int(at / time.Second); at >= 0 && i < len(c) {
		c[i].Add(1)
	}
}

func (c counter) values() []int64 {
	v := make([]int64, len(c))
	for i := range c {
		v[i] = c[i].Load()
	}
	return v
}
