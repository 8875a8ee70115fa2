package main

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// redisImpl is the Redis lock of redislock.go on the run's redis-server:
// one client, with a connection per worker, shared by every worker.
type redisImpl struct{}

func (redisImpl) Name() string         { return "redis" }
func (redisImpl) Excludes() bool       { return true }
func (redisImpl) Backend() backendKind { return redisBackend }

func (redisImpl) Supports(workload string, faults faultSet) error {
	switch workload {
	case "uncontended", "contended", "paths", "keys":
	default:
		return unsupported("redis", "-workload "+workload, "a SET NX lock is a mutex whose waiters poll: it has no queue, readers, writers or leases")
	}
	for _, f := range faults {
		switch f {
		case "cancel", "pause":
		default:
			return unsupported("redis", "-faults "+f, "the fault proxies and servers are ZooKeeper's")
		}
	}
	return nil
}

func (redisImpl) Open(ctx context.Context, o openOptions) (client, error) {
	rdb, err := dialRedis(ctx, o.Servers[0], o.Workers)
	if err != nil {
		return nil, err
	}
	return &redisClient{rdb: rdb, o: o}, nil
}

type redisClient struct {
	rdb *redis.Client
	o   openOptions
}

func (c *redisClient) Mutex(path string) (locker, error) {
	return redisLocker{newRedisLock(c.rdb, path, c.o.RedisTTL, c.o.RedisRetry, string(c.o.Marker))}, nil
}

func (c *redisClient) RWMutex(string) (rwLocker, error) {
	return nil, unsupported("redis", "-workload rw", "a SET NX lock is a mutex")
}

func (c *redisClient) Semaphore(string, int) (locker, error) {
	return nil, unsupported("redis", "-workload semaphore", "a SET NX lock is a mutex")
}

func (c *redisClient) Requests() int64 { return -1 }
func (c *redisClient) Close() error    { return c.rdb.Close() }

type redisLocker struct{ l *redisLock }

func (l redisLocker) Acquire(ctx context.Context) (held, error) {
	h, err := l.l.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return redisHeld{h}, nil
}

// redisHeld has no fencing token: the lock's random value is unique but
// not ordered.
type redisHeld struct{ h *redisHold }

func (redisHeld) Token() (int64, bool)                { return 0, false }
func (h redisHeld) Lost() <-chan struct{}             { return h.h.Lost() }
func (h redisHeld) Release(ctx context.Context) error { return h.h.Release(ctx) }
