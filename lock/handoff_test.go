package lock_test

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
)

// Local handoff: when a holder of an engine releases and a waiter of the
// same engine waits on its node, the waiter may be granted on the reply to
// the delete, without listing again. These tests check that it happens
// only when it is safe, on one engine and one path. The engine has no lock
// cohorting, which would pass the lock between two mutexes or writers of
// one engine before the loop's handoff could.

// settled waits until f has resolved or eng has armed a wait since before:
// a waiter woken by a release has either been granted or looked again.
func settled(t *testing.T, eng *engine.Engine, before engine.Stats, f *engine.Future[*lock.Lease]) {
	t.Helper()
	eventually(t, "the waiter granted or waiting again", func() bool {
		return !pending(f) || waits(eng.Stats()) > waits(before)
	})
}

// Readers r1 and r2 hold; a mutex queues behind r2. When r2 lets go, r1
// still holds: the mutex must not be handed the lock.
func TestHandoffNotPastAReaderStillHolding(t *testing.T) {
	eng := startEngine(t, strictFIFO)
	p := lockRoot(t) + "/readers"
	ctx := context.Background()

	r1, err := lock.NewRWMutex(eng, p).Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := lock.NewRWMutex(eng, p).Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := eng.Stats()
	m := lock.NewMutex(eng, p).Acquire(ctx)
	queued(t, eng, before, 1)

	before = eng.Stats()
	if err := r2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	settled(t, eng, before, m)
	if !pending(m) {
		t.Fatalf("the mutex was granted when reader %s let go, while reader %s still holds", path.Base(r2.Node()), path.Base(r1.Node()))
	}
	if err := r1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := m.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
}

// A writer holds and a mutex queues behind it; the writer downgrades and
// lets go of its write lease. The downgraded read lease holds: the mutex
// must not be handed the lock beside it.
func TestHandoffNotBesideADowngradedReader(t *testing.T) {
	eng := startEngine(t, strictFIFO)
	rw := lock.NewRWMutex(eng, lockRoot(t)+"/downgrade")
	ctx := context.Background()

	w, err := rw.Writer().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := eng.Stats()
	m := lock.NewMutex(eng, rw.Path()).Acquire(ctx)
	queued(t, eng, before, 1)
	r, err := rw.Downgrade(ctx, w).Wait(ctx)
	if err != nil {
		t.Fatalf("downgrade: %v", err)
	}

	before = eng.Stats()
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	settled(t, eng, before, m)
	if !pending(m) {
		t.Fatalf("the mutex was granted beside the downgraded read lease %s", path.Base(r.Node()))
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := m.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
}

// The recipes that share a path, as the departing holder and as the waiter
// queued behind it.
type holderKind string

const (
	holdMutex      holderKind = "mutex"
	holdWriter     holderKind = "writer"
	holdReader     holderKind = "reader"
	holdDowngraded holderKind = "downgraded-writer" // departs by releasing its write lease
	// A writer that downgrades once the waiter is queued, then departs by
	// releasing its write lease: the read node is not in the waiter's
	// listing.
	holdDowngrading holderKind = "writer-downgrading-later"
)

type waiterKind string

const (
	waitMutex  waiterKind = "mutex"
	waitWriter waiterKind = "writer"
	waitReader waiterKind = "reader"
)

// bystander is another contender on the path, created with a plain
// ZooKeeper connection under kazoo's names, as a Python client would.
type bystander string

const (
	noBystander   bystander = "alone"
	readerAhead   bystander = "kazoo-reader-ahead"   // a __rlock__ node before the holder, holding beside it
	readerBetween bystander = "kazoo-reader-between" // a __rlock__ node between the holder and the waiter
	writerBetween bystander = "kazoo-writer-between" // a __lock__ node between the holder and the waiter
)

// kazooID stands for the uuid4().hex that kazoo puts before its marker.
const kazooID = "5f0c1a2b3c4d4e5f8a9b0c1d2e3f4a5b"

// TestHandoffEveryPairing runs every pairing of departing holder and waiter
// that can share a path, alone and beside kazoo-named nodes, and checks
// both halves of the handoff rule: the waiter is granted only when nothing
// left on the path excludes it (checked on an independent listing at the
// grant), and, where the departing holder was exclusive and the waiter's
// only obstacle, it is granted on the delete's reply without a listing.
func TestHandoffEveryPairing(t *testing.T) {
	eng := startEngine(t, strictFIFO)
	raw := inspect(t, shared.Addr())
	root := lockRoot(t)
	holders := []holderKind{holdMutex, holdWriter, holdReader, holdDowngraded, holdDowngrading}
	waiters := []waiterKind{waitMutex, waitWriter, waitReader}
	for _, h := range holders {
		for _, w := range waiters {
			for _, b := range []bystander{noBystander, readerAhead, readerBetween, writerBetween} {
				if b == readerAhead && h != holdReader {
					continue // an exclusive holder cannot hold behind a reader
				}
				name := fmt.Sprintf("%s/%s/%s", h, w, b)
				t.Run(name, func(t *testing.T) {
					handoffCase(t, eng, raw, root+"/"+strings.ReplaceAll(name, "/", "-"), h, w, b)
				})
			}
		}
	}
}

func handoffCase(t *testing.T, eng *engine.Engine, raw *zk.Conn, p string, h holderKind, w waiterKind, b bystander) {
	ctx := context.Background()
	mkdirs(t, raw, p)
	// An obstacle is a node that keeps the waiter out once the holder is
	// gone; they are removed in order, after the holder.
	type obstacle struct {
		node   string
		remove func()
	}
	var obstacles []obstacle
	rawNode := func(marker string, blocks bool) {
		t.Helper()
		node, err := raw.Create(p+"/"+kazooID+marker, nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		if blocks {
			obstacles = append(obstacles, obstacle{node, func() {
				if err := raw.Delete(node, -1); err != nil {
					t.Fatal(err)
				}
			}})
		}
	}
	if b == readerAhead {
		rawNode("__rlock__", w != waitReader)
	}

	// The holder.
	var held, kept *lock.Lease // held departs; kept is a downgrade's read lease
	var err error
	switch h {
	case holdMutex:
		held, err = lock.NewMutex(eng, p).Lock(ctx)
	case holdWriter, holdDowngrading:
		held, err = lock.NewRWMutex(eng, p).Writer().Lock(ctx)
	case holdReader:
		held, err = lock.NewRWMutex(eng, p).Reader().Lock(ctx)
	case holdDowngraded:
		rw := lock.NewRWMutex(eng, p)
		if held, err = rw.Writer().Lock(ctx); err == nil {
			kept, err = rw.Downgrade(ctx, held).Wait(ctx)
		}
	}
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	if kept != nil && w != waitReader {
		obstacles = append([]obstacle{{kept.Node(), func() { kept.Release(ctx) }}}, obstacles...)
	}
	switch b {
	case readerBetween:
		rawNode("__rlock__", w != waitReader)
	case writerBetween:
		rawNode("__lock__", true)
	}

	// The waiter.
	before := eng.Stats()
	var f *engine.Future[*lock.Lease]
	switch w {
	case waitMutex:
		f = lock.NewMutex(eng, p).Acquire(ctx)
	case waitWriter:
		f = lock.NewRWMutex(eng, p).Writer().Acquire(ctx)
	case waitReader:
		f = lock.NewRWMutex(eng, p).Reader().Acquire(ctx)
	}
	if h == holdReader && w == waitReader && b != writerBetween {
		// Readers share: nothing to hand over.
		l, err := f.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkAdmitted(t, raw, p, l, w)
		l.Release(ctx)
		held.Release(ctx)
		for _, o := range obstacles {
			o.remove()
		}
		return
	}
	settled(t, eng, before, f)
	if !pending(f) {
		t.Fatalf("granted while the %s holds", h)
	}
	if h == holdDowngrading {
		if kept, err = lock.NewRWMutex(eng, p).Downgrade(ctx, held).Wait(ctx); err != nil {
			t.Fatalf("downgrade: %v", err)
		}
		if w != waitReader {
			obstacles = append([]obstacle{{kept.Node(), func() { kept.Release(ctx) }}}, obstacles...)
		}
	}

	// The holder departs, then each obstacle. A departure wakes the waiter
	// only if it watches that node; a handoff happens before the release
	// returns, and a waiter woken lists and then waits again or is granted.
	legit := (h == holdMutex || h == holdWriter) && len(obstacles) == 0
	departures := append([]obstacle{{held.Node(), func() {
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}}}, obstacles...)
	for i, d := range departures {
		wakes := watchedBy(t, raw, p, w) == d.node
		before = eng.Stats()
		d.remove()
		if i == len(departures)-1 {
			break
		}
		if wakes {
			settled(t, eng, before, f)
		}
		if !pending(f) {
			t.Fatalf("granted when %s left, while %d more obstacles remain", path.Base(d.node), len(departures)-1-i)
		}
	}
	l, err := f.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkAdmitted(t, raw, p, l, w)
	if lists := eng.Stats().Lists - before.Lists; legit && lists != 0 {
		t.Errorf("%d listings for a handoff from an exclusive holder of this engine, want 0", lists)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if kept != nil && w == waitReader {
		kept.Release(ctx)
	}
}

// watchedBy is the full path of the node the waiter of kind w (the last
// node created on p) watches, by its recipe's rule over a listing on an
// independent connection.
func watchedBy(t *testing.T, raw *zk.Conn, p string, w waiterKind) string {
	t.Helper()
	children, _, err := raw.Children(p)
	if err != nil {
		t.Fatal(err)
	}
	l := queue.NewListing(children)
	nodes := l.Nodes()
	if len(nodes) == 0 {
		t.Fatalf("no lock node on %s", p)
	}
	self := slices.MaxFunc(nodes, func(a, b queue.Node) int { return cmp.Compare(a.Seq, b.Seq) }).Name
	var d queue.Decision
	switch w {
	case waitMutex:
		d = l.Mutex(self)
	case waitWriter:
		d = l.Write(self)
	case waitReader:
		d = l.Read(self)
	}
	return p + "/" + d.Watch
}

// checkAdmitted lists the path on an independent connection and fails if
// any node there excludes the granted lease l of kind w: anything ahead of
// an exclusive lease, or an exclusive node with a lower number ahead of a
// reader.
func checkAdmitted(t *testing.T, raw *zk.Conn, p string, l *lock.Lease, w waiterKind) {
	t.Helper()
	children, _, err := raw.Children(p)
	if err != nil {
		t.Fatal(err)
	}
	nodes := queue.NewListing(children).Nodes()
	self, ok := queue.Parse(path.Base(l.Node()))
	if !ok {
		t.Fatalf("lease node %s does not parse", l.Node())
	}
	for _, n := range nodes {
		if n.Name == self.Name || !(n.Seq < self.Seq || n.Seq == self.Seq && n.Name < self.Name) {
			continue
		}
		if w != waitReader || n.Kind != queue.KindRead {
			t.Fatalf("%s %s granted with %s %s still on the path ahead of it", w, self.Name, n.Kind, n.Name)
		}
	}
}

// mkdirs creates p and its missing ancestors as persistent nodes.
func mkdirs(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		_, err := conn.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && err != zk.ErrNodeExists {
			t.Fatalf("create %s: %v", p[:i], err)
		}
	}
}
