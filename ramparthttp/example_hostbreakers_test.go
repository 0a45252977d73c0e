package ramparthttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/ramparthttp"
)

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
