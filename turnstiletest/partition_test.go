package turnstiletest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/turnstiletest"
)

// A holder whose connection goes silent learns that its lease may be lost
// before the server expires its session and grants the lock to another
// client; once healed it reconnects, is told its session expired, and
// takes the lock again under a new session.
func TestPartitionLostBeforeOtherGrant(t *testing.T) {
	ctx := testCtx(t)
	zk := turnstiletest.Start(t, 1)
	cut := zk.NewPartition()
	holder, err := engine.Start(ctx, engine.Config{Servers: zk.Servers, Dialer: cut.Dial, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waiter := startEngine(t, ctx, zk)

	held, err := lock.NewMutex(holder, "/cut").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := lock.NewMutex(waiter, "/cut").Acquire(ctx)
	old := holder.SessionID()
	cut.Silence()
	got, err := next.Wait(ctx)
	if err != nil {
		t.Fatalf("the other client's waiter: %v", err)
	}
	select {
	case <-held.Lost():
	default:
		t.Fatal("the other client was granted the lock while the silenced holder's Lost() was open")
	}
	if !errors.Is(held.Err(), engine.ErrLost) {
		t.Errorf("lost lease's Err: %v", held.Err())
	}
	if err := got.Release(ctx); err != nil {
		t.Fatal(err)
	}

	cut.Heal()
	again, err := lock.NewMutex(holder, "/cut").Lock(ctx)
	if err != nil {
		t.Fatalf("the holder after Heal: %v", err)
	}
	if holder.SessionID() == old {
		t.Errorf("session %#x survived a silence longer than its timeout", old)
	}
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A session made through the partition's Dial can be expired.
	if err := zk.ExpireSession(ctx, holder.SessionID()); err != nil {
		t.Errorf("ExpireSession of a session dialled through a Partition: %v", err)
	}
}

// A silence healed before the session's timeout leaves the session alive:
// the engine is suspended meanwhile and connected again after, under the
// same session.
func TestPartitionHealKeepsSession(t *testing.T) {
	ctx := testCtx(t)
	zk := turnstiletest.Start(t, 1)
	cut := zk.NewPartition()
	eng, err := engine.Start(ctx, engine.Config{Servers: zk.Servers, Dialer: cut.Dial, SessionTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	id := eng.SessionID()
	states := eng.StateChanges(ctx)
	cut.Silence()
	for s := range states {
		if s == engine.StateSuspended {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the engine never saw its connection go silent")
	}
	cut.Heal()
	for s := range states {
		if s == engine.StateConnected {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the engine never reconnected after Heal")
	}
	if got := eng.SessionID(); got != id {
		t.Errorf("session %#x after a short silence, want %#x", got, id)
	}
	l, err := lock.NewMutex(eng, "/healed").Lock(ctx)
	if err != nil {
		t.Fatalf("lock after Heal: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
