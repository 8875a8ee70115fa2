package engine_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Config.ACLFor chooses each created node's ACL by its server path: lock
// nodes and containers under /secret get alice's digest ACL, everything
// else (Root's container, /open) the default open ACL. Read back with
// GetACL on every node; an engine without alice's credentials is refused
// under /secret. ACLFor sees full server paths, Root included. (Failing
// first: without the field the test does not compile; with ACLFor ignored,
// every node reads world:anyone.)
func TestACLForChoosesPerPath(t *testing.T) {
	ctx := boundedCtx(t)
	root := testRoot(t)
	var mu sync.Mutex
	var asked []string
	secret := root + "/secret"
	cfg := engine.Config{Root: root, Auth: []engine.Credential{alice}, Cohort: engine.CohortConfig{StrictFIFO: true},
		ACLFor: func(p string) []zk.ACL {
			mu.Lock()
			asked = append(asked, p)
			mu.Unlock()
			if p == secret || strings.HasPrefix(p, secret+"/") {
				return aliceOnly
			}
			return nil
		}}
	eng := startEngine(t, cfg)

	// Three at once on one secret path, so that their creates may share a
	// multi request; one on an open path.
	m := lock.NewMutex(eng, "/secret/lock")
	held, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiters := []*engine.Future[*lock.Lease]{m.Acquire(ctx), m.Acquire(ctx)}
	open, err := lock.NewMutex(eng, "/open/lock").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw := aliceConn(t)
	eventually(t, "the two waiters queued", func() bool {
		kids, _, err := raw.Children(secret + "/lock")
		return err == nil && len(kids) == 3
	})
	kids, _, err := raw.Children(secret + "/lock")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{root: "world", secret: "digest", secret + "/lock": "digest", root + "/open": "world",
		root + "/open/lock": "world", root + open.Node(): "world"}
	for _, k := range kids {
		want[secret+"/lock/"+k] = "digest"
	}
	for p, scheme := range want {
		acl, _, err := raw.GetACL(p)
		if err != nil {
			t.Fatalf("GetACL %s: %v", p, err)
		}
		ok := len(acl) == 1 && acl[0].Scheme == scheme && acl[0].Perms == zk.PermAll
		if scheme == "digest" {
			ok = ok && strings.HasPrefix(acl[0].ID, "alice:")
		}
		if !ok {
			t.Errorf("ACL of %s: %+v, want %s with every right", p, acl, scheme)
		}
	}
	mu.Lock()
	for _, p := range []string{root, secret, secret + "/lock"} {
		if !slices.Contains(asked, p) {
			t.Errorf("ACLFor never asked for %s (asked %v)", p, asked)
		}
	}
	// A sequential node is asked for by the path it is created with,
	// before the server appends its number.
	node := root + held.Node()
	if !slices.ContainsFunc(asked, func(p string) bool { return strings.HasPrefix(node, p) && len(node)-len(p) == 10 }) {
		t.Errorf("ACLFor never asked for %s without its sequence number (asked %v)", node, asked)
	}
	for _, p := range asked {
		if p != root && !strings.HasPrefix(p, root+"/") && !strings.HasPrefix(root, p+"/") {
			t.Errorf("ACLFor asked for %s, not a server path of the engine's", p)
		}
	}
	mu.Unlock()

	stranger := startEngine(t, engine.Config{Root: root})
	if _, err := lock.NewMutex(stranger, "/secret/lock").TryAcquire(ctx); !errors.Is(err, engine.ErrNoAuth) {
		t.Errorf("an engine without alice's credentials under /secret: %v, want ErrNoAuth", err)
	}
	for _, l := range []*lock.Lease{held, open} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range waiters {
		l, err := f.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
