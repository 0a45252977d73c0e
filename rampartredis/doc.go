// Package rampartredis shares protection across the replicas of a
// service through Redis, without a Redis round trip on any call's path.
//
// # Quick start
//
//	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
//	br, err := circuitbreaker.New(circuitbreaker.Config{Name: "payments"})
//	if err != nil { ... }
//	shared, err := rampartredis.Share(br, client, rampartredis.Config{})
//	if err != nil { ... }
//	defer shared.Close()
//	// Use br as usual: its calls never wait for Redis.
//
//	q, err := rampartredis.NewQuota(client, rampartredis.QuotaConfig{Key: "partner-api", Limit: 100})
//	if err != nil { ... }
//	defer q.Close()
//	svc, err := ratelimit.NewLayer[Req, Resp](ratelimit.Config{Limiter: q.Limiter(), Mode: ratelimit.Wait})
//
// # A shared breaker
//
// Each replica's breaker learns alone: with 20 replicas a failing
// dependency takes 20 times the failures to be noticed and receives 20
// times the probes while it recovers. [Share] connects a
// [circuitbreaker.Breaker] to a record in Redis that every replica shares.
// The breaker still decides every call locally: its own transitions are
// written to the record in the background, one Lua script each (compare
// the fleet-wide generation, write state and end on Redis's clock, set
// the expiry, publish); the record's changes reach the other replicas by
// pub/sub and by a periodic read, and are applied with
// [circuitbreaker.Breaker.ApplyRemote] as an Open that lasts the
// remaining cool-down (a duration, so the replicas' clocks need not
// agree). When the shared cool-down ends, one replica claims the HalfOpen
// round (SET NX PX, renewed while it probes) and runs its breaker's
// probes; the others stay open until the result is published, so a round
// has MaxProbes probes across the fleet. A verdict counts only while its
// claim holds: a probe result that arrives late changes nothing. An
// optional quorum opens the fleet only when several replicas report the
// failure. With Config.Failures the replicas also share failure
// evidence, not only verdicts: each failure is reported in the
// background, and the fleet opens once it has seen Failures of them, so
// that 8 replicas failing in lockstep let about one breaker's threshold
// through instead of eight. Every key of one breaker shares one hash tag, so it works on
// Redis Cluster.
//
// # Many breakers per replica
//
// The Shareds of one client share its hub: one pub/sub connection
// subscribed to every breaker's channel (the breakers that join in a
// burst are subscribed in one SUBSCRIBE), and one refresh loop that reads
// the records due together: on a single node one script reads up to
// 1,000 records, on a Cluster each record is one script in one pipeline,
// which go-redis splits by node. A breaker's read is due from half a
// Refresh after its last one, so breakers that joined at different times
// are read together from their second read on. Give the breakers of a
// replica one client: two clients are two hubs.
//
// A hub also keeps a storm from failing for being a storm. While Redis,
// or the link to it, is too slow to answer 1,000 records within Timeout,
// the hub reads them in smaller parts, one after the other (halved after
// a part that failed, doubled after a round that did not), those read
// longest ago first, so every breaker is still read, in its turn, and
// still publishes its trips. The breakers'
// own scripts (trips, claims, reports) go at most 8 at a time: a replica
// that trips 1,000 breakers at once sends them in turn, each with its
// Timeout starting when it is sent, not all together into go-redis's
// pool, where they would time out together. And pub/sub is read without
// a deadline, because go-redis loses a message whose read times out
// midway.
//
// [ShareGroup] shares a [circuitbreaker.Group]: the breaker of a key
// joins the fleet's record for that key when the group makes it, and
// leaves (its channel unsubscribed, its record no longer read) when the
// group drops it.
//
// Measured with 32 replicas in one process, each with its own client
// and 1,000 shared breakers (the same 1,000 keys), against one
// redis-server on loopback, default Refresh (1s), on a 2-core machine
// at a load of 27:
//
//	cd rampartredis && go test -run='^$' -bench=ManyBreakers -benchtime=1x .
//
//	connections per replica          2  (1 pub/sub + 1 for scripts)
//	scripts per second per replica   0.74  (at most 1 per Refresh)
//	Redis calls per second per rep.  603  (1 HMGET per breaker read)
//	heap per shared breaker          5,455 B  (+ 973 B the breaker itself)
//	goroutine stack per breaker      4,110 B  (its worker)
//	Redis memory per shared breaker  198 B  (its subscriptions, used_memory)
//	Redis memory per open record     168 B  (MEMORY USAGE)
//
// Connections and scripts per second do not grow with the breakers: a
// replica holds two connections and sends one read per Refresh (one
// script per 1,000 breakers on a single node; one per breaker,
// pipelined, on a Cluster), where each breaker used to cost its own
// pub/sub connection and its own script per Refresh. The rest grows
// linearly: per breaker, one HMGET inside the read script per Refresh,
// about 9.5 KB in the process (a worker goroutine, its channels and
// timer) and 200 B in Redis for each replica subscribed, plus 168 B per
// record while it is open (a closed record is no record); per replica,
// one hub (two goroutines). The scripts ran at 0.74 per second, not 1,
// because the machine was overloaded: a read is due a Refresh after the
// previous one was applied, so a slow machine reads less often.
//
// The same benchmark then has one replica trip all 1,000 of its breakers
// at once (storm-s): every breaker of the 31 other replicas was Open
// 82 s and 91 s after the first trip, in two runs at loads of 33–38,
// where before in 2 of 5 runs at a load of 27 the storm had not reached
// every replica within a minute (and, with only the reads in parts, 131
// of the 1,000 trips were written after 3 minutes at a load of 35). Most
// of that time is the tripping replica writing its 1,000 transitions 8
// at a time, each a round trip to a redis-server that waits for a core.
//
// # Seeing whether the fleet agrees
//
// A Shared is an inspect.Fleet: registered on a replica's live page
// (package github.com/rampart-go/rampart/inspect) with its breaker,
//
//	reg.AddFleet(br, shared)
//
// the page reads the shared record from Redis when it is viewed (one read
// script, never on a call's path) and shows it next to this replica's
// breaker, with whether they agree.
//
// # Failing safe
//
// Redis down, slow or paused never blocks or fails a call and never
// counts as a failure: each replica's breaker goes on alone, an Open
// received from Redis ends by itself, and startup needs no Redis
// ([Shared.WaitSynced] waits for the first read, when a service must not
// call before it knows the fleet's state). On reconnect a replica adopts
// the record it finds; what it decided alone counts only as news (its
// trip, over a closed record), never over the fleet's Open. The
// client must end its commands at their context's deadline
// (Options.ContextTimeoutEnabled), so that a hung Redis costs the
// background work a short timeout; background work backs off while Redis
// fails, and Close stops every goroutine.
//
// While Redis cannot be reached, go-redis itself logs each failed dial
// through the standard [log] package to stderr ("redis: ... dial tcp ...:
// connect: connection refused"), once per attempt of its connection pool,
// whatever rampartredis does about the outage. Those lines are go-redis's,
// configured for the whole process: route them to your logger with
// redis.SetLogger, which takes any value with a method Printf(ctx
// context.Context, format string, v ...any) (see the example
// "GoRedisLogs", which sends them to [log/slog]), or silence them with
// logging.Disable from github.com/redis/go-redis/v9/logging. Set either
// before creating clients. rampartredis's own view of the outage is in
// [Shared.Stats] and the breaker's events.
//
// # A fleet-wide rate limit
//
// [Quota] gives each replica a local [golang.org/x/time/rate.Limiter]
// whose rate is its share of a fleet-wide quota, leased every slice (one
// script per slice, none per call), and says what to admit while Redis
// cannot be reached ([Unreachable]). The fleet admits the quota within
// one call per replica over any window, at shares down to a call a
// second per replica; [Quota.SetLimit] changes the quota at run time,
// and QuotaConfig.Clock runs a Quota on a clock of your own (package
// clock: a clock.Fake in tests, virtual time in replays).
package rampartredis
