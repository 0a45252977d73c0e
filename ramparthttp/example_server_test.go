package ramparthttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/loadshed"
	"github.com/rampart-go/rampart/ramparthttp"
	"github.com/rampart-go/rampart/ratelimit"
)

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
