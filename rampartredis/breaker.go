package rampartredis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rampart-go/rampart/circuitbreaker"
)

// Defaults of [Config]'s zero fields.
const (
	DefaultTimeout      = 200 * time.Millisecond
	DefaultRefresh      = time.Second
	DefaultProbeClaim   = 5 * time.Second
	DefaultQuorumWindow = 10 * time.Second
	DefaultRecordTTL    = 24 * time.Hour
	DefaultMaxBackoff   = 5 * time.Second
	// DefaultFailureWindow is Config.FailureWindow when zero.
	DefaultFailureWindow = 10 * time.Second
)

// ErrFleetOpen is the cause of a refusal by a breaker that another
// replica opened, when the shared record gives no failure text: the
// [*circuitbreaker.OpenError]'s Cause is a [*FleetOpenError], which matches
// it.
var ErrFleetOpen = errors.New("rampartredis: open across the fleet")

// FleetOpenError is the Cause of a breaker opened by the shared record: the
// text of the failure that tripped it and the replica that reported it.
// It matches [ErrFleetOpen]. Its Error accepts a nil *FleetOpenError and
// says "<nil>", as for a nil [*net.OpError].
type FleetOpenError struct {
	// Cause is the text of the error that tripped the reporting replica's
	// breaker; empty if it had none.
	Cause string
	// By is the [Config.ID] of the replica that wrote the record.
	By string
}

// Error returns "rampartredis: open across the fleet (reported by ID)",
// followed by ": " and the cause when there is one.
func (e *FleetOpenError) Error() string {
	if e == nil {
		return "<nil>"
	}
	s := "rampartredis: open across the fleet (reported by " + e.By + ")"
	if e.Cause != "" {
		s += ": " + e.Cause
	}
	return s
}

// Is reports whether target is [ErrFleetOpen].
func (e *FleetOpenError) Is(target error) bool { return target == ErrFleetOpen }

// Config configures [Share]. Every zero field selects a documented
// default.
type Config struct {
	// Key names the shared record: every replica whose breaker protects
	// the same dependency uses the same Key. Empty means the breaker's
	// [circuitbreaker.Config.Name]; one of them must be set.
	Key string

	// Prefix starts every Redis key and the channel. Empty means
	// [DefaultPrefix] ("rampart:"). The Key is put in a hash tag
	// (prefix{key}:state), so every key of one breaker is in one Redis
	// Cluster slot.
	Prefix string

	// ID identifies this replica in the record and the quorum. Empty means
	// a random one.
	ID string

	// Timeout bounds every Redis command, and is the margin by which a
	// replica outlasts a shared cool-down before it would probe on its own
	// (time to claim the probe). Zero means [DefaultTimeout] (200ms);
	// negative is an error.
	Timeout time.Duration

	// Refresh is the period of the read that catches published changes
	// this replica missed (pub/sub does not redeliver); the client's
	// breakers are read together, each between half a Refresh and a
	// Refresh after its last read. Zero means
	// [DefaultRefresh] (1s); negative is an error.
	Refresh time.Duration

	// ProbeClaim is how long one replica's claim on a HalfOpen round
	// holds unless renewed: the other replicas stay Open until its probes'
	// verdict is published or the claim ends, then claim again. The
	// claimant renews it halfway through for as long as its breaker is
	// probing (a slow probe keeps the round, up to the breaker's
	// ProbeLease); if no call came to be a probe by then, it gives the
	// claim up, and the other replicas take the round at their next read
	// (Refresh). A verdict counts only while its claim holds: one that
	// arrives after the claim lapsed (Redis was slow or unreachable)
	// changes nothing. So ProbeClaim is how long a replica that dies
	// mid-round holds the fleet Open, and half of it (plus the others'
	// next read) how long one that gets no call holds it. Zero means
	// [DefaultProbeClaim] (5s);
	// it must be more than twice Timeout (a renewal may take Timeout) and
	// less than RecordTTL.
	ProbeClaim time.Duration

	// Quorum, when above 1, opens the shared record only once that many
	// distinct replicas have reported a trip within QuorumWindow: a single
	// replica's trip stays its own until then. Zero or 1 means every trip
	// opens the fleet; negative is an error.
	Quorum int

	// QuorumWindow is how recent a report must be to count toward Quorum.
	// Zero means [DefaultQuorumWindow] (10s); negative is an error.
	QuorumWindow time.Duration

	// RecordTTL is how long the record outlives its last change (plus the
	// cool-down of an open record; an open record without end does not
	// expire). Zero means [DefaultRecordTTL] (24h); negative is an error.
	RecordTTL time.Duration

	// MaxBackoff caps the wait between reads while Redis fails: it starts
	// at Timeout and doubles. Zero means [DefaultMaxBackoff] (5s); negative
	// is an error.
	MaxBackoff time.Duration

	// Failures, when above 0, shares failure evidence, not only
	// verdicts: every failure the breaker counts while Closed is reported
	// to Redis in the background (never on the call's path: the call
	// hands it over with a non-blocking channel send; reports are batched,
	// one script in flight per replica), and the record opens once
	// Failures failures have been reported fleet-wide within
	// FailureWindow of the first, as if one breaker had seen them all.
	// With a Quorum above 1, K distinct replicas must have reported too.
	// Successes are not reported (a Closed success sends nothing), so
	// this is a count within a window, like gobreaker's Interval, not a
	// consecutive run: choose Failures and FailureWindow above what the
	// fleet fails while healthy. Each replica's own breaker still trips by
	// its own policy. Zero means verdicts only; negative is an error.
	Failures int

	// FailureWindow is how long the fleet's failure count lasts from its
	// first failure. Zero means [DefaultFailureWindow] (10s); negative is
	// an error.
	FailureWindow time.Duration

	// CoolDown is the cool-down of an Open that shared failure evidence
	// opens (a trip keeps its breaker's own); set it to the breakers'
	// CoolDown. Zero means [circuitbreaker.DefaultCoolDown]
	// (30s); negative is an error.
	CoolDown time.Duration
}

// Every duration of a Config is sent to Redis in milliseconds: each must
// be zero (the default) or at least a millisecond; a negative one or one
// under a millisecond is an error naming it.

// Shared shares one breaker's state with the other replicas through
// Redis. It is created by [Share] and stopped by [Shared.Close].
//
// The breaker's admission stays local: a call never waits for Redis and
// Redis never fails a call. The breaker's own transitions to Open and to
// Closed are handed to a background goroutine, which writes them with
// one script each (one round trip); changes from other replicas arrive
// by pub/sub and by a periodic read, and are applied with
// [circuitbreaker.Breaker.ApplyRemote]. When the shared cool-down ends,
// one replica claims the HalfOpen round and runs its breaker's probes;
// the others stay open until the result is published.
//
// While Redis is down, slow or paused, each replica's breaker works as if
// alone; an Open received from Redis still ends by itself. On reconnect
// the replica reads the record and adopts it; its own trip while alone is
// written only over a closed record.
//
// A nil or zero Shared (one that [Share] did not return) shares nothing:
// Close, WaitSynced and Record return an error, and Stats is zero.
type Shared struct {
	br     *circuitbreaker.Breaker
	client redis.UniversalClient
	cfg    Config
	keys   []string
	ch     string

	own     chan circuitbreaker.Transition // the breaker's own transitions
	dropped atomic.Bool                    // an own transition did not fit in own
	// failed counts the failures not yet reported (Config.Failures);
	// evidence signals the worker that there are some; lastFailure is
	// the latest one's error.
	unreported  atomic.Int64
	evidence    chan struct{}
	mu          sync.Mutex
	lastFailure error           // guarded by mu
	msgs        chan record     // records received by pub/sub
	reads       chan readResult // records read by the hub

	// hub is the client's hub, which subscribes to ch and reads the record
	// for this Shared along with the others of the client. It reads the
	// record when now reaches from (or due, its timer's, at the latest),
	// or at once when again is set.
	hub       *hub
	from, due atomic.Int64
	again     atomic.Bool
	// readAt is when the hub last read the record, on its clock (0:
	// never). Used by the hub's refresh loop only.
	readAt int64

	ctx    context.Context
	cancel context.CancelFunc
	unsub  func()
	wg     sync.WaitGroup
	once   sync.Once

	stats struct{ commands, failures, published, applied, reported atomic.Int64 }

	// synced is closed once the record has been read and applied.
	synced     chan struct{}
	syncedOnce sync.Once

	// The worker's state: read and written by the worker goroutine only.
	gen     int64         // generation of the record last adopted
	down    bool          // the last command failed
	dirty   bool          // an own transition was not published
	backoff time.Duration // wait before the next read while down
	// news is when the worker last learnt of the record by other means
	// than the hub's reads (a message, a script's reply, a claim let
	// lapse), on the hub's clock: a read sent before is stale.
	news int64
	// holding is true while this replica holds the claim on the round of
	// generation gen, under the token nonce@gen.
	holding bool
	nonce   string
	// lapsed is true from when this replica gave up the claim of the
	// round of generation gen, no call having come to be a probe, until
	// its claim timer fires when the claim would have lapsed: meanwhile
	// it does not claim the round again, so a replica with calls, at its
	// next read, takes it.
	lapsed bool
	// reporting is true while a report of failure evidence is in flight;
	// its reply comes on replies.
	reporting bool
	replies   chan reply
}

// shared holds the breakers shared by a Shared not yet closed: a breaker
// can be shared once at a time.
var shared sync.Map // *circuitbreaker.Breaker → *Shared

// Share attaches br to the shared record in Redis and starts the
// background work: a worker goroutine for br (and with Config.Failures
// one more while a report of failures is in flight), and the client's
// hub if this is the client's first Shared. The Shareds of one client
// share its hub: one pub/sub connection for all their channels and one
// refresh loop that reads the records due together (one script for up
// to 1,000 records on a single node, one pipeline on a Cluster), so that
// a replica's connections and round trips do not grow with its breakers.
// Share sends nothing to Redis and opens no connection before
// returning: startup succeeds, at once, without Redis.
//
// The client must bound its commands by their context (for a
// [*redis.Client] or [*redis.ClusterClient], Options.ContextTimeoutEnabled
// set), so that Config.Timeout bounds every command and Close returns
// promptly; Share returns an error otherwise, and for a nil br or client,
// a bad Config field (naming it) or a br that another Shared, not yet
// closed, shares already.
//
// Until its first read of the record the breaker decides alone, even
// while the fleet is Open: see [Shared.WaitSynced].
//
// A breaker opened by the record stays Open past the shared cool-down
// while another replica holds the HalfOpen round: until that replica's
// verdict arrives, or its claim lapses, Config.ProbeClaim after it was
// taken or last renewed (the claimant renews it halfway through while its
// breaker is probing, so the round lasts as long as its probes, each
// bounded by the breaker's ProbeLease; a claimant that got no call to
// probe gives it up halfway through, and the others claim the round at
// their next read, so at most ProbeClaim with the defaults); then it
// claims the next round. Each Open applied from the record is set to end Config.Timeout
// after the record's cool-down or claim, the time a claim may take, so
// that while Redis is unreachable the breaker probes on its own at most
// Timeout after the fleet would have.
func Share(br *circuitbreaker.Breaker, client redis.UniversalClient, cfg Config) (*Shared, error) {
	if br == nil {
		return nil, errors.New("rampartredis: breaker must not be nil")
	}
	if err := checkClient(client); err != nil {
		return nil, err
	}
	if cfg.Key == "" {
		cfg.Key = br.State().Name
	}
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	tag := cfg.Prefix + "{" + cfg.Key + "}:"
	s := &Shared{
		br:       br,
		client:   client,
		cfg:      cfg,
		keys:     []string{tag + "state", tag + "probe", tag + "reports", tag + "failures", tag + "failed"},
		ch:       tag + "changes",
		own:      make(chan circuitbreaker.Transition, 2),
		msgs:     make(chan record, 2),
		reads:    make(chan readResult, 1),
		synced:   make(chan struct{}),
		evidence: make(chan struct{}, 1),
		replies:  make(chan reply, 1),
		nonce:    cfg.ID + "#" + randomID(),
	}
	if _, dup := shared.LoadOrStore(br, s); dup {
		return nil, errors.New("rampartredis: the breaker is shared already: Close the other Shared first")
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.unsub = br.Subscribe(s.onTransition)
	if cfg.Failures > 0 {
		stop := br.SubscribeFailures(s.onFailure)
		unsub := s.unsub
		s.unsub = func() { unsub(); stop() }
	}
	join(s) // before the worker starts: it uses s.hub
	s.wg.Add(1)
	go s.work()
	return s, nil
}

// fill checks c and fills its defaults. Errors name the field.
func (c *Config) fill() error {
	if c.Key == "" {
		return errors.New("rampartredis: Config.Key is empty and the breaker has no Name; set one of them")
	}
	if err := fillDurations(c); err != nil {
		return err
	}
	if c.Quorum < 0 {
		return fmt.Errorf("rampartredis: Config.Quorum must be >= 0 (0 or 1: every trip opens the fleet), got %d", c.Quorum)
	}
	if c.Failures < 0 {
		return fmt.Errorf("rampartredis: Config.Failures must be >= 0 (0: share verdicts only), got %d", c.Failures)
	}
	// Combinations that would break the protocol.
	if c.ProbeClaim <= 2*c.Timeout {
		return fmt.Errorf("rampartredis: Config.ProbeClaim (%v) must be more than twice Config.Timeout (%v): the claim is renewed halfway through, and a renewal may take Timeout", c.ProbeClaim, c.Timeout)
	}
	if c.RecordTTL <= c.ProbeClaim {
		return fmt.Errorf("rampartredis: Config.RecordTTL (%v) must be more than Config.ProbeClaim (%v): a record that expires during a round closes the fleet without a verdict", c.RecordTTL, c.ProbeClaim)
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.ID == "" {
		c.ID = randomID()
	}
	return nil
}

// fillDurations checks c's durations and fills their defaults.
func fillDurations(c *Config) error {
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"Timeout", &c.Timeout, DefaultTimeout},
		{"Refresh", &c.Refresh, DefaultRefresh},
		{"ProbeClaim", &c.ProbeClaim, DefaultProbeClaim},
		{"QuorumWindow", &c.QuorumWindow, DefaultQuorumWindow},
		{"RecordTTL", &c.RecordTTL, DefaultRecordTTL},
		{"MaxBackoff", &c.MaxBackoff, DefaultMaxBackoff},
		{"FailureWindow", &c.FailureWindow, DefaultFailureWindow},
		{"CoolDown", &c.CoolDown, circuitbreaker.DefaultCoolDown},
	} {
		if *d.v < 0 {
			return fmt.Errorf("rampartredis: Config.%s must be >= 0 (0 means %v), got %v", d.name, d.def, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < time.Millisecond {
			return fmt.Errorf("rampartredis: Config.%s must be 0 (%v) or at least 1ms (Redis counts milliseconds), got %v", d.name, d.def, *d.v)
		}
	}
	return nil
}

// onTransition is the breaker's listener: it hands the breaker's own
// verdicts to the worker without blocking — a trip (to Open) and a probe
// round's close (HalfOpen to Closed). A Reset or a Switch stays local: the
// record re-opens such a breaker while the fleet is open. It runs on the
// goroutine that caused the transition and sends no command.
func (s *Shared) onTransition(t circuitbreaker.Transition) {
	own := t.To == circuitbreaker.Open || t.To == circuitbreaker.Closed && t.From == circuitbreaker.HalfOpen
	if t.Remote || !own {
		return
	}
	select {
	case s.own <- t:
	default:
		s.dropped.Store(true) // the worker reconciles from the breaker's state
	}
}

// onFailure is the breaker's failure listener (Config.Failures): it
// counts the failure and signals the worker without blocking. It runs on
// the goroutine that reported the failure and sends no command.
func (s *Shared) onFailure(err error) {
	s.mu.Lock()
	s.lastFailure = err
	s.mu.Unlock()
	s.unreported.Add(1)
	select {
	case s.evidence <- struct{}{}:
	default: // signalled already: the worker takes every failure counted
	}
}

// Close stops the background work, waits for its goroutines to return
// (the worker, and the client's hub if no other Shared of the client is
// open) and detaches the breaker, which keeps its current state and goes
// on alone. It does not close the client. Calling it again does nothing.
//
// Close of a Shared that [Share] did not return (nil, or a zero Shared)
// is an error and does nothing else.
func (s *Shared) Close() error {
	if s == nil || s.br == nil {
		return errNotShared
	}
	s.once.Do(func() {
		s.unsub()
		s.cancel()
		leave(s)
		s.wg.Wait()
		shared.CompareAndDelete(s.br, s)
	})
	return nil
}

// errNotShared is the error of a method called on a Shared that Share did
// not return.
var errNotShared = errors.New("rampartredis: the Shared was not returned by Share")

// ErrClosed is returned by [Shared.WaitSynced] once the Shared is closed.
var ErrClosed = errors.New("rampartredis: the Shared is closed")

// WaitSynced waits until the replica has read the shared record once and
// applied it to the breaker, and returns nil; or returns ctx.Err() if ctx
// ends first, or [ErrClosed] if the Shared is closed first. It sends
// nothing itself.
//
// [Share] returns at once, and until that first read the breaker decides
// alone: it admits calls even while the fleet is Open. A service that
// must not (its first calls would hit a dependency the fleet knows is
// down) calls WaitSynced before it serves, with a deadline: an error
// means Redis did not answer in time, and the breaker goes on alone
// until it does. A service that prefers to start at once while Redis is
// down needs neither. Safe for concurrent use.
func (s *Shared) WaitSynced(ctx context.Context) error {
	if s == nil || s.br == nil {
		return errNotShared
	}
	select {
	case <-s.synced:
		return nil
	default:
	}
	select {
	case <-s.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ctx.Done():
		return ErrClosed
	}
}

// Stats are counts of a [Shared]'s work since [Share].
type Stats struct {
	// Commands is the number of Redis commands sent (scripts run), not
	// counting pub/sub; a read of many breakers' records by one script
	// counts one for each.
	Commands int64
	// Failures is how many of them failed (Redis down, slow, or paused).
	Failures int64
	// Published is how many of the breaker's own transitions were
	// written to the shared record.
	Published int64
	// Applied is how many applications of the record changed the breaker
	// (its state, or the end of a remote Open).
	Applied int64
	// Reported is how many failures were reported as evidence
	// (Config.Failures) by scripts that Redis answered.
	Reported int64
}

// Stats returns the counts so far. Safe for concurrent use.
func (s *Shared) Stats() Stats {
	if s == nil {
		return Stats{}
	}
	return Stats{
		Commands:  s.stats.commands.Load(),
		Failures:  s.stats.failures.Load(),
		Published: s.stats.published.Load(),
		Applied:   s.stats.applied.Load(),
		Reported:  s.stats.reported.Load(),
	}
}

// record is the shared record as a script returns it or a message
// carries it.
type record struct {
	gen   int64
	open  bool
	rem   time.Duration // open: remaining cool-down, -1 no end, 0 ended
	cause string
	by    string
}

// parseMessage parses "gen|state|remaining ms|by|cause".
func parseMessage(p string) (record, bool) {
	f := strings.SplitN(p, "|", 5)
	if len(f) != 5 {
		return record{}, false
	}
	gen, err1 := strconv.ParseInt(f[0], 10, 64)
	rem, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return record{}, false
	}
	return record{gen: gen, open: f[1] == "open", rem: ms(rem), by: f[3], cause: f[4]}, true
}

// ms converts a script's milliseconds (-1: no end) to a duration.
func ms(n int64) time.Duration {
	if n < 0 {
		return -1
	}
	return time.Duration(n) * time.Millisecond
}

// run runs a script with the configured timeout and parses its reply
// {won, gen, state, remaining, cause, by, claim ms}.
func (s *Shared) run(script *redis.Script, args ...any) (rec record, won bool, claim time.Duration, err error) {
	return s.runContext(s.ctx, script, args...)
}

// noted notes news of the record (a message, a script's reply, a claim
// let lapse): a read sent before it is stale. Called by the worker.
func (s *Shared) noted() { s.news = s.hub.now() }

// runContext is run within ctx as well as the configured timeout, which
// starts once the hub grants the script one of its slots (see
// maxInFlight): a storm of transitions waits its turn there, not in
// go-redis's pool with its Timeout running.
func (s *Shared) runContext(ctx context.Context, script *redis.Script, args ...any) (rec record, won bool, claim time.Duration, err error) {
	select {
	case s.hub.slots <- struct{}{}:
	case <-ctx.Done():
		return record{}, false, 0, ctx.Err()
	}
	defer func() { <-s.hub.slots }()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	s.stats.commands.Add(1)
	v, err := script.Run(ctx, s.client, s.keys, args...).Slice()
	if err == nil {
		rec, won, claim, err = parseReply(v)
	}
	if err != nil {
		s.stats.failures.Add(1)
	}
	return rec, won, claim, err
}

// parseReply parses a script's reply {won, gen, state, remaining,
// cause, by, claim ms}.
func parseReply(v []any) (rec record, won bool, claim time.Duration, err error) {
	if len(v) != 7 {
		return record{}, false, 0, fmt.Errorf("rampartredis: unexpected script reply %v", v)
	}
	num := func(i int) int64 { n, _ := v[i].(int64); return n }
	str := func(i int) string { t, _ := v[i].(string); return t }
	rec = record{gen: num(1), open: str(2) == "open", rem: ms(num(3)), cause: str(4), by: str(5)}
	return rec, num(0) == 1, ms(num(6)), nil
}
