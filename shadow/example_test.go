package shadow_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/shadow"
)

// A candidate that trips after two failures watches calls that a live
// stack makes regardless: it would have refused the last two, one of
// which succeeded.
func Example() {
	sh, err := shadow.New(shadow.Config{Candidates: []shadow.Candidate{
		{Name: "2 in a row", Breaker: circuitbreaker.Config{Policy: circuitbreaker.Consecutive{Failures: 2}, CoolDown: time.Hour}},
	}})
	if err != nil {
		panic(err)
	}
	outcomes := []error{nil, errors.New("down"), errors.New("down"), errors.New("down"), nil}
	i := 0
	svc := shadow.NewLayer[int, string](sh, nil, nil).Wrap(rampart.ServiceFunc[int, string](func(context.Context, int) (string, error) {
		err := outcomes[i]
		i++
		return "", err
	}))
	for range outcomes {
		_, _ = svc.Call(context.Background(), 0)
	}
	r := sh.Results()[0]
	fmt.Printf("%s: %d calls, would have refused %d, of which %d succeeded; %d trip\n", r.Name, r.Calls, r.Refused, r.LostGoodput, r.Trips)
	// Output:
	// 2 in a row: 5 calls, would have refused 2, of which 1 succeeded; 1 trip
}
