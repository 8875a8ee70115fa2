package interop_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/lock"
)

// rwAcquire gives each worker its own RWMutex handle: a handle is one
// owner for the no-upgrade rule.
func rwAcquire(eng *engine.Engine, path string) interop.Acquirer {
	var mu sync.Mutex
	handles := map[int]*lock.RWMutex{}
	return func(ctx context.Context, worker int, write bool) (func(context.Context) error, error) {
		mu.Lock()
		rw := handles[worker]
		if rw == nil {
			rw = lock.NewRWMutex(eng, path)
			handles[worker] = rw
		}
		mu.Unlock()
		var l *lock.Lease
		var err error
		if write {
			l, err = rw.Writer().Lock(ctx)
		} else {
			l, err = rw.Reader().Lock(ctx)
		}
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}
}

// Readers of both libraries overlap; a writer of either overlaps no one.
func TestTurnstileWithCuratorReadWrite(t *testing.T) {
	mixed(t, curatorStarter(t), interop.PeerConfig{
		Recipe: "rw", WriteRatio: 0.3, Workers: 2, Iterations: 25, Hold: 2 * time.Millisecond,
	}, func(eng *engine.Engine, path string) interop.Acquirer {
		return rwAcquire(eng, path)
	})
}

// kazoo's ReadLock and WriteLock see turnstile's nodes with the peer's
// default extra_lock_patterns (readers: "__WRIT__"; writers: "__WRIT__",
// "__READ__").
func TestTurnstileWithKazooReadWrite(t *testing.T) {
	mixed(t, kazooStarter(t), interop.PeerConfig{
		Recipe: "rw", WriteRatio: 0.3, Workers: 2, Iterations: 25, Hold: 2 * time.Millisecond,
	}, func(eng *engine.Engine, path string) interop.Acquirer {
		return rwAcquire(eng, path)
	})
}
