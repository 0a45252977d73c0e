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

	type side struct {
		be   *backend
		c    client
		stop func() // closes the server, if any, and stops the backend
	}
	sides := make([]side, 2)
	stopAll := func() {
		for i, s := range sides {
			if s.stop != nil {
				s.stop()
				sides[i].stop = nil
			}
		}
	}
	defer stopAll()
	var ramp *rampartClient
	for i := range sides {
		be := newBackend(m, start, seconds)
		sides[i].be, sides[i].stop = be, be.stop
		base, url := http.RoundTripper(be), "http://backend.invalid/"
		if nw == loopback {
			u, closeServer, err := serveLoopback(be)
			if err != nil {
				return nil, err
			}
			sides[i].stop = func() { closeServer(); be.stop() }
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = 1024
			base, url = tr, u
		}
		if i == 0 {
			sides[i].c = newNaive(o, base, url)
			continue
		}
		rc, err := newRampart(o, base, url)
		if err != nil {
			return nil, err
		}
		ramp, sides[i].c = rc, rc
	}

	logs := make([]*callLog, len(sides))
	var wg sync.WaitGroup
	for i, s := range sides {
		wg.Go(func() { logs[i] = drive(s.c, o, start) })
	}
	wg.Wait()
	stopAll()

	return &result{
		FaultMs:        ms(o.fault),
		ResetTimeoutMs: ms(o.resetTimeout),
		Naive:          summarise(logs[0], sides[0].be, nil, o),
		Rampart:        summarise(logs[1], sides[1].be, ramp.breakerTransitions(), o),
		o:              o,
	}, nil
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
			log.record(begin.Sub(start), time.Since(begin), err)
		})
	}
	calls.Wait()
	return log
}
