package ramparthttp_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/ratelimit"
	"github.com/rampart-go/rampart/retry"
)

// An http.Client whose transport retries within limits, guards the backend
// with a circuit breaker and bounds each attempt with a timeout.
func ExampleNewTransport() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()

	br, err := circuitbreaker.New(circuitbreaker.Config{
		Policy:   circuitbreaker.Consecutive{Failures: 3},
		CoolDown: 30 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	backoff, _ := retry.NewConstant(0)
	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
		Breaker:        br,
		AttemptTimeout: 2 * time.Second,
		Retry:          ramparthttp.RetryConfig{MaxAttempts: 2, Backoff: backoff},
	})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: tr}

	for i := 1; i <= 3; i++ {
		resp, err := client.Get(down.URL)
		switch {
		case errors.Is(err, circuitbreaker.ErrOpen):
			fmt.Printf("call %d: failed fast, breaker %v\n", i, br.State().State)
		case err != nil:
			fmt.Printf("call %d: %v\n", i, err)
		default:
			resp.Body.Close()
			fmt.Printf("call %d: %s\n", i, resp.Status)
		}
	}
	// Output:
	// call 1: 503 Service Unavailable
	// call 2: failed fast, breaker open
	// call 3: failed fast, breaker open
}

// replicas is a RoundTripper made of a func, standing in for a pool of
// replicas behind one host name.
type replicas func(*http.Request) (*http.Response, error)

func (f replicas) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// The first replica hangs; after 20ms the GET is sent again, the copy
// answers, and the hanging one is cancelled. The answer's body is read
// after RoundTrip returned.
func ExampleHedgeLayer() {
	var copies atomic.Int32
	pool := replicas(func(req *http.Request) (*http.Response, error) {
		if copies.Add(1) == 1 {
			<-req.Context().Done()
			fmt.Println("first copy:", req.Context().Err())
			return nil, req.Context().Err()
		}
		body := io.NopCloser(strings.NewReader("item 1"))
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: body, Request: req}, nil
	})

	// At most one hedge per ten requests, plus 10 a second: hedges never
	// multiply the load on a replica pool that is slow because it is full.
	hedges, err := budget.New(budget.Config{Ratio: 0.1, MinPerSecond: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	hedging, err := ramparthttp.HedgeLayer(ramparthttp.HedgeConfig{Budget: hedges, Delay: 20 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	svc := ramparthttp.NewBuilder().Layer(hedging).Service(ramparthttp.FromRoundTripper(pool))
	client := &http.Client{Transport: ramparthttp.NewRoundTripper(svc)}

	resp, err := client.Get("http://replicas/item/1")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), err)
	fmt.Println("copies sent:", copies.Load())
	// Output:
	// first copy: context canceled
	// 200 item 1 <nil>
	// copies sent: 2
}

// A client of many replicas gives each host its own breaker: the replica
// that is down trips its own, and the others keep serving.
func ExampleConfig_hostBreakers() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	defer up.Close()

	hosts, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
		Breaker: circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 2},
			CoolDown: 30 * time.Second,
		},
	})
	if err != nil {
		panic(err)
	}
	tr, err := ramparthttp.NewTransport(ramparthttp.ClientConfig{
		Breakers:      hosts,
		HeaderTimeout: 2 * time.Second,
		Retry:         ramparthttp.RetryConfig{MaxAttempts: 1},
	})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: tr}

	get := func(name, url string) {
		resp, err := client.Get(url)
		switch {
		case errors.Is(err, circuitbreaker.ErrOpen):
			fmt.Println(name, "failed fast: its breaker is open")
		case err != nil:
			fmt.Println(name, err)
		default:
			resp.Body.Close()
			fmt.Println(name, resp.Status)
		}
	}
	for range 3 {
		get("down:", down.URL)
	}
	get("up:  ", up.URL)
	// Output:
	// down: 503 Service Unavailable
	// down: 503 Service Unavailable
	// down: failed fast: its breaker is open
	// up:   200 OK
}

// A rate limit of one request every two seconds: the second request is
// answered 429 with a Retry-After header saying when to come back.
func ExampleNewHandler() {
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello")
	})
	rl, err := ratelimit.NewLayer[ramparthttp.Exchange, struct{}](ratelimit.Config{Limiter: rate.NewLimiter(rate.Every(2*time.Second), 1), Mode: ratelimit.Refuse})
	if err != nil {
		panic(err)
	}
	h, err := ramparthttp.NewHandler(hello, ramparthttp.ServerConfig{
		Layers: []ramparthttp.ServerLayer{rl},
	})
	if err != nil {
		panic(err)
	}

	for range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		fmt.Printf("%d Retry-After=%q %s\n", rec.Code, rec.Header().Get("Retry-After"), strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// 200 Retry-After="" hello
	// 429 Retry-After="2" Too Many Requests
}

// Load shedding in front of a concurrency limit (Tower's load_shed): a
// request that arrives while every slot is taken is answered 503 at once
// instead of queueing, with the configured Retry-After.
func ExampleNewHandler_shedding() {
	lim, err := concurrency.New(1)
	if err != nil {
		panic(err)
	}
	shed, err := loadshed.NewLayer[ramparthttp.Exchange, struct{}](loadshed.Config{Readiness: lim})
	if err != nil {
		panic(err)
	}
	slot, err := concurrency.NewLayer[ramparthttp.Exchange, struct{}](concurrency.Config{Limiter: lim, Mode: concurrency.Wait})
	if err != nil {
		panic(err)
	}
	var h *ramparthttp.Handler
	h, err = ramparthttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/outer" {
			// A second request arrives while this one holds the only slot.
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/inner", nil))
			fmt.Println("inner:", rec.Code, "Retry-After:", rec.Header().Get("Retry-After"))
		}
		_, _ = io.WriteString(w, "served "+r.URL.Path)
	}), ramparthttp.ServerConfig{
		Layers:     []ramparthttp.ServerLayer{shed, slot},
		RetryAfter: time.Second,
	})
	if err != nil {
		panic(err)
	}

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/outer", nil))
	fmt.Println("outer:", rec.Code, rec.Body.String())
	// Output:
	// inner: 503 Retry-After: 1
	// outer: 200 served /outer
}
