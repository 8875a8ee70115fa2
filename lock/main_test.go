package lock_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
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
	if cfg.Servers == nil {
		cfg.Servers = zkServers()
	}
	if f := os.Getenv("TURNSTILE_TEST_LOG"); f != "" && cfg.Logger == nil {
		fh, _ := os.Create(f)
		cfg.Logger = slog.New(slog.NewTextHandler(fh, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := engine.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start engine: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// lockRoot is a lock root of the test's own, so tests never share nodes.
func lockRoot(t testing.TB) string {
	return "/test/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + fmt.Sprintf("-%d", time.Now().UnixNano())
}

// inspect opens a separate plain ZooKeeper session for checks.
func inspect(t testing.TB, addr string) *zk.Conn { return zktest.Inspect(t, addr) }

// lockNodes counts the contender nodes (ephemeral children) anywhere under root.
func lockNodes(t testing.TB, conn *zk.Conn, root string) int {
	t.Helper()
	n := 0
	var walk func(p string)
	walk = func(p string) {
		children, _, err := conn.Children(p)
		if err == zk.ErrNoNode {
			return
		}
		if err != nil {
			t.Fatalf("list %s: %v", p, err)
		}
		for _, c := range children {
			child := p + "/" + c
			_, stat, err := conn.Get(child)
			if err == zk.ErrNoNode {
				continue
			}
			if err != nil {
				t.Fatalf("get %s: %v", child, err)
			}
			if stat.EphemeralOwner != 0 {
				n++
			}
			walk(child)
		}
	}
	walk(root)
	return n
}

// eventually polls cond until it holds or a generous bound passes: for state
// that settles asynchronously (a delete still in flight), never for timing.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waits counts the waits armed so far, on the server or on a node of the
// same engine.
func waits(s engine.Stats) uint64 { return s.Watches + s.LocalWatches }
