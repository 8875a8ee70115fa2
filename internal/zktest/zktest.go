// Package zktest holds what the tests of several packages need around a
// real ZooKeeper: an engine, a root of a test's own, a plain session for
// setting up and checking, the lock nodes left under a root, and waiting
// for state that settles asynchronously.
package zktest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/internal/wait"
)

// StartEngine starts an engine for a test, on addr unless cfg names its
// servers, or fails the test. Closing it is the caller's. When
// TURNSTILE_TEST_LOG names a file and cfg has no logger, the engine's debug
// log goes there.
func StartEngine(t testing.TB, addr string, cfg engine.Config) *engine.Engine {
	t.Helper()
	if cfg.Servers == nil {
		cfg.Servers = []string{addr}
	}
	if f := os.Getenv("TURNSTILE_TEST_LOG"); f != "" && cfg.Logger == nil {
		fh, err := os.Create(f)
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
	return e
}

// Root is a lock root of the test's own, so tests never share nodes.
func Root(t testing.TB) string {
	return "/test/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + fmt.Sprintf("-%d", time.Now().UnixNano())
}

// Connect opens a plain ZooKeeper session, outside any engine, closed when
// the test ends.
func Connect(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		for range events {
		}
	})
	return conn
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// Ephemerals lists the ephemeral nodes (lock nodes) anywhere under root,
// but the engines' pins: a pin is no lock node, and lives on a lock path an
// engine cycles on until the path idles or the session ends (see the
// engine's listing-free cycle).
func Ephemerals(t testing.TB, conn *zk.Conn, root string) []string {
	t.Helper()
	var found []string
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
			ok, stat, err := conn.Exists(child)
			if err != nil {
				t.Fatalf("stat %s: %v", child, err)
			}
			if !ok {
				continue
			}
			if stat.EphemeralOwner != 0 && !nodename.IsPin(c) {
				found = append(found, child)
			}
			walk(child)
		}
	}
	walk(root)
	return found
}

// Eventually polls cond until it holds: for state that settles
// asynchronously (a delete still in flight), never for timing. It is
// wait.Until, named as the tests of several packages call it.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	wait.Until(t, what, cond)
}
