package engine_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/zktest"
	"github.com/turnstile-go/turnstile/lock"
)

// A lease lost to a lapse keeps its holder's margin to stop however the
// lock is waited for: a member of the holder's own cohort (passed the
// lease, or queuing a node of its own once the node is lost), a
// strict-FIFO acquisition of the same engine queued behind the lost node
// (a local handoff at its deletion), another engine's. None is granted
// sooner than the lost margin after Lost() closed, though the session
// answers again long before.
func TestLapseMarginHoldsForEveryWaiter(t *testing.T) { bothLapses(t, lapseMarginEveryWaiter) }

func lapseMarginEveryWaiter(t *testing.T, servers []string, dial func(network, address string, timeout time.Duration) (net.Conn, error), cut, heal func()) {
	// As in TestLapseIsNotExpiry: trust lapses 3 s after the last answer,
	// the server could expire the session 8 s after it.
	eng := startEngine(t, engine.Config{Servers: servers, SessionTimeout: 8 * time.Second, LostMargin: 5 * time.Second, Dialer: dial})
	other := startEngine(t, engine.Config{Servers: servers})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := testRoot(t) + "/lapse"
	l, err := lock.NewMutex(eng, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := eng.CohortStats().Waiting
	waiters := map[string]*engine.Future[*lock.Lease]{"a member of the lost holder's cohort": lock.NewMutex(eng, path).Acquire(ctx)}
	eventually(t, "the member queued in the cohort", func() bool { return eng.CohortStats().Waiting > waiting })
	waiters["a strict-FIFO acquisition of the same engine"] = lock.NewMutex(eng, path, lock.WithStrictFIFO()).Acquire(ctx)
	waiters["another engine's acquisition"] = lock.NewMutex(other, path).Acquire(ctx)
	addr := shared.Addr()
	if servers != nil {
		addr = servers[0]
	}
	raw := zktest.Connect(t, addr)
	eventually(t, "every node queued", func() bool { return len(ephemerals(t, raw, path)) == 3 })

	// Each waiter, once granted, notes when and lets the next in.
	var (
		mu      sync.Mutex
		grantAt = map[string]time.Time{}
		wg      sync.WaitGroup
	)
	for name, f := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := f.Wait(ctx)
			at := time.Now()
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			mu.Lock()
			grantAt[name] = at
			mu.Unlock()
			got.Release(ctx)
		}()
	}

	cut()
	select {
	case <-l.Lost():
	case <-ctx.Done():
		t.Fatal("the lease was never lost")
	}
	lostAt := time.Now()
	margin := eng.LostMargin()
	heal()
	wg.Wait()
	if len(grantAt) != len(waiters) {
		t.Fatalf("%d of %d waiters granted", len(grantAt), len(waiters))
	}
	for name, at := range grantAt {
		after := at.Sub(lostAt)
		t.Logf("%s granted %v after Lost() closed (margin %v)", name, after.Round(time.Millisecond), margin)
		if after < margin {
			t.Errorf("%s was granted %v after Lost() closed, within the lost margin %v", name, after, margin)
		}
	}
	l.Release(ctx)
}
