package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// network is how the clients reach their backends.
type network int

const (
	loopback network = iota // real HTTP on 127.0.0.1, in real time
	inMemory                // the backend is the clients' RoundTripper: no sockets, so synctest can run it
)

// simulate runs the naive and the rampart client, each against a backend of
// its own, on one schedule and with one load, and returns what happened.
// Phases are reported to progress as they happen.
func simulate(o options, nw network, progress io.Writer) (*result, error) {
	start := time.Now()
	m := o.model()
	seconds := o.seconds()
	end := o.total()

	fmt.Fprintf(progress, "outage demo: %v healthy, %v fault, %v after; %g caller requests/s to each client...\n",
		o.healthy, o.fault, o.after, o.rate)
	for _, phase := range []struct {
		at  time.Duration
		msg string
	}{
		{m.faultStart, "fault starts: the backend's downstream stalls"},
		{m.faultEnd, "fault ends: the downstream answers again"},
		{end, "load stopped; waiting for calls in flight"},
	} {
		t := time.AfterFunc(phase.at, func() {
			fmt.Fprintf(progress, "  %5.1fs  %s\n", time.Since(start).Seconds(), phase.msg)
		})
		defer t.Stop()
	}

	backends := []*backend{newBackend(m, start, seconds), newBackend(m, start, seconds)}
	var disconnect []func()
	// stop disconnects the clients, then stops the backends' workers.
	stop := sync.OnceFunc(func() {
		for _, d := range disconnect {
			d()
		}
		for _, be := range backends {
			be.stop()
		}
	})
	defer stop()
	var rts [2]http.RoundTripper
	var urls [2]string
	for i, be := range backends {
		rt, url, d, err := connect(be, nw)
		if err != nil {
			return nil, err
		}
		rts[i], urls[i] = rt, url
		disconnect = append(disconnect, d)
	}
	ramp, err := newRampart(o, rts[1], urls[1])
	if err != nil {
		return nil, err
	}
	clients := [2]client{newNaive(o, rts[0], urls[0]), ramp}

	var logs [2]*callLog
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { logs[i] = drive(c, o, start) })
	}
	wg.Wait()
	stop()

	r := &result{
		FaultMs:    ms(o.fault),
		CoolDownMs: ms(o.coolDown),
		Naive:      summarise(logs[0], backends[0], nil, o),
		Rampart:    summarise(logs[1], backends[1], ramp.breakerTransitions(), o),
		o:          o,
	}
	r.Rampart.Breaker = ramp.breakerCounts(r.Rampart)
	if ramp.shadow != nil {
		r.shadows = ramp.shadow.Results()
		r.Shadows = r.shadows
	}
	return r, nil
}

// connect returns the RoundTripper and URL through which a client reaches
// be over nw, and a function that disconnects them.
func connect(be *backend, nw network) (http.RoundTripper, string, func(), error) {
	if nw == inMemory {
		return be, "http://backend.invalid/", func() {}, nil
	}
	url, closeServer, err := serveLoopback(be)
	if err != nil {
		return nil, "", nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024
	return tr, url, func() { tr.CloseIdleConnections(); closeServer() }, nil
}

// drive sends the client o.rate caller requests per second, evenly spaced,
// from start until the end of the run, without waiting for earlier ones to
// answer: users keep arriving whether or not the backend keeps up. Both
// clients get exactly the same requests. drive returns when every call has
// finished.
func drive(c client, o options, start time.Time) *callLog {
	log := &callLog{}
	period := time.Duration(float64(time.Second) / o.rate)
	var calls sync.WaitGroup
	for i := 0; ; i++ {
		at := time.Duration(i) * period
		if at >= o.total() {
			break
		}
		time.Sleep(time.Until(start.Add(at)))
		log.started.Add(1)
		calls.Go(func() {
			begin := time.Now()
			err := c.do(context.Background())
			log.record(at, begin.Sub(start), time.Since(begin), err)
		})
	}
	calls.Wait()
	return log
}
