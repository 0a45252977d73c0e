package main

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/rampart-go/rampart/rampartredis"
)

// quotaResult is what the fleet-wide rate limit run measured.
type quotaResult struct {
	Quota       float64 `json:"quota_per_second"`
	Seconds     float64 `json:"seconds"`
	Admitted    int64   `json:"admitted"`
	PerSecond   float64 `json:"admitted_per_second"`
	PercentOfQ  float64 `json:"percent_of_quota"`
	RedisCmds   int64   `json:"redis_commands"`
	CallsWanted string  `json:"calls_wanted"`
}

// measureQuota runs o.replicas replicas that each want more than the
// whole quota, each with its own Redis connection and rampartredis.Quota,
// for o.quotaFor, and counts what they admitted together.
func measureQuota(o options, addr string) (quotaResult, error) {
	res := quotaResult{Quota: o.quota, Seconds: o.quotaFor.Seconds(), CallsWanted: "more than the quota, on every replica"}
	qs := make([]*rampartredis.Quota, o.replicas)
	for i := range qs {
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer c.Close()
		q, err := rampartredis.NewQuota(c, rampartredis.QuotaConfig{Key: "fleet-example-quota", Limit: rate.Limit(o.quota)})
		if err != nil {
			return res, err
		}
		defer q.Close()
		qs[i] = q
	}
	var admitted atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), o.quotaFor)
	defer cancel()
	var wg sync.WaitGroup
	for _, q := range qs {
		lim := q.Limiter()
		wg.Go(func() {
			for lim.Wait(ctx) == nil {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	res.Admitted = admitted.Load()
	res.PerSecond = float64(res.Admitted) / o.quotaFor.Seconds()
	res.PercentOfQ = 100 * res.PerSecond / o.quota
	for _, q := range qs {
		res.RedisCmds += q.Stats().Commands
	}
	return res, nil
}
