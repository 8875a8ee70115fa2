package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestLostFiresBeforeSessionTimeoutWhenServerKilled(t *testing.T) {
	srv := zkserver.StartT(t, zkserver.Options{})
	const timeout = 3 * time.Second
	eng := startEngine(t, engine.Config{Servers: []string{srv.Addr()}, SessionTimeout: timeout})
	ctx := context.Background()
	l, err := lock.NewMutex(eng, "/killed/lock").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Suspended():
	case <-time.After(timeout):
		t.Fatal("lease never suspended")
	}
	select {
	case <-l.Lost():
		elapsed := time.Since(killed)
		t.Logf("lost %v after the kill (session timeout %v)", elapsed, timeout)
		if !errors.Is(l.Err(), engine.ErrLost) {
			t.Fatalf("Err() = %v, want ErrLost", l.Err())
		}
	case <-time.After(timeout):
		t.Fatalf("Lost() did not fire within the session timeout %v", timeout)
	}
	if err := l.Release(ctx); !errors.Is(err, engine.ErrLost) {
		t.Fatalf("release of a lost lease: %v, want ErrLost", err)
	}
}

func TestSessionExpiry(t *testing.T) {
	ctx := context.Background()
	root := lockRoot(t)
	var p netfault.Partition
	a := startEngine(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial})
	b := startEngine(t, engine.Config{})

	lb, err := lock.NewMutex(b, root+"/L").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := lock.NewMutex(a, root+"/L").Acquire(ctx) // queued behind b
	am, err := lock.NewMutex(a, root+"/M").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}

	p.Cut()
	bm, err := lock.NewMutex(b, root+"/M").Lock(ctx) // granted once a's session expires
	if err != nil {
		t.Fatal(err)
	}
	if !closed(am.Lost()) {
		t.Fatal("another client was granted M before its holder saw Lost()")
	}
	if bm.Token() <= am.Token() {
		t.Fatalf("token %d after expiry, not above the lost holder's %d", bm.Token(), am.Token())
	}
	if err := am.Release(ctx); !errors.Is(err, engine.ErrLost) {
		t.Fatalf("release of the lost lease: %v, want ErrLost", err)
	}

	p.Heal()
	// a's waiter is queued again under the new session, and gets L.
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	la, err := waiting.Wait(wctx)
	if err != nil {
		t.Fatalf("waiter after expiry: %v", err)
	}
	if la.Token() <= lb.Token() {
		t.Fatalf("token %d, not above the previous holder's %d", la.Token(), lb.Token())
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bm.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSessionExpiryFailsWaitersWhenAsked(t *testing.T) {
	ctx := context.Background()
	root := lockRoot(t)
	var p netfault.Partition
	a := startEngine(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial, FailOnExpiry: true})
	b := startEngine(t, engine.Config{})
	lb, err := lock.NewMutex(b, root+"/L").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	waiting := lock.NewMutex(a, root+"/L").Acquire(ctx)
	eventually(t, "waiter queued", func() bool { return a.Stats().Watches > 0 })
	p.Cut()
	// Wait until the server has expired a's session: its node is gone.
	conn := inspect(t, shared.Addr())
	eventually(t, "a's node removed by expiry", func() bool { return lockNodes(t, conn, root) == 1 })
	p.Heal()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := waiting.Wait(wctx); !errors.Is(err, engine.ErrSessionExpired) {
		t.Fatalf("waiter: %v, want ErrSessionExpired", err)
	}
}

func TestCloseWithManyWaiters(t *testing.T) {
	for _, mode := range queueModes {
		t.Run(mode.name, func(t *testing.T) { closeWithManyWaiters(t, mode.cfg) })
	}
}

func closeWithManyWaiters(t *testing.T, cfg engine.Config) {
	ctx := context.Background()
	root := lockRoot(t)
	conn := inspect(t, shared.Addr())
	holder := startEngine(t, engine.Config{})
	l, err := lock.NewMutex(holder, root+"/busy").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)

	cfg.Servers = zkServers()
	eng, err := engine.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var futures []*engine.Future[*lock.Lease]
	m := lock.NewMutex(eng, root+"/busy")
	for range 1000 {
		futures = append(futures, m.Acquire(ctx))
	}
	// Each on a node of its own, watching the one ahead; or, passing a
	// node among them, behind the one node that waits.
	queued := uint64(1000)
	if !cfg.Cohort.StrictFIFO {
		queued = 1
	}
	eventually(t, "1000 waiters queued", func() bool { return waits(eng.Stats()) >= queued })
	start := time.Now()
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close with 1000 waiters took %v", time.Since(start))
	for i, f := range futures {
		_, ok, err := f.Result()
		if !ok || !errors.Is(err, engine.ErrClosed) {
			t.Fatalf("future %d: resolved=%v err=%v, want ErrClosed", i, ok, err)
		}
	}
	if n := lockNodes(t, conn, root); n != 1 {
		t.Fatalf("%d nodes after Close, want only the other engine's holder", n)
	}
	if _, err := m.Lock(ctx); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("acquire after Close: %v, want ErrClosed", err)
	}
}

// expiring returns an engine whose session the test can let expire by
// cutting it off (p.cut), and a second engine that stays connected.
func expiring(t *testing.T) (a, b *engine.Engine, p *netfault.Partition) {
	p = &netfault.Partition{}
	a = startEngine(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial})
	b = startEngine(t, engine.Config{})
	return a, b, p
}

// lostBeforeOthersGet cuts off the session of held, has other acquire what
// held holds (it is granted once that session expires), and checks that
// held saw Lost() before that grant. It then reconnects and releases.
func lostBeforeOthersGet(t *testing.T, p *netfault.Partition, held *lock.Lease, other func() (*lock.Lease, error)) {
	t.Helper()
	p.Cut()
	got, err := other()
	if err != nil {
		t.Fatal(err)
	}
	if !closed(held.Lost()) {
		t.Fatal("another client was granted the lock before its holder saw Lost()")
	}
	p.Heal()
	if err := got.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}
