package lock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

func TestReentrantMutexCountsPerOwner(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	r := lock.NewReentrantMutex(eng, root+"/re")
	ctx := context.Background()
	type job struct{ id int }
	owner := job{7}

	first, err := r.Lock(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	before := eng.Stats().Requests()
	for range 3 {
		again, err := r.Lock(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		if again != first {
			t.Fatal("a re-acquisition returned another lease")
		}
	}
	if got := eng.Stats().Requests() - before; got != 0 {
		t.Fatalf("re-acquiring cost %d ZooKeeper requests, want 0", got)
	}
	if n := r.Count(owner); n != 4 {
		t.Fatalf("count %d, want 4", n)
	}

	// Another owner waits while the first holds any count.
	other := r.Acquire(ctx, job{8})
	for range 3 {
		if err := r.Release(ctx, owner); err != nil {
			t.Fatal(err)
		}
	}
	if n := lockNodes(t, conn, root); n != 2 || !pending(other) {
		t.Fatalf("after 3 of 4 releases: %d nodes, other owner granted: %v", n, !pending(other))
	}
	if err := r.Release(ctx, owner); err != nil {
		t.Fatal(err)
	}
	ol, err := other.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ol.Token() <= first.Token() {
		t.Fatalf("token %d after %d", ol.Token(), first.Token())
	}
	if err := r.Release(ctx, owner); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("one release too many: %v, want ErrNotHeld", err)
	}
	if err := r.Release(ctx, job{8}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

func TestReentrantMutexBadOwnersAndTry(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	r := lock.NewReentrantMutex(eng, lockRoot(t)+"/owners")
	ctx := context.Background()
	if _, err := r.Lock(ctx, nil); !errors.Is(err, lock.ErrInvalidOwner) {
		t.Fatalf("nil owner: %v, want ErrInvalidOwner", err)
	}
	if _, err := r.Lock(ctx, []int{1}); !errors.Is(err, lock.ErrInvalidOwner) {
		t.Fatalf("non-comparable owner: %v, want ErrInvalidOwner", err)
	}
	if err := r.Release(ctx, "nobody"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release by a non-holder: %v, want ErrNotHeld", err)
	}
	l, err := r.TryAcquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := r.TryAcquire(ctx, "a"); err != nil || again != l {
		t.Fatalf("the holder's try: %v", err)
	}
	if _, err := r.TryAcquire(ctx, "b"); !errors.Is(err, lock.ErrWouldBlock) {
		t.Fatalf("another owner's try: %v, want ErrWouldBlock", err)
	}
	r.Release(ctx, "a")
	if err := r.Release(ctx, "a"); err != nil {
		t.Fatal(err)
	}
}

func TestReentrantMutexLostOnExpiry(t *testing.T) {
	ctx := context.Background()
	a, b, p := expiring(t)
	path := lockRoot(t) + "/expire"
	r := lock.NewReentrantMutex(a, path)
	l, err := r.Lock(ctx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	r.Lock(ctx, "owner")
	lostBeforeOthersGet(t, p, l, func() (*lock.Lease, error) { return lock.NewMutex(b, path).Lock(ctx) })
	if err := r.Release(ctx, "owner"); !errors.Is(err, lock.ErrLost) {
		t.Fatalf("release of a lost hold: %v, want ErrLost", err)
	}
	if n := r.Count("owner"); n != 0 {
		t.Fatalf("count %d after the loss, want 0", n)
	}
}

// Children of the lock path that no client names are ignored: the lock
// works around them.
func TestForeignChildrenIgnored(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	path := lockRoot(t) + "/foreign"
	ctx := context.Background()
	l, err := lock.NewMutex(eng, path).Lock(ctx) // creates the path
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"_c_", "_c_short-lock-", "lock-notanumber", "readme", "x-lock-0000000001-extra"} {
		if _, err := conn.Create(path+"/"+name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	waiting := lock.NewMutex(eng, path).Acquire(ctx)
	l.Release(ctx)
	next, err := waiting.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next.Release(ctx)
}

func TestReentrantMutexCancelLeavesNoNode(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	r := lock.NewReentrantMutex(eng, root+"/cancel")
	ctx := context.Background()
	if _, err := r.Lock(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	before := eng.Stats()
	f := r.Acquire(cctx, "b")
	queued(t, eng, before, 1)
	cancel()
	if _, err := f.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquisition: %v", err)
	}
	if n := r.Count("b"); n != 0 {
		t.Fatalf("count %d after a cancelled acquisition", n)
	}
	eventually(t, "only the holder's node", func() bool { return lockNodes(t, conn, root) == 1 })
	if err := r.Release(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}
