package engine_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// ZooKeeper opcodes of the requests that make a lock path.
const (
	opMulti           = 14
	opCreateContainer = 19
)

// An acquisition cancelled while the request that makes its lock path is
// on the wire leaves nothing behind but a container the server reaps: one
// that had a child. ZooKeeper reaps an empty container only once it has
// had a child, so a lock path made without the lock node after it would
// stay forever.
func TestCancelledColdAcquireLeavesOnlyReapableContainer(t *testing.T) {
	ctx := context.Background()
	root := testRoot(t)
	key := root + "/k"
	raw := rawConn(t)
	mkdirs(t, raw, root)

	tap := newWireTap()
	held, let := make(chan struct{}), make(chan struct{})
	var once bool
	tap.onRequest = func(_, opcode int32, body []byte) verdict {
		// The request that makes the key: a createContainer of it, or a
		// multi that carries it. Held on the wire until the test has
		// cancelled the acquisition.
		makesKey := (opcode == opCreateContainer && requestPath(body) == key) ||
			(opcode == opMulti && bytes.Contains(body, []byte(key)))
		if makesKey && !once {
			once = true
			close(held)
			<-let
		}
		return pass
	}
	eng := startEngine(t, engine.Config{Dialer: tap.dial})

	actx, cancel := context.WithCancel(ctx)
	f := lock.NewMutex(eng, key).Acquire(actx)
	<-held
	cancel()
	if _, err := f.Wait(ctx); !errors.Is(err, context.Canceled) {
		close(let)
		t.Fatalf("acquisition: %v, want context.Canceled", err)
	}
	close(let)
	// The request's reply reaches the cancelled contender, which cleans
	// up; then nothing of the acquisition is left in flight.
	eventually(t, "the engine's cleanup", func() bool {
		return eng.Stats().Deletes > 0 && eng.InFlight() == 0
	})
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}

	ok, st, err := raw.Exists(key)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Logf("%s after the cancelled acquisition: gone (%d requests sent)", key, eng.Stats().Requests())
		return
	}
	t.Logf("%s after the cancelled acquisition: %d children, cversion %d (%d requests sent)", key, st.NumChildren, st.Cversion, eng.Stats().Requests())
	if st.NumChildren != 0 {
		t.Errorf("%s has %d children left", key, st.NumChildren)
	}
	if st.Cversion == 0 {
		t.Errorf("left behind: %s, a container that never had a child, which the server never reaps", key)
	}
}

// A key locked for the first time on a real server: its path is made with
// the node in one multi, and the node holds without a listing. A path
// another client made is listed, and kept; a path of the engine's making
// that another client's node joined is kept too, and the engine's next try
// there sees that node. Tokens grow on a path used again.
func TestColdKeysOnServer(t *testing.T) {
	ctx := context.Background()
	root := testRoot(t)
	raw := rawConn(t)
	mkdirs(t, raw, root)
	eng := startEngine(t, engine.Config{})
	exists := func(p string) bool {
		t.Helper()
		ok, _, err := raw.Exists(p)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	cycle := func(p string) int64 {
		t.Helper()
		l, err := lock.NewMutex(eng, p).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		return l.Token()
	}

	before := eng.Stats()
	first := cycle(root + "/k1")
	s := eng.Stats()
	t.Logf("a cold key: %d requests (%d multis), %d listings, %d container creates", s.Requests()-before.Requests(),
		s.Multis-before.Multis, s.Lists-before.Lists, s.ParentCreates-before.ParentCreates)
	if s.Lists != before.Lists || s.ParentCreates == before.ParentCreates || s.Requests()-before.Requests() != 2 {
		t.Errorf("a cold key cost %+v → %+v: want two multis, a container create and no listing", before, s)
	}
	if again := cycle(root + "/k1"); again <= first {
		t.Errorf("token %d after the path was made again, not above %d", again, first)
	}

	mkdirs(t, raw, root+"/k2") // another client's path
	before = eng.Stats()
	cycle(root + "/k2")
	if s := eng.Stats(); s.Lists-before.Lists != 1 {
		t.Errorf("a path made by another client: %d listings, want 1", s.Lists-before.Lists)
	}
	if !exists(root + "/k2") {
		t.Errorf("%s/k2, made by another client, deleted", root)
	}

	deleting := startEngine(t, engine.Config{DeleteLockPaths: true})
	dl, err := lock.NewMutex(deleting, root+"/k4").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := dl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if exists(root + "/k4") {
		t.Errorf("%s/k4 left after its only lock was released with DeleteLockPaths", root)
	}
	if !exists(root + "/k1") {
		t.Errorf("%s/k1 deleted without DeleteLockPaths", root)
	}

	l, err := lock.NewMutex(eng, root+"/k3").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := raw.Create(root+"/k3/_c_ffffffff-ffff-4fff-8fff-ffffffffffff-lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !exists(other) {
		t.Fatalf("another client's node %s gone with the path", other)
	}
	if l, err := lock.NewMutex(eng, root+"/k3").TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Errorf("try beside another client's node %s: lease %v, err %v; want ErrWouldBlock", other, l, err)
	}
}
