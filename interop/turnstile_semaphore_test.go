package interop_test

import (
	"context"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/interop"
	"github.com/turnstile-go/turnstile/lock"
)

// turnstile's Semaphore and Curator's InterProcessSemaphoreV2 with the same
// N share one path: never more than N holders in all.
func TestTurnstileWithCuratorSemaphore(t *testing.T) {
	const leases = 2
	mixed(t, curatorStarter(t), interop.PeerConfig{
		Recipe: "semaphore", Leases: leases, Workers: 2, Iterations: 20, Hold: 2 * time.Millisecond,
	}, func(eng *engine.Engine, path string) interop.Acquirer {
		s, err := lock.NewSemaphore(eng, path, leases)
		if err != nil {
			t.Fatal(err)
		}
		return func(ctx context.Context, _ int, _ bool) (func(context.Context) error, error) {
			l, err := s.Lock(ctx)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		}
	})
}

// InterProcessSemaphoreMutex is the same layout with one lease.
func TestTurnstileWithCuratorSemaphoreMutex(t *testing.T) {
	mixed(t, curatorStarter(t), interop.PeerConfig{
		Recipe: "semaphore-mutex", Workers: 2, Iterations: 15, Hold: 2 * time.Millisecond,
	}, func(eng *engine.Engine, path string) interop.Acquirer {
		s := lock.NewSemaphoreMutex(eng, path)
		return func(ctx context.Context, _ int, _ bool) (func(context.Context) error, error) {
			l, err := s.Lock(ctx)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		}
	})
}
