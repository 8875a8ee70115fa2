package engine_test

import (
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/zktest"
)

// startEngine starts an engine on the shared server (unless cfg names
// servers) and closes it when the test ends.
func startEngine(t testing.TB, cfg engine.Config) *engine.Engine {
	t.Helper()
	e := zktest.StartEngine(t, shared.Addr(), cfg)
	t.Cleanup(func() { e.Close() })
	return e
}

// testRoot is a lock root of the test's own, so tests never share nodes.
func testRoot(t testing.TB) string { return zktest.Root(t) }

// rawConn opens a plain ZooKeeper session, outside any engine, for setting
// up and checking.
func rawConn(t testing.TB) *zk.Conn { return zktest.Connect(t, shared.Addr()) }

// mkdirs creates p and its missing ancestors as persistent nodes.
func mkdirs(t testing.TB, conn *zk.Conn, p string) {
	t.Helper()
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		if _, err := conn.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatalf("create %s: %v", p[:i], err)
		}
	}
}

// ephemerals lists the ephemeral nodes (lock nodes) anywhere under root.
func ephemerals(t testing.TB, conn *zk.Conn, root string) []string {
	return zktest.Ephemerals(t, conn, root)
}

// eventually polls cond until it holds or a generous bound passes: for state
// that settles asynchronously, never for timing.
func eventually(t testing.TB, what string, cond func() bool) { zktest.Eventually(t, what, cond) }

// loopGate holds the engine's loop still, so that a test can queue several
// commands that the loop then handles in one turn. The loop is held inside
// the observer, on the report of the first grant of path.
type loopGate struct {
	path     string
	once     sync.Once
	entered  chan struct{} // closed once the loop is held
	open     chan struct{} // closed to let it go
	openOnce sync.Once
}

func newLoopGate(path string) *loopGate {
	return &loopGate{path: path, entered: make(chan struct{}), open: make(chan struct{})}
}

// observe is the engine's Observer.
func (g *loopGate) observe(r events.Report) {
	if r.Kind != events.Granted || r.Path != g.path {
		return
	}
	g.once.Do(func() {
		close(g.entered)
		<-g.open
	})
}

// hold has the loop held: it acquires the gate's path through acquire and
// returns once the loop is inside the grant's report. The returned future
// is the gate's acquisition. The loop is let go at the end of the test at
// the latest.
func (g *loopGate) hold(t testing.TB, acquire func() *engine.Future[*engine.Lease]) *engine.Future[*engine.Lease] {
	t.Helper()
	t.Cleanup(g.release)
	f := acquire()
	select {
	case <-g.entered:
		return f
	case <-f.Done():
	}
	// Resolved; the grant's report comes after the future's resolution.
	if _, _, err := f.Result(); err != nil {
		t.Fatalf("gate acquisition: %v", err)
	}
	<-g.entered
	return f
}

// release lets the loop go on.
func (g *loopGate) release() { g.openOnce.Do(func() { close(g.open) }) }
