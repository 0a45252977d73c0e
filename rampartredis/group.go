package rampartredis

import (
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// SharedGroup shares every breaker of a [circuitbreaker.Group] (one per
// host, method or tenant) with the other replicas, each through the
// record of its key. It is created by [ShareGroup] and stopped by
// [SharedGroup.Close]. A nil or zero SharedGroup (one that ShareGroup did
// not return) shares nothing: Close is an error and Len is 0.
type SharedGroup[K comparable] struct {
	client redis.UniversalClient
	cfg    Config // filled, but for Key
	stop   func() // unsubscribes from the group

	mu      sync.Mutex
	members map[*circuitbreaker.Breaker]*Shared // guarded by mu
	closed  bool                                // guarded by mu
	leaving sync.WaitGroup                      // Closes of the members the group dropped
}

// ShareGroup shares the breakers of g: each one g holds, and each one it
// makes from now on, is shared as [Share] would share it, and each one it
// drops (idle, or to make room) stops being shared, without waiting: its
// channel is unsubscribed from and its record no longer read. The
// breaker of a key joins the record whose Key is cfg.Key + "/" + the key
// (fmt's %v), or the breaker's Name when cfg.Key is empty (the group's
// Name + "/" + the key, or the key alone for an unnamed group: name the
// group, or set cfg.Key, so that two groups' keys do not meet). The
// breaker of the keys past the group's MaxKeys is not shared: it stands
// for different keys on different replicas.
//
// Every breaker shares the client's hub (see [Share]): the replica's
// pub/sub connection and periodic reads do not grow with the group. A
// breaker joins on the goroutine of the lookup that made it (no command
// is sent there: it costs that lookup the allocation of its Shared and a
// goroutine start), and until its first read it decides alone. cfg is
// checked as Share checks it, once; its ID is the replica's for every
// breaker (random when empty). A breaker that a Shared of its own shares
// already is left as it is.
//
// ShareGroup returns an error for a nil g or client, a client whose
// commands ignore their context, or a bad cfg field (naming it).
func ShareGroup[K comparable](g *circuitbreaker.Group[K], client redis.UniversalClient, cfg Config) (*SharedGroup[K], error) {
	if g == nil {
		return nil, errors.New("rampartredis: group must not be nil")
	}
	if err := checkClient(client); err != nil {
		return nil, err
	}
	key := cfg.Key
	if cfg.Key == "" {
		cfg.Key = "-" // each breaker's; checked when it joins
	}
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	cfg.Key = key
	sg := &SharedGroup[K]{client: client, cfg: cfg, members: map[*circuitbreaker.Breaker]*Shared{}}
	sg.stop = g.Subscribe(sg.change)
	return sg, nil
}

// change is the group's listener: a breaker made joins, a breaker dropped
// leaves.
func (sg *SharedGroup[K]) change(c circuitbreaker.GroupChange[K]) {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if sg.closed {
		return
	}
	if c.Removed {
		s, ok := sg.members[c.Breaker]
		if !ok {
			return
		}
		delete(sg.members, c.Breaker)
		sg.leaving.Add(1)
		go func() {
			defer sg.leaving.Done()
			_ = s.Close()
		}()
		return
	}
	cfg := sg.cfg
	if cfg.Key != "" {
		cfg.Key += "/" + fmt.Sprint(c.Key)
	}
	s, err := Share(c.Breaker, sg.client, cfg)
	if err != nil {
		return // shared already by another Shared
	}
	sg.members[c.Breaker] = s
}

// Len returns how many of the group's breakers are shared now. Safe for
// concurrent use.
func (sg *SharedGroup[K]) Len() int {
	if sg == nil {
		return 0
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	return len(sg.members)
}

// Close stops sharing the group's breakers, as [Shared.Close] does for
// each, and waits for their goroutines to return; the group and its
// breakers go on alone. It does not close the client. Calling it again
// does nothing. Close of a SharedGroup that [ShareGroup] did not return
// (nil, or a zero SharedGroup) is an error and does nothing else.
func (sg *SharedGroup[K]) Close() error {
	if sg == nil || sg.stop == nil {
		return errors.New("rampartredis: the SharedGroup was not returned by ShareGroup")
	}
	sg.stop()
	sg.mu.Lock()
	members := sg.members
	sg.members, sg.closed = nil, true
	sg.mu.Unlock()
	for _, s := range members {
		s.cancel() // all at once, then wait for each
	}
	for _, s := range members {
		_ = s.Close()
	}
	sg.leaving.Wait()
	return nil
}
