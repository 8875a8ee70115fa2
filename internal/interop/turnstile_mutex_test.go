package interop_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/lock"
)

// turnstileEngine starts an engine on the shared server, closed at cleanup.
func turnstileEngine(t *testing.T) *engine.Engine {
	t.Helper()
	return startEngine(t, engine.Config{})
}

// startEngine starts an engine with cfg, on the shared server unless cfg
// names servers; it is closed at cleanup.
func startEngine(t *testing.T, cfg engine.Config) *engine.Engine {
	t.Helper()
	if cfg.Servers == nil {
		cfg.Servers = []string{zookeeper(t)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := engine.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

func mutexAcquire(m *lock.Mutex) interop.Acquirer {
	return func(ctx context.Context, _ int, _ bool) (func(context.Context) error, error) {
		l, err := m.Lock(ctx)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}
}

// mixed runs turnstile workers in this process beside peers of another
// library, all on one lock path and one witness: zero overlaps, and every
// client makes every acquisition.
func mixed(t *testing.T, start starter, cfg interop.PeerConfig, acquire func(eng *engine.Engine, path string) interop.Acquirer) {
	t.Helper()
	ctx := testCtx(t)
	cfg.Connect = zookeeper(t)
	cfg.Path = lockPath(t)
	cfg.Witness = filepath.Join(t.TempDir(), "witness")
	cfg.Timeout = peerTimeout
	eng := turnstileEngine(t)

	peers := startPeers(t, ctx, start, 2, cfg)
	goCfg := cfg
	goCfg.Seed = 99
	goResult, err := interop.RunGo(ctx, goCfg, acquire(eng, cfg.Path))
	if err != nil {
		t.Errorf("turnstile contenders: %v\n%s", err, goResult.Output)
	}
	want := cfg.Iterations * cfg.Workers
	if goResult.Acquisitions != want || goResult.Violations != 0 {
		t.Errorf("turnstile: %d acquisitions (want %d), %d violations", goResult.Acquisitions, want, goResult.Violations)
	}
	checkAll(t, peers, waitAll(t, peers...), want)
	t.Logf("turnstile %d + peers %d acquisitions on %s, no overlap", goResult.Acquisitions, 2*want, cfg.Path)
}

func TestTurnstileWithCuratorMutex(t *testing.T) {
	mixed(t, curatorStarter(t), interop.PeerConfig{
		Recipe: "mutex", Workers: 2, Iterations: 25, Hold: 2 * time.Millisecond,
	}, func(eng *engine.Engine, path string) interop.Acquirer {
		return mutexAcquire(lock.NewMutex(eng, path))
	})
}

// kazoo sees turnstile's (Curator-named) nodes only with
// extra_lock_patterns=["lock-"], the peer's default for a mutex.
func TestTurnstileWithKazooMutex(t *testing.T) {
	mixed(t, kazooStarter(t), interop.PeerConfig{
		Recipe: "mutex", Workers: 2, Iterations: 25, Hold: 2 * time.Millisecond,
	}, func(eng *engine.Engine, path string) interop.Acquirer {
		return mutexAcquire(lock.NewMutex(eng, path))
	})
}

// A Curator Revoker reaches a turnstile holder acquired WithRevocation.
func TestCuratorRevokesTurnstileHolder(t *testing.T) {
	cp := curator(t)
	ctx := testCtx(t)
	eng := turnstileEngine(t)
	path := lockPath(t)

	held, err := lock.NewMutex(eng, path, lock.WithRevocation()).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := interop.RevokeCurator(ctx, cp, zookeeper(t), held.Node()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Revoked():
	case <-ctx.Done():
		t.Fatal("the turnstile holder never saw Curator's revocation")
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// lock.Revoke reaches a revocable Curator holder, which lets go; then a
// turnstile waiter on the same path is granted.
func TestTurnstileRevokesCuratorHolder(t *testing.T) {
	cp := curator(t)
	ctx := testCtx(t)
	eng := turnstileEngine(t)
	path := lockPath(t)
	witness := filepath.Join(t.TempDir(), "witness")

	holder, err := interop.StartCurator(ctx, cp, interop.PeerConfig{
		Connect: zookeeper(t), Path: path, Witness: witness, HoldRevocable: true, Timeout: peerTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(holder.Kill)
	node, err := holder.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := lock.NewMutex(eng, path).Acquire(ctx)
	if err := lock.Revoke(ctx, eng, node); err != nil {
		t.Fatal(err)
	}
	l, err := waiting.Wait(ctx)
	if err != nil {
		t.Fatalf("turnstile waiter after the revocation: %v", err)
	}
	defer l.Release(ctx)
	r, err := holder.Wait()
	if err != nil || r.Violations != 0 || !strings.Contains(r.Output, "REVOKED") {
		t.Errorf("Curator holder: err=%v result=%+v", err, r)
	}
}
