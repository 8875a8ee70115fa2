package lock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/lock"
)

// TestNoGrantOnAnExpiredSessionsListing: a listing answered in one session
// grants no one once the engine's session has changed, whatever the
// watchdog now thinks of the new session. Here a's writer's listing (it is
// first, its reader ahead just released) waits in a's inbox while the loop
// is stalled; meanwhile a's session expires, c takes the write lock, and a
// reconnects under a new session, which the watchdog trusts. When the loop
// goes on, that listing must not grant a's writer: its node went with the
// old session, and c holds.
func TestNoGrantOnAnExpiredSessionsListing(t *testing.T) {
	ctx := context.Background()
	root := lockRoot(t)
	path := root + "/L"
	conn := inspect(t, shared.Addr())

	var (
		p        netfault.Partition
		armed    atomic.Bool
		stall    sync.Once
		stalled  = make(chan struct{})
		unstall  = make(chan struct{})
		cHeld    atomic.Pointer[lock.Lease]
		beside   atomic.Bool // a's writer was granted while c held the lock
		grantsOK atomic.Int32
	)
	a := startEngine(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial,
		Observer: func(r events.Report) {
			if !armed.Load() || r.Path != path || r.Member {
				return // the node's reports, not a cohort member's
			}
			switch r.Kind {
			case events.Released:
				// The reader's release: the writer's listing was sent just
				// before this report. Keep the loop here.
				stall.Do(func() { close(stalled); <-unstall })
			case events.Granted:
				if l := cHeld.Load(); l != nil && l.Held() {
					beside.Store(true)
				} else {
					grantsOK.Add(1)
				}
			}
		}})
	c := startEngine(t, engine.Config{})

	rw := lock.NewRWMutex(a, path)
	r, err := rw.Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w := rw.Owner().Writer().Acquire(wctx)
	eventually(t, "a's writer waits behind its reader", func() bool { return waits(a.Stats()) > 0 })

	armed.Store(true)
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-stalled
	// The writer's listing is answered and waits in the stalled loop's inbox.
	eventually(t, "the writer's listing answered", func() bool { return a.InFlight() == 0 })
	old := a.SessionID()

	p.Cut()
	lc, err := lock.NewRWMutex(c, path).Writer().Lock(wctx) // once a's session expired
	if err != nil {
		close(unstall)
		t.Fatal(err)
	}
	cHeld.Store(lc)
	p.Heal()
	eventually(t, "a's new session", func() bool { id := a.SessionID(); return id != 0 && id != old })
	close(unstall)

	// Let a's loop handle what waited: the writer is either granted (on
	// the old listing) or queued again under the new session.
	eventually(t, "a's writer granted or queued again", func() bool {
		_, done, _ := w.Result()
		return done || lockNodes(t, conn, path) == 2
	})
	if beside.Load() {
		t.Fatal("a's writer was granted on a listing of its expired session while c held the write lock")
	}
	if err := lc.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lw, err := w.Wait(wctx)
	if err != nil {
		t.Fatalf("a's writer after the expiry: %v", err)
	}
	if lw.Token() <= lc.Token() {
		t.Fatalf("token %d, not above the previous holder's %d", lw.Token(), lc.Token())
	}
	if err := lw.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if beside.Load() || grantsOK.Load() != 1 {
		t.Fatalf("a's writer: granted beside c %v, granted alone %d times; want once alone", beside.Load(), grantsOK.Load())
	}
}
