package election_test

import (
	"context"
	"errors"
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
		fh, err := os.OpenFile(f, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fh.Close() })
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

// electionPath is an election path of the test's own.
func electionPath(t testing.TB) string {
	return "/test/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + fmt.Sprintf("-%d/election", time.Now().UnixNano())
}

// inspect opens a separate plain ZooKeeper session for checks.
func inspect(t testing.TB) *zk.Conn { return zktest.Inspect(t, zkServers()...) }

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
