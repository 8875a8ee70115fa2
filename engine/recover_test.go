package engine_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// nodesOf lists the children of path that session owns.
func nodesOf(t testing.TB, conn *zk.Conn, path string, session int64) []string {
	t.Helper()
	children, _, err := conn.Children(path)
	if err != nil {
		t.Fatalf("list %s: %v", path, err)
	}
	var owned []string
	for _, c := range children {
		ok, stat, err := conn.Exists(path + "/" + c)
		if err != nil {
			t.Fatalf("stat %s/%s: %v", path, c, err)
		}
		if ok && stat.EphemeralOwner == session {
			owned = append(owned, path+"/"+c)
		}
	}
	return owned
}

// lostCreateScene sets up a recovery test: a lock path that exists, a plain
// session to look at it with, and a tap for the engine's connection, whose
// onRequest decides the fate of a create.
func lostCreateScene(t *testing.T) (ctx context.Context, lockPath string, raw *zk.Conn, tap *wireTap) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	lockPath = testRoot(t) + "/a"
	raw = rawConn(t)
	mkdirs(t, raw, lockPath)
	return ctx, lockPath, raw, newWireTap()
}

// A create whose reply is lost with the connection: the server made the
// node, and the recovery read (a sync, then a listing) finds and adopts it.
func TestRecoveryAdoptsOwnNodeAfterSync(t *testing.T) {
	ctx, lockPath, raw, tap := lostCreateScene(t)
	var (
		mu    sync.Mutex
		asked string   // the create whose reply was lost
		reads []string // what was asked of the lock path after that
	)
	tap.onRequest = func(_, opcode int32, body []byte) verdict {
		mu.Lock()
		defer mu.Unlock()
		p := requestPath(body)
		switch {
		case asked == "" && opcode == opCreate && strings.HasPrefix(p, lockPath+"/"):
			asked = p
			return loseReply
		case asked != "" && opcode == opSync && p == lockPath:
			reads = append(reads, "sync")
		case asked != "" && opcode == opGetChildren2 && p == lockPath:
			reads = append(reads, "list")
		}
		return pass
	}
	eng := startEngine(t, engine.Config{Dialer: tap.dial})

	l, err := lock.NewMutex(eng, lockPath).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	t.Logf("lost the reply to the create of %s; then asked the lock path for %v; holding %s", asked, reads, l.Node())
	if asked == "" {
		mu.Unlock()
		t.Fatal("no create's reply was lost: the test did not exercise recovery")
	}
	if !strings.HasPrefix(l.Node(), asked) {
		t.Errorf("holding %s, not the node of the create whose reply was lost (%s...)", l.Node(), asked)
	}
	if len(reads) == 0 || reads[0] != "sync" {
		t.Errorf("recovery asked the lock path for %v: it listed without a sync first", reads)
	}
	mu.Unlock()
	if nodes := ephemerals(t, raw, lockPath); !slices.Equal(nodes, []string{l.Node()}) {
		t.Errorf("lock nodes %v, want only the lease's", nodes)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A create lost before it reached the server, while another session made a
// node under the very name it asked for: recovery must not adopt that node
// (nor delete it), but queue behind it under a fresh id.
func TestRecoveryOnServerIgnoresNodeOfAnotherSession(t *testing.T) {
	ctx, lockPath, raw, tap := lostCreateScene(t)
	var (
		mu         sync.Mutex
		foreign    string
		foreignErr error
	)
	tap.onRequest = func(_, opcode int32, body []byte) verdict {
		mu.Lock()
		defer mu.Unlock()
		if p := requestPath(body); foreign == "" && foreignErr == nil && opcode == opCreate && strings.HasPrefix(p, lockPath+"/") {
			foreign, foreignErr = raw.Create(p, nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			return cutBefore
		}
		return pass
	}
	eng := startEngine(t, engine.Config{Dialer: tap.dial})

	f := lock.NewMutex(eng, lockPath).Acquire(ctx)
	var own []string
	eventually(t, "the engine's own node, or the acquisition's end", func() bool {
		if _, ok, _ := f.Result(); ok {
			return true
		}
		own = nodesOf(t, raw, lockPath, eng.SessionID())
		return len(own) > 0
	})
	mu.Lock()
	t.Logf("another session made %s (%v) under the name of the lost create", foreign, foreignErr)
	if foreignErr != nil || foreign == "" {
		mu.Unlock()
		t.Fatalf("the other session's create: %q, %v", foreign, foreignErr)
	}
	mu.Unlock()
	if l, ok, err := f.Result(); ok {
		node := ""
		if l != nil {
			node = l.Node()
		}
		t.Fatalf("acquisition ended (lease %q, %v) while the other session's node, ahead of it, exists", node, err)
	}
	if len(own) != 1 {
		t.Fatalf("the engine's nodes: %v, want one", own)
	}
	// The node ahead goes: the engine's own is granted.
	if err := raw.Delete(foreign, -1); err != nil {
		t.Fatal(err)
	}
	l, err := f.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Node() != own[0] {
		t.Errorf("holding %s, want the engine's own node %s", l.Node(), own[0])
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no lock node left", func() bool { return len(ephemerals(t, raw, lockPath)) == 0 })
}
