package circuitbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
)

// One breaker per host: the bad host trips its own breaker, and traffic to
// the good host goes on. States lists every host's breaker for a status
// page.
func ExampleNewGroupLayer() {
	hosts, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
		Breaker: circuitbreaker.Config{
			Policy:   circuitbreaker.Consecutive{Failures: 2},
			CoolDown: 10 * time.Second,
		},
	})
	if err != nil {
		panic(err)
	}
	host := func(url string) string { h, _, _ := strings.Cut(url, "/"); return h }
	perHost, err := circuitbreaker.NewGroupLayer[string, string](hosts, host, nil)
	if err != nil {
		panic(err)
	}
	fetch := rampart.ServiceFunc[string, string](func(ctx context.Context, url string) (string, error) {
		if host(url) == "b.example" {
			return "", errors.New("connection refused")
		}
		return "200 OK", nil
	})
	svc := rampart.NewBuilder[string, string]().Layer(perHost).Service(fetch)

	for _, url := range []string{"a.example/1", "b.example/1", "b.example/2", "b.example/3", "a.example/2"} {
		resp, err := svc.Call(context.Background(), url)
		fmt.Println(url, resp, err)
	}
	for _, s := range hosts.States() {
		fmt.Println(s.Key, s.State)
	}
	// Output:
	// a.example/1 200 OK <nil>
	// b.example/1  connection refused
	// b.example/2  connection refused
	// b.example/3  circuitbreaker "b.example": open (retry after 10s): tripped by: connection refused
	// a.example/2 200 OK <nil>
	// a.example closed
	// b.example open
}

// A group without a stack: Run calls a plain function through the breaker
// of its tenant.
func ExampleGroup() {
	tenants, err := circuitbreaker.NewGroup[string](circuitbreaker.GroupConfig{
		Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 1}},
		MaxKeys: 1000,
	})
	if err != nil {
		panic(err)
	}
	query := func(tenant string) error {
		_, err := circuitbreaker.Run(context.Background(), tenants.Breaker(tenant), func(ctx context.Context) (int, error) {
			if tenant == "acme" {
				return 0, errors.New("shard offline")
			}
			return 42, nil
		})
		return err
	}

	fmt.Println(query("acme"))
	fmt.Println(errors.Is(query("acme"), circuitbreaker.ErrOpen))
	fmt.Println(query("globex"))
	// Output:
	// shard offline
	// true
	// <nil>
}
