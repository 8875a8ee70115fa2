package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	// go-redis, Redis's own Go client: the harness's Redis lock talks to a
	// real redis-server through it; the library never does.
	"github.com/redis/go-redis/v9"
)

// redisLock is the usual single-instance Redis lock: acquire is
// SET key token NX PX ttl, retried until it succeeds, and release a Lua
// script that deletes the key only while it still holds this holder's token.
// It is what users weigh ZooKeeper against. The token is random, unique per
// acquisition: it proves ownership to the release script, but it is no
// fencing token, since a later holder's is not greater than an earlier
// one's, so a resource cannot tell a stale holder from the current one.
//
// Waiters poll: a failed SET is retried after retry ±50 % (uniform), the
// way spin-and-sleep Redis clients wait. There is no queue and no order
// among waiters. The lease ends by itself ttl after the SET was sent, held
// or not: a holder that stalls longer loses the lock without being told,
// and only its own clock can tell it (see redisHold.Lost).
type redisLock struct {
	rdb   *redis.Client
	key   string
	ttl   time.Duration
	retry time.Duration
	owner string // prefixes every token, so leftover keys are recognisably ours
}

// errHoldExpired: the release found the key gone or another holder's: the
// lease had expired while held.
var errHoldExpired = errors.New("redis lock: the lease expired while held")

// releaseScript deletes the key only if it still holds the caller's token;
// a plain DEL could delete a later holder's lock.
var releaseScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("del", KEYS[1])
end
return 0`)

func newRedisLock(rdb *redis.Client, key string, ttl, retry time.Duration, owner string) *redisLock {
	return &redisLock{rdb: rdb, key: key, ttl: ttl, retry: retry, owner: owner}
}

// Acquire polls until the SET succeeds, ctx ends or Redis fails.
func (l *redisLock) Acquire(ctx context.Context) (*redisHold, error) {
	token := fmt.Sprintf("%s:%016x", l.owner, rand.Uint64())
	for {
		// The lease is counted from before the request leaves: Redis may
		// start it any time after.
		sent := time.Now()
		ok, err := l.rdb.SetNX(ctx, l.key, token, l.ttl).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return &redisHold{l: l, token: token, ends: sent.Add(l.ttl)}, nil
		}
		wait := l.retry/2 + rand.N(l.retry+1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// redisHold is one granted lease.
type redisHold struct {
	l     *redisLock
	token string
	ends  time.Time // the lease's end by this process's clock

	mu    sync.Mutex
	lost  chan struct{}
	timer *time.Timer
}

// Lost closes when the lease has run out by this process's clock: the best
// a Redis lock's holder can know, and too late if the process stalled
// between its last look and its next write. Made on first use: a cycle
// that never asks pays nothing.
func (h *redisHold) Lost() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost == nil {
		h.lost = make(chan struct{})
		h.timer = time.AfterFunc(time.Until(h.ends), func() { close(h.lost) })
	}
	return h.lost
}

// Release deletes the key if it is still ours; errHoldExpired if it was not.
func (h *redisHold) Release(ctx context.Context) error {
	h.mu.Lock()
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
	n, err := releaseScript.Run(ctx, h.l.rdb, []string{h.l.key}, h.token).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return errHoldExpired
	}
	return nil
}

// dialRedis opens a client for workers concurrent callers (one connection
// each, so that none waits for the pool) and checks that the server answers.
func dialRedis(ctx context.Context, addr string, workers int) (*redis.Client, error) {
	rdb := redis.NewClient(&redis.Options{
		Addr:            addr,
		PoolSize:        max(workers, 1),
		DisableIdentity: true, // no CLIENT SETINFO per connection
	})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis %s: %w", addr, err)
	}
	return rdb, nil
}
