package turnstiletest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/turnstiletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func startEngine(t *testing.T, ctx context.Context, zk *turnstiletest.Cluster) *engine.Engine {
	t.Helper()
	eng, err := engine.Start(ctx, engine.Config{Servers: zk.Servers, Dialer: zk.Dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// ExpireSession ends a holder's session: its lease is lost, with
// ErrSessionExpired, and another engine is granted the lock; the engine
// goes on under a new session.
func TestExpireSession(t *testing.T) {
	ctx := testCtx(t)
	zk := turnstiletest.Start(t, 1)
	if len(zk.Servers) != 1 || !strings.HasPrefix(zk.Servers[0], "127.0.0.1:") {
		t.Fatalf("Servers %v", zk.Servers)
	}
	a, b := startEngine(t, ctx, zk), startEngine(t, ctx, zk)

	held, err := lock.NewMutex(a, "/jobs/42").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := lock.NewMutex(b, "/jobs/42").Acquire(ctx)
	old := a.SessionID()
	if err := zk.ExpireSession(ctx, old); err != nil {
		t.Fatalf("ExpireSession: %v", err)
	}
	select {
	case <-held.Lost():
	case <-ctx.Done():
		t.Fatal("the lease of the expired session was never lost")
	}
	if err := held.Err(); !errors.Is(err, engine.ErrSessionExpired) || !errors.Is(err, engine.ErrLost) {
		t.Errorf("lost lease's Err: %v", err)
	}
	got, err := waiting.Wait(ctx)
	if err != nil {
		t.Fatalf("the other engine's waiter: %v", err)
	}
	if err := got.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := lock.NewMutex(a, "/jobs/42").Lock(ctx)
	if err != nil {
		t.Fatalf("the expired engine, under its new session: %v", err)
	}
	if a.SessionID() == old {
		t.Errorf("session id %#x unchanged after expiry", old)
	}
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A session made without Dial cannot be expired: the error says so.
	other, err := engine.Start(ctx, engine.Config{Servers: zk.Servers})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := zk.ExpireSession(ctx, other.SessionID()); err == nil || !strings.Contains(err.Error(), "Dial") {
		t.Errorf("ExpireSession of a session not made through Dial: %v", err)
	}
}

// In an ensemble, a stopped server leaves a quorum that serves; the
// server comes back on its address.
func TestEnsembleStopRestart(t *testing.T) {
	ctx := testCtx(t)
	zk := turnstiletest.Start(t, 3)
	if n := len(zk.Servers); n != 3 {
		t.Fatalf("%d servers, want 3", n)
	}
	eng := startEngine(t, ctx, zk)
	addrs := slices.Clone(zk.Servers)
	restart, err := zk.StopServer(0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.NewMutex(eng, "/with-two").Lock(ctx)
	if err != nil {
		t.Fatalf("lock with one server of three stopped: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if !slices.Equal(zk.Servers, addrs) {
		t.Errorf("addresses changed across a restart: %v, then %v", addrs, zk.Servers)
	}
	// The restarted server serves: a client of it alone takes a lock.
	alone, err := engine.Start(ctx, engine.Config{Servers: addrs[:1]})
	if err != nil {
		t.Fatalf("a client of the restarted server: %v", err)
	}
	defer alone.Close()
	if l, err := lock.NewMutex(alone, "/after-restart").Lock(ctx); err != nil {
		t.Fatalf("lock through the restarted server: %v", err)
	} else if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := zk.StopServer(3); err == nil {
		t.Error("StopServer(3) of three servers succeeded")
	}

	// A session of the ensemble expires as a standalone server's does.
	held, err := lock.NewMutex(eng, "/with-three").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := zk.ExpireSession(ctx, eng.SessionID()); err != nil {
		t.Fatalf("ExpireSession in an ensemble: %v", err)
	}
	select {
	case <-held.Lost():
	case <-ctx.Done():
		t.Fatal("the lease of the expired session was never lost")
	}
}

// Without ZooKeeper, New says what to install.
func TestNotInstalled(t *testing.T) {
	t.Setenv("ZK_JAR", "/nonexistent/zookeeper.jar")
	_, err := turnstiletest.New(context.Background(), 1)
	if err == nil || !strings.Contains(err.Error(), "apt-get install zookeeper") || !strings.Contains(err.Error(), "/nonexistent/zookeeper.jar") {
		t.Errorf("New without ZooKeeper: %v", err)
	}
}

func TestNewSizes(t *testing.T) {
	if _, err := turnstiletest.New(context.Background(), 2); err == nil {
		t.Error("New with 2 servers succeeded")
	}
}

// ExpireSession works again and again on one engine: each time the lease
// held under the session it ends is lost to the expiry (ErrSessionExpired
// with ErrLost), and the engine takes the lock again under its next
// session.
func TestExpireSessionRepeated(t *testing.T) {
	ctx := testCtx(t)
	zk := turnstiletest.Start(t, 1)
	eng := startEngine(t, ctx, zk)
	seen := map[int64]bool{}
	for i := range 10 {
		held, err := lock.NewMutex(eng, "/again").Lock(ctx)
		if err != nil {
			t.Fatalf("expiry %d: lock: %v", i, err)
		}
		id := eng.SessionID()
		if seen[id] {
			t.Fatalf("expiry %d: session %#x was expired before", i, id)
		}
		seen[id] = true
		if err := zk.ExpireSession(ctx, id); err != nil {
			t.Fatalf("expiry %d: ExpireSession: %v", i, err)
		}
		select {
		case <-held.Lost():
		case <-ctx.Done():
			t.Fatalf("expiry %d: the lease was never lost", i)
		}
		if err := held.Err(); !errors.Is(err, engine.ErrSessionExpired) || !errors.Is(err, engine.ErrLost) {
			t.Fatalf("expiry %d: lost lease's Err: %v, want ErrSessionExpired and ErrLost", i, err)
		}
	}
}

// A standalone server stopped and restarted keeps its sessions: an engine
// is suspended while it is down, and connected again after, under the
// same session, on the same address.
func TestStandaloneStopRestart(t *testing.T) {
	ctx := testCtx(t)
	zk := turnstiletest.Start(t, 1)
	eng, err := engine.Start(ctx, engine.Config{Servers: zk.Servers, Dialer: zk.Dial, SessionTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	id := eng.SessionID()
	states := eng.StateChanges(ctx)
	restart, err := zk.StopServer(0)
	if err != nil {
		t.Fatal(err)
	}
	for s := range states {
		if s == engine.StateSuspended {
			break
		}
	}
	if err := restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	for s := range states {
		if s == engine.StateConnected {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the engine never reconnected to the restarted server")
	}
	if got := eng.SessionID(); got != id {
		t.Errorf("session %#x after the restart, want %#x", got, id)
	}
	l, err := lock.NewMutex(eng, "/restarted").Lock(ctx)
	if err != nil {
		t.Fatalf("lock after the restart: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
