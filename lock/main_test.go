package lock_test

import (
	"os"
	"testing"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/internal/zktest"
)

// shared is one real ZooKeeper for every test that does not break its server.
var shared *zkserver.Server

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// TestTwoProcessesExclude re-executes this binary as a contender.
		os.Exit(runChild())
	}
	goleak.VerifyTestMain(zkserver.Shared(m, &shared))
}

// zkServers is where the examples find ZooKeeper: in the tests, the one
// TestMain started.
func zkServers() []string { return []string{shared.Addr()} }

func startEngine(t testing.TB, cfg engine.Config) *engine.Engine {
	t.Helper()
	e := zktest.StartEngine(t, shared.Addr(), cfg)
	t.Cleanup(func() { e.Close() })
	return e
}

// lockRoot is a lock root of the test's own, so tests never share nodes.
func lockRoot(t testing.TB) string { return zktest.Root(t) }

// inspect opens a separate plain ZooKeeper session for checks.
func inspect(t testing.TB, addr string) *zk.Conn { return zktest.Connect(t, addr) }

// lockNodes counts the contender nodes (ephemeral children) anywhere under root.
func lockNodes(t testing.TB, conn *zk.Conn, root string) int {
	return len(zktest.Ephemerals(t, conn, root))
}

// eventually polls cond until it holds or a generous bound passes: for state
// that settles asynchronously (a delete still in flight), never for timing.
func eventually(t testing.TB, what string, cond func() bool) { zktest.Eventually(t, what, cond) }

// strictFIFO is an engine without lock cohorting: every acquisition queues
// a node of its own on ZooKeeper. The tests of the engine's own queue (its
// local handoff, the order of nodes, waits on the server) run on it.
var strictFIFO = engine.Config{Cohort: engine.CohortConfig{StrictFIFO: true}}

// queueModes are the two ways one engine's acquisitions of a lock queue:
// passing a granted node among themselves (the default), or each with a
// node of its own.
var queueModes = []struct {
	name string
	cfg  engine.Config
}{{"cohort", engine.Config{}}, {"strict", strictFIFO}}

// waits counts the waits armed so far, on the server or on a node of the
// same engine.
func waits(s engine.Stats) uint64 { return s.Watches + s.LocalWatches }
