package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/internal/zktest"
)

// shared is one real ZooKeeper for every test that does not break its server.
var shared *zkserver.Server

func TestMain(m *testing.M) {
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

// electionPath is an election path of the test's own.
func electionPath(t testing.TB) string { return zktest.Root(t) + "/election" }

// inspect opens a separate plain ZooKeeper session for checks.
func inspect(t testing.TB) *zk.Conn { return zktest.Connect(t, shared.Addr()) }

// children lists path's children, none when it does not exist.
func children(t testing.TB, conn *zk.Conn, path string) []string {
	t.Helper()
	kids, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		t.Fatalf("list %s: %v", path, err)
	}
	return kids
}

// eventually polls cond until it holds or a generous bound passes: for state
// that settles asynchronously, never for timing.
func eventually(t testing.TB, what string, cond func() bool) { zktest.Eventually(t, what, cond) }

// bounded is a context for one step of a test that must not hang.
func bounded(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
