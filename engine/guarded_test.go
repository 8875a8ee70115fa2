package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
)

// A guarded write lands while the lease's node exists, and is refused, with
// nothing applied, once another session deleted the node: as when the
// server expired the holder's session and another client was granted,
// while the holder had not heard of it yet. After a release it reports
// ErrNotHeld.
func TestGuardedRefusedOnceTheNodeIsGone(t *testing.T) {
	root := testRoot(t)
	eng := startEngine(t, engine.Config{Root: root})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	lease, err := lock.NewMutex(eng, "/guarded").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Paths are in the engine's namespace, as for Acquire.
	if _, err := lease.Guarded(ctx, &zk.CreateRequest{Path: "/register", Data: []byte("0"), Acl: zk.WorldACL(zk.PermAll)}); err != nil {
		t.Fatalf("guarded create: %v", err)
	}
	res, err := lease.Guarded(ctx, &zk.SetDataRequest{Path: "/register", Data: []byte("1"), Version: -1})
	if err != nil {
		t.Fatalf("guarded write while held: %v", err)
	}
	if len(res) != 1 || res[0].Stat == nil || res[0].Stat.Version != 1 {
		t.Fatalf("responses %+v, want one SetData's with version 1", res)
	}

	// A failed op of the caller's fails the whole multi, with its error.
	if _, err := lease.Guarded(ctx, &zk.SetDataRequest{Path: "/register", Data: []byte("x"), Version: 7}); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("a stale version: %v, want ErrBadVersion", err)
	}

	raw := rawConn(t)
	if err := raw.Delete(root+lease.Node(), -1); err != nil {
		t.Fatalf("deleting the lease's node from another session: %v", err)
	}
	_, err = lease.Guarded(ctx, &zk.SetDataRequest{Path: "/register", Data: []byte("2"), Version: -1})
	if !errors.Is(err, engine.ErrLost) {
		t.Fatalf("guarded write after the node's deletion: %v, want ErrLost", err)
	}
	data, _, err := raw.Get(root + "/register")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "1" {
		t.Fatalf("register %q after a refused write, want %q", data, "1")
	}
	_ = lease.Release(ctx)
	if _, err := lease.Guarded(ctx, &zk.SetDataRequest{Path: "/register", Data: []byte("3"), Version: -1}); !errors.Is(err, engine.ErrNotHeld) {
		t.Fatalf("guarded write after release: %v, want ErrNotHeld", err)
	}
}

// A lease lost to its session's expiry refuses at once, without a request.
func TestGuardedAfterExpiry(t *testing.T) {
	root := testRoot(t)
	var sessions zkserver.Sessions
	eng := startEngine(t, engine.Config{Root: root, Dialer: sessions.Dial})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lease, err := lock.NewMutex(eng, "/guarded").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sessions.Expire(ctx, zkServers(), eng.SessionID()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Lost():
	case <-ctx.Done():
		t.Fatal("the lease was never lost")
	}
	_, err = lease.Guarded(ctx, &zk.SetDataRequest{Path: "/guarded", Data: []byte("x"), Version: -1})
	if !errors.Is(err, engine.ErrLost) || err.Error() != lease.Err().Error() {
		t.Fatalf("guarded write on an expired session: %v, want the lease's loss (%v)", err, lease.Err())
	}
}

// Guarded writes a resource the lock protects only while the lock is held:
// the write and the check of the lease's node are one multi, which
// ZooKeeper applies whole or not at all.
func ExampleLease_Guarded() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers(), Root: "/examples/guarded"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	lease, err := lock.NewMutex(eng, "/lock").Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lease.Release(ctx)
	_, err = lease.Guarded(ctx,
		&zk.CreateRequest{Path: "/balance", Data: []byte("100"), Acl: zk.WorldACL(zk.PermAll)})
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		fmt.Println(err)
		return
	}
	res, err := lease.Guarded(ctx, &zk.SetDataRequest{Path: "/balance", Data: []byte("90"), Version: -1})
	switch {
	case errors.Is(err, engine.ErrLost):
		fmt.Println("not written: the lock was lost")
	case err != nil:
		fmt.Println(err)
	default:
		fmt.Println("written, balance version", res[0].Stat.Version > 0)
	}
	// Output:
	// written, balance version true
}
