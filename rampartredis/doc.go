// Package rampartredis shares protection across the replicas of a
// service through Redis, without a Redis round trip on any call's path.
//
// [Quota] is a rate limit for the whole fleet: each replica admits calls
// from a local [golang.org/x/time/rate.Limiter] whose rate is its share of
// the quota, leased from Redis every slice.
//
//	q, err := rampartredis.NewQuota(client, rampartredis.QuotaConfig{Key: "partner-api", Limit: 100})
//	if err != nil { ... }
//	defer q.Close()
//	svc, err := ratelimit.Wrap(backend, q.Limiter(), ratelimit.Wait)
//
// The client must end its commands at their context's deadline
// (Options.ContextTimeoutEnabled), so that a slow or paused Redis costs
// the background work a short timeout and never a call.
package rampartredis
