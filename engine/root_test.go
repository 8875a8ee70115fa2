package engine_test

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/seam"
	"github.com/turnstile-go/turnstile/lock"
)

// Two engines with different roots hold "the same" lock at once: each
// path lives under its own root. An engine with the same root excludes.
// Everything handed back is relative to the root (Lease.Path, Lease.Node,
// Participants, the observer's reports) and taken back as it is (Revoke),
// while a plain session sees the nodes under the root.
func TestRootSeparatesNamespaces(t *testing.T) {
	ctx := boundedCtx(t)
	base := testRoot(t)
	const userPath = "/jobs/42"

	var mu sync.Mutex
	var reported []string
	observe := func(r events.Report) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, r.Path)
	}
	a := startEngine(t, engine.Config{Root: base + "/a", Observer: observe})
	b := startEngine(t, engine.Config{Root: base + "/b"})

	la, err := lock.NewMutex(a, userPath, lock.WithRevocation()).TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := lock.NewMutex(b, userPath).TryAcquire(ctx)
	if err != nil {
		t.Fatalf("the same path under another root while held: %v, want granted", err)
	}
	for _, l := range []*lock.Lease{la, lb} {
		if l.Path() != userPath || path.Dir(l.Node()) != userPath {
			t.Errorf("lease path %q node %q, want both relative to the root, under %q", l.Path(), l.Node(), userPath)
		}
	}

	raw := rawConn(t)
	for root, l := range map[string]*lock.Lease{base + "/a": la, base + "/b": lb} {
		if nodes := ephemerals(t, raw, root); len(nodes) != 1 || nodes[0] != root+l.Node() {
			t.Errorf("nodes under %s: %v, want %s", root, nodes, root+l.Node())
		}
	}
	if nodes := ephemerals(t, raw, userPath); slices.Contains(nodes, userPath+"/"+path.Base(la.Node())) {
		t.Errorf("a node of the rooted engine at the server's %s", userPath)
	}

	same := startEngine(t, engine.Config{Root: base + "/a"})
	if _, err := lock.NewMutex(same, userPath).TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Errorf("the same root and path while held: %v, want ErrWouldBlock", err)
	}
	ps, err := lock.Participants(ctx, same, userPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Node != la.Node() || !ps[0].Holds {
		t.Errorf("participants: %+v, want the holder %s", ps, la.Node())
	}
	if err := lock.Revoke(ctx, same, ps[0].Node); err != nil {
		t.Fatal(err)
	}
	<-la.Revoked()

	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) == 0 {
		t.Fatal("no reports")
	}
	for _, p := range reported {
		if p != userPath {
			t.Errorf("report path %q, want %q", p, userPath)
		}
	}
}

// A path that is valid alone but too long under the root is refused
// before anything is sent.
func TestRootedPathTooLong(t *testing.T) {
	root := testRoot(t)
	eng := startEngine(t, engine.Config{Root: root})
	p := "/" + strings.Repeat("x", engine.MaxPathLen-1)
	if err := engine.ValidatePath(p); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.NewMutex(eng, p).TryAcquire(context.Background()); !errors.Is(err, engine.ErrInvalidPath) {
		t.Errorf("acquire: %v, want ErrInvalidPath", err)
	}
	if _, err := seam.Children(eng, context.Background(), p); !errors.Is(err, engine.ErrInvalidPath) {
		t.Errorf("children: %v, want ErrInvalidPath", err)
	}
}
