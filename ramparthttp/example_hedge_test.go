package ramparthttp_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rampart-go/rampart/budget"
	"github.com/rampart-go/rampart/ramparthttp"
)

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
