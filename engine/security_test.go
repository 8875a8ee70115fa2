package engine_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/lock"
)

// alice is the digest identity the secured tests lock as.
var alice = engine.Credential{Scheme: "digest", Secret: []byte("alice:wonderland")}

// aliceOnly is an ACL that gives every right to alice and none to anyone else.
var aliceOnly = zk.DigestACL(zk.PermAll, "alice", "wonderland")

// boundedCtx is a context for a step that must not wait: a refusal comes
// back at once, and a bound far beyond that turns a retry loop into a
// failure rather than a hang.
func boundedCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// An engine without alice's credentials can neither join nor disturb a
// lock whose nodes only alice may touch: its acquisitions fail at once
// with ErrNoAuth, a plain session of its kind cannot delete or revoke the
// holder's node, and the holder holds throughout. An engine with alice's
// credentials queues behind the holder and is granted once it releases.
func TestUnauthorisedCannotTakeOverSecuredLock(t *testing.T) {
	ctx := boundedCtx(t)
	path := testRoot(t) + "/secured"
	owner := startEngine(t, engine.Config{Auth: []engine.Credential{alice}, ACL: aliceOnly})
	held, err := lock.NewMutex(owner, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}

	stranger := startEngine(t, engine.Config{})
	for name, acquire := range map[string]func(context.Context) (*lock.Lease, error){
		"Lock":       lock.NewMutex(stranger, path).Lock,
		"TryAcquire": lock.NewMutex(stranger, path).TryAcquire,
	} {
		l, err := acquire(ctx)
		if l != nil || !errors.Is(err, engine.ErrNoAuth) {
			t.Errorf("unauthorised %s: lease %v, err %v; want ErrNoAuth", name, l, err)
		}
	}
	if err := lock.Revoke(ctx, stranger, held.Node()); !errors.Is(err, engine.ErrNoAuth) {
		t.Errorf("unauthorised Revoke: %v, want ErrNoAuth", err)
	}
	raw := rawConn(t)
	if err := raw.Delete(held.Node(), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthorised delete of the holder's node: %v, want zk.ErrNoAuth", err)
	}
	if nodes := ephemeralsAs(t, path); len(nodes) != 1 || nodes[0] != held.Node() {
		t.Errorf("nodes under the lock path: %v, want only the holder's %s", nodes, held.Node())
	}
	if !held.Held() {
		t.Fatalf("holder lost its lease: %v", held.Err())
	}

	friend := startEngine(t, engine.Config{Auth: []engine.Credential{alice}, ACL: aliceOnly})
	m := lock.NewMutex(friend, path)
	if _, err := m.TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("authorised TryAcquire while held: %v, want ErrWouldBlock", err)
	}
	next := m.Acquire(ctx)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := next.Wait(ctx)
	if err != nil {
		t.Fatalf("authorised acquisition after the release: %v", err)
	}
	if l.Token() <= held.Token() {
		t.Errorf("token %d after %d", l.Token(), held.Token())
	}
}

// ephemeralsAs lists the lock nodes under p as alice sees them.
func ephemeralsAs(t *testing.T, p string) []string { return ephemerals(t, aliceConn(t), p) }

// aliceConn is a plain session with alice's credentials.
func aliceConn(t *testing.T) *zk.Conn {
	t.Helper()
	raw := rawConn(t)
	if err := raw.AddAuth(alice.Scheme, alice.Secret); err != nil {
		t.Fatal(err)
	}
	return raw
}

// zk.AuthACL gives the rights to whoever created the node: the engine's
// nodes, lock path and lock nodes alike, carry its own digest identity,
// and nobody else's.
func TestCreatorOnlyACL(t *testing.T) {
	ctx := boundedCtx(t)
	path := testRoot(t) + "/creator"
	owner := startEngine(t, engine.Config{Auth: []engine.Credential{alice}, ACL: zk.AuthACL(zk.PermAll)})
	held, err := lock.NewMutex(owner, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw := aliceConn(t)
	for _, p := range []string{path, held.Node()} {
		acl, _, err := raw.GetACL(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "alice:") || acl[0].Perms != zk.PermAll {
			t.Errorf("ACL of %s: %+v, want alice's digest with every right", p, acl)
		}
	}
	stranger := startEngine(t, engine.Config{})
	if _, err := lock.NewMutex(stranger, path).TryAcquire(ctx); !errors.Is(err, engine.ErrNoAuth) {
		t.Errorf("unauthorised TryAcquire: %v, want ErrNoAuth", err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// The credentials outlive the connection: after a cut the engine, on a
// new connection, still creates under a path only its identity may touch.
func TestAuthSurvivesReconnect(t *testing.T) {
	ctx := boundedCtx(t)
	path := testRoot(t) + "/reconnect"
	var p netfault.Partition
	eng := startEngine(t, engine.Config{Auth: []engine.Credential{alice}, ACL: aliceOnly, Dialer: p.Dial})
	first, err := lock.NewMutex(eng, path+"/a").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	<-first.Suspended()
	p.Heal()
	if _, err := lock.NewMutex(eng, path+"/b").Lock(ctx); err != nil {
		t.Fatalf("acquisition on the secured path after a reconnect: %v", err)
	}
}

// A lock path whose ACL lets anyone create a node but not delete one:
// the engine's release is refused. It fails with ErrNoAuth at once,
// instead of asking again for as long as the session lives, and the
// lease's context ends with that error.
func TestReleaseRefusedFailsWithNoAuth(t *testing.T) {
	ctx := boundedCtx(t)
	path := testRoot(t) + "/nodelete"
	admin := aliceConn(t)
	mkdirs(t, admin, path[:strings.LastIndexByte(path, '/')])
	acl := append(zk.WorldACL(zk.PermCreate|zk.PermRead), aliceOnly...)
	if _, err := admin.Create(path, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	eng := startEngine(t, engine.Config{})
	l, err := lock.NewMutex(eng, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leaseCtx := l.Context()
	err = l.Release(ctx)
	if !errors.Is(err, engine.ErrNoAuth) {
		t.Fatalf("release refused by the ACL: %v, want ErrNoAuth", err)
	}
	if cause := context.Cause(leaseCtx); !errors.Is(cause, engine.ErrNoAuth) {
		t.Errorf("lease context's cause: %v, want ErrNoAuth", cause)
	}
	// The node stays until the session ends.
	if nodes := ephemerals(t, admin, path); len(nodes) != 1 || nodes[0] != l.Node() {
		t.Errorf("nodes after the refused release: %v, want %s", nodes, l.Node())
	}
	eng.Close()
	eventually(t, "the node gone with the session", func() bool { return len(ephemerals(t, admin, path)) == 0 })
	if err := admin.Delete(path, -1); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

func TestSecurityConfigRefused(t *testing.T) {
	for name, cfg := range map[string]engine.Config{
		"auth ACL without credentials":             {ACL: zk.AuthACL(zk.PermAll)},
		"auth ACL with TLS, no client certificate": {ACL: zk.AuthACL(zk.PermAll), TLS: &tls.Config{}},
		"credential without scheme":                {Auth: []engine.Credential{{Secret: []byte("x:y")}}},
		"ACL entry without rights":                 {ACL: []zk.ACL{{Scheme: "world", ID: "anyone"}}},
		"root not a path":                          {Root: "app"},
		"root with trailing slash":                 {Root: "/app/"},
	} {
		cfg.Servers = []string{shared.Addr()}
		if e, err := engine.Start(context.Background(), cfg); !errors.Is(err, engine.ErrInvalidConfig) {
			if e != nil {
				e.Close()
			}
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}
