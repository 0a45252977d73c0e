package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/inspect"
)

func Example() {
	reg := new(inspect.Registry)
	br, err := circuitbreaker.New(circuitbreaker.Config{
		Name:     "payments",
		Observer: reg.Observer(), // or observe.Join(metrics, reg.Observer())
		Policy:   circuitbreaker.Consecutive{Failures: 1},
	})
	if err != nil {
		panic(err)
	}
	reg.AddBreaker(br)
	debug := http.NewServeMux() // serve it where only operators reach it
	debug.Handle("/debug/rampart", reg)

	circuitbreaker.Run(context.Background(), br, func(context.Context) (int, error) {
		return 0, errors.New("connection refused")
	})

	rec := httptest.NewRecorder()
	debug.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/rampart?format=json", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	s := reg.Status(context.Background())
	fmt.Println(s.Breakers[0].Name, s.Breakers[0].State, s.Breakers[0].Cause)
	t := s.Transitions[0]
	fmt.Printf("%s: %s > %s: %s\n", t.Name, t.From, t.To, t.Cause)
	// Output:
	// 200 application/json
	// payments open connection refused
	// payments: closed > open: connection refused
}
