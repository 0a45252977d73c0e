package rampartredis

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A hub does, for every Shared of one client, the work whose cost would
// otherwise grow with the number of breakers: one pub/sub connection
// carries every breaker's channel (one SUBSCRIBE for the channels of the
// breakers that joined since the last one), and one refresh loop reads
// the records of every breaker due for its periodic read together (one
// script for up to 1,000 of them, in smaller parts while Redis is too slow
// for that: see read). Each Shared keeps its own worker goroutine, which sends
// its breaker's own transitions, claims and reports, and applies what the
// hub reads and receives for it.
//
// A hub starts with the first Shared of its client and stops, closing
// its pub/sub connection, when the last one closes.
type hub struct {
	client redis.UniversalClient
	// many is true when one script may read the records of many breakers
	// (a single node: their keys are in different slots).
	many  bool
	ps    *redis.PubSub
	start time.Time // origin of the hub's clock (now)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // wakes the refresh loop
	// wake is when the refresh loop will next wake by itself, on the
	// hub's clock: a read scheduled earlier kicks it.
	wake atomic.Int64

	mu sync.Mutex
	// members holds the hub's Shareds; channels the Shareds of each
	// channel (two breakers of one process may share a record). Guarded
	// by mu.
	members  map[*Shared]struct{}
	channels map[string][]*Shared
	// told holds the channels the pub/sub has been told to subscribe to,
	// changed those whose members changed since. Guarded by mu.
	told    map[string]bool
	changed map[string]struct{}
	// timeout bounds a subscription command, maxBackoff the wait between
	// the pub/sub's reconnections: the longest of the members'. Guarded
	// by mu.
	timeout, maxBackoff time.Duration

	// batch is how many records one part of a read carries (see read).
	// Used by the refresh loop only.
	batch int

	// slots holds a token for each of the members' scripts in flight
	// (their own transitions, claims and reports): at most maxInFlight.
	slots chan struct{}
}

// maxInFlight bounds the scripts a hub's members have in flight at once.
// A replica that trips 1,000 breakers at once (a dependency that every
// key depends on went down) would otherwise send 1,000 scripts at once
// into go-redis's pool (10 connections per CPU by default), each with its
// Timeout running while it waits for a connection. On a loaded machine
// most of them time out, each timeout closes its connection (go-redis
// cannot reuse one with a reply unread), the redials time out too, and
// the failed trips, written again together at the next read, fail
// together again: in the scale benchmark at a load of 35, 110 of 1,000
// trips were written in 110 s. Waiting for a slot has no deadline (Close
// ends it); the Timeout starts with the script. With the hub's read, a
// client uses at most maxInFlight+1 connections of its pool for the
// fleet.
const maxInFlight = 8

// hubs holds the running hub of each client.
var (
	hubsMu sync.Mutex
	hubs   = map[redis.UniversalClient]*hub{}
)

// join adds s to its client's hub, starting the hub if it is the first.
// It sends nothing: the hub subscribes and reads in the background.
func join(s *Shared) {
	hubsMu.Lock()
	defer hubsMu.Unlock()
	// A client that is not a pointer (a user's struct value, which may not
	// be a valid map key) gets a hub of its own.
	comparable := keyable(s.client)
	h := (*hub)(nil)
	if comparable {
		h = hubs[s.client]
	}
	if h == nil {
		h = newHub(s.client)
		if comparable {
			hubs[s.client] = h
		}
	}
	s.hub = h
	h.add(s)
}

// leave removes s from its hub, and stops the hub if s was the last.
// It does not wait for s's worker.
func leave(s *Shared) {
	hubsMu.Lock()
	h := s.hub
	last := h.remove(s)
	if last && keyable(h.client) && hubs[h.client] == h {
		delete(hubs, h.client)
	}
	hubsMu.Unlock()
	if last {
		h.cancel()
		_ = h.ps.Close()
		h.wg.Wait()
	}
}

// keyable reports whether c can be a key of hubs: go-redis's clients are
// pointers.
func keyable(c redis.UniversalClient) bool { return reflect.TypeOf(c).Kind() == reflect.Pointer }

func newHub(client redis.UniversalClient) *hub {
	_, single := client.(*redis.Client)
	h := &hub{
		client:   client,
		many:     single,
		start:    time.Now(),
		kick:     make(chan struct{}, 1),
		batch:    maxRecordsPerScript,
		slots:    make(chan struct{}, maxInFlight),
		members:  map[*Shared]struct{}{},
		channels: map[string][]*Shared{},
		told:     map[string]bool{},
		changed:  map[string]struct{}{},
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.ps = client.Subscribe(h.ctx) // no channel yet: no connection
	h.wake.Store(math.MaxInt64)
	h.wg.Add(2)
	go h.listen()
	go h.refresh()
	return h
}

// now is the time on the hub's monotonic clock, in nanoseconds.
func (h *hub) now() int64 { return int64(time.Since(h.start)) }

// add makes s a member: its channel is subscribed to and its record read
// as soon as the refresh loop runs.
func (h *hub) add(s *Shared) {
	h.mu.Lock()
	h.members[s] = struct{}{}
	h.channels[s.ch] = append(h.channels[s.ch], s)
	h.changed[s.ch] = struct{}{}
	h.timeout = max(h.timeout, s.cfg.Timeout)
	h.maxBackoff = max(h.maxBackoff, s.cfg.MaxBackoff)
	h.mu.Unlock()
	h.schedule(s, 0)
}

// remove drops s, reporting whether the hub is empty now.
func (h *hub) remove(s *Shared) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.members, s)
	ss := h.channels[s.ch]
	for i, o := range ss {
		if o == s {
			ss = append(ss[:i:i], ss[i+1:]...)
			break
		}
	}
	if len(ss) == 0 {
		delete(h.channels, s.ch)
	} else {
		h.channels[s.ch] = ss
	}
	h.changed[s.ch] = struct{}{}
	h.signal()
	return len(h.members) == 0
}

// schedule has s's record read within d: not before half of d has
// passed (so that breakers due at nearby times are read together), and
// no later than d, or at once for 0.
func (h *hub) schedule(s *Shared, d time.Duration) {
	now := h.now()
	due := now + int64(d)
	s.from.Store(now + int64(d/2))
	s.due.Store(due)
	if due < h.wake.Load() {
		h.signal()
	}
}

// signal wakes the refresh loop.
func (h *hub) signal() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// inflight marks a member whose read is under way: it is not due again
// until its worker schedules it.
const inflight = math.MaxInt64

// refresh is the hub's refresh loop: it reads the records of the members
// that are due, then sends the subscriptions that changed, until the hub
// stops.
func (h *hub) refresh() {
	defer h.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.kick:
		case <-t.C:
		}
		h.wake.Store(math.MaxInt64) // awake: a schedule from now on kicks
		h.readDue()
		h.subscribe()
		h.mu.Lock()
		next := int64(math.MaxInt64)
		for s := range h.members {
			if s.again.Load() {
				next = 0
				break
			}
			next = min(next, s.due.Load())
		}
		h.mu.Unlock()
		if next == math.MaxInt64 {
			t.Stop()
			continue
		}
		h.wake.Store(next)
		t.Reset(time.Duration(max(next-h.now(), 0)))
	}
}

// readDue reads the records of the members that are due, one read for
// the members of each Timeout, and hands each record to its member's
// worker.
func (h *hub) readDue() {
	now := h.now()
	var due map[time.Duration][]*Shared
	h.mu.Lock()
	for s := range h.members {
		if s.again.Swap(false) || s.from.Load() <= now {
			s.from.Store(inflight)
			s.due.Store(inflight)
			if due == nil {
				due = map[time.Duration][]*Shared{}
			}
			due[s.cfg.Timeout] = append(due[s.cfg.Timeout], s)
		}
	}
	h.mu.Unlock()
	for timeout, ss := range due {
		h.read(timeout, ss)
	}
}

// maxRecordsPerScript bounds how many records one script reads on a
// single node, so that one script never holds Redis for long (a record
// costs about a microsecond), and how many scripts one pipeline carries on
// a Cluster.
const maxRecordsPerScript = 1000

// errNotSent is the error of a read not sent because the previous part
// of the same round failed: Redis did not answer within Timeout.
var errNotSent = errors.New("rampartredis: read not sent: the previous read of this round failed")

// read reads the records of ss within timeout and hands them over, in
// parts of h.batch records, one after the other, each bounded by timeout:
// on a single node a part is one script, on a Cluster (or another client)
// a pipeline of one script per record, which go-redis splits by node.
//
// The size of a part adapts to what Redis answers within timeout: it
// halves when a part fails as a whole, and the rest of the round is not
// sent (those records get the same failure, and are read again after the
// backoff); it doubles, up to maxRecordsPerScript, after a round that
// failed nowhere. So a Redis too slow, or a link too narrow, to answer
// 1,000 records within Timeout still has every record read, a part at a
// time, where a read of all of them would fail every time and leave every
// breaker of the replica unsynced, and every trip unpublished, for as long
// as it lasts. The records read longest ago go first (in random order
// among equals): while Redis cannot answer every record each Refresh,
// each is read in its turn, where those read recently would otherwise
// take the capacity every Refresh and those whose reads failed, waiting
// out their backoff, would never get any.
func (h *hub) read(timeout time.Duration, ss []*Shared) {
	rand.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
	slices.SortStableFunc(ss, func(a, b *Shared) int { return cmp.Compare(a.readAt, b.readAt) })
	grow := true
	for len(ss) > 0 {
		part := ss[:min(len(ss), h.batch)]
		ss = ss[len(part):]
		recs := make([]record, len(part))
		errs := make([]error, len(part))
		ctx, cancel := context.WithTimeout(h.ctx, timeout)
		sent := h.now()
		if h.many {
			h.readMany(ctx, part, recs, errs)
		} else {
			h.readEach(ctx, part, recs, errs)
		}
		cancel()
		failed := 0
		for i, s := range part {
			s.stats.commands.Add(1)
			if errs[i] != nil {
				s.stats.failures.Add(1)
				failed++
			} else {
				s.readAt = sent
			}
			s.deliver(readResult{rec: recs[i], err: errs[i], sent: sent})
		}
		if failed == len(part) {
			grow = false
			h.batch = max(h.batch/2, 1)
			for _, s := range ss {
				s.deliver(readResult{err: errNotSent, sent: sent})
			}
			break
		}
	}
	if grow {
		h.batch = min(2*h.batch, maxRecordsPerScript)
	}
}

// readEach reads each record of ss with its own script, pipelined.
func (h *hub) readEach(ctx context.Context, ss []*Shared, recs []record, errs []error) {
	cmds := make([]*redis.Cmd, len(ss))
	h.pipeline(ctx, len(ss), func(p redis.Pipeliner, i int, load bool) *redis.Cmd {
		if load {
			cmds[i] = readScript.Eval(ctx, p, ss[i].keys[:1])
		} else {
			cmds[i] = readScript.EvalSha(ctx, p, ss[i].keys[:1])
		}
		return cmds[i]
	})
	for i, c := range cmds {
		v, err := c.Slice()
		if err == nil {
			recs[i], _, _, err = parseReply(v)
		}
		errs[i] = err
	}
}

// readMany reads the records of ss with one script.
func (h *hub) readMany(ctx context.Context, ss []*Shared, recs []record, errs []error) {
	var cmd *redis.Cmd
	h.pipeline(ctx, 1, func(p redis.Pipeliner, _ int, load bool) *redis.Cmd {
		keys := make([]string, len(ss))
		for j, s := range ss {
			keys[j] = s.keys[0]
		}
		if load {
			cmd = readManyScript.Eval(ctx, p, keys)
		} else {
			cmd = readManyScript.EvalSha(ctx, p, keys)
		}
		return cmd
	})
	v, err := cmd.Slice()
	if err == nil && len(v) != len(ss) {
		err = errors.New("rampartredis: unexpected reply of the read script")
	}
	for j := range ss {
		e := err
		if e == nil {
			r, _ := v[j].([]any)
			recs[j], _, _, e = parseReply(r)
		}
		errs[j] = e
	}
}

// pipeline sends n commands made by add in one pipeline, by their SHA;
// the ones that Redis does not know the script of (NOSCRIPT: it was
// restarted, or it is another node) are sent again with the script.
func (h *hub) pipeline(ctx context.Context, n int, add func(p redis.Pipeliner, i int, load bool) *redis.Cmd) {
	p := h.client.Pipeline()
	cmds := make([]*redis.Cmd, n)
	for i := range n {
		cmds[i] = add(p, i, false)
	}
	_, _ = p.Exec(ctx)
	var again []int
	for i, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return
	}
	p = h.client.Pipeline()
	for _, i := range again {
		add(p, i, true)
	}
	_, _ = p.Exec(ctx)
	loadScripts(ctx, h.client) // Redis lost its scripts: the workers' too
}

// subscribe tells the pub/sub the channels that changed since the last
// call: one SUBSCRIBE for those that gained their first member, one
// UNSUBSCRIBE for those that lost their last. While Redis cannot be
// reached the pub/sub keeps the channels it was told and subscribes on
// reconnecting.
func (h *hub) subscribe() {
	var sub, unsub []string
	h.mu.Lock()
	for ch := range h.changed {
		want := len(h.channels[ch]) > 0
		switch {
		case want && !h.told[ch]:
			sub = append(sub, ch)
			h.told[ch] = true
		case !want && h.told[ch]:
			unsub = append(unsub, ch)
			delete(h.told, ch)
		}
	}
	clear(h.changed)
	timeout := h.timeout
	h.mu.Unlock()
	if len(unsub) > 0 {
		ctx, cancel := context.WithTimeout(h.ctx, timeout)
		_ = h.ps.Unsubscribe(ctx, unsub...)
		cancel()
	}
	if len(sub) > 0 {
		ctx, cancel := context.WithTimeout(h.ctx, timeout)
		_ = h.ps.Subscribe(ctx, sub...)
		cancel()
	}
}

// listen reads pub/sub until the hub stops: a message goes to the
// workers of its channel, and a (re)subscription has the channel's
// records read, to catch what was published while not subscribed.
//
// It reads without a deadline: a read that timed out in the middle of a
// message would leave go-redis to parse the rest of it as replies of
// their own (go-redis issue 1702), and a message would be lost without
// an error (the channel's name and the payload come out as Pongs). A
// slow link, or a process starved of CPU for longer than a deadline,
// cuts messages that way. Close ends the read by closing the pub/sub.
func (h *hub) listen() {
	defer h.wg.Done()
	wait := time.Duration(0)
	for {
		m, err := h.ps.Receive(h.ctx)
		if h.ctx.Err() != nil {
			return
		}
		if err != nil {
			// Redis unreachable: try again later, backing off (on a
			// cluster, once the client has reloaded the slots: the
			// channel's node may have died and a replica taken over).
			reloadSlots(h.client)
			h.mu.Lock()
			lo, hi := h.timeout, h.maxBackoff
			h.mu.Unlock()
			wait = min(max(2*wait, lo), hi)
			if !h.sleep(wait) {
				return
			}
			continue
		}
		wait = 0
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.mu.Lock()
				for _, s := range h.channels[m.Channel] {
					s.again.Store(true)
				}
				h.mu.Unlock()
				h.signal()
			}
		case *redis.Message:
			if rec, ok := parseMessage(m.Payload); ok {
				full := false
				h.mu.Lock()
				for _, s := range h.channels[m.Channel] {
					select {
					case s.msgs <- rec:
					default: // a read catches up, at once
						s.again.Store(true)
						full = true
					}
				}
				h.mu.Unlock()
				if full {
					h.signal()
				}
			}
		}
	}
}

// sleep waits d or until the hub stops, reporting false if it stopped.
func (h *hub) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.ctx.Done():
		return false
	}
}

// readResult is a record read by the hub for a member, or the error.
type readResult struct {
	rec  record
	err  error
	sent int64 // when the read was sent, on the hub's clock
}

// deliver hands r to s's worker without blocking: a result not yet
// taken is replaced by the newer one.
func (s *Shared) deliver(r readResult) {
	for {
		select {
		case s.reads <- r:
			return
		default:
		}
		select {
		case <-s.reads:
		default:
		}
	}
}
