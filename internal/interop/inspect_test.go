package interop_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/zktest"
)

// inspect opens a plain ZooKeeper session of the test's own on the shared
// server, for looking at nodes without disturbing any contender.
func inspect(t *testing.T) *zk.Conn { return zktest.Connect(t, zookeeper(t)) }

// owners returns the session that owns each child of path, in listing
// order (0 for a persistent child); none when path does not exist.
func owners(t *testing.T, conn *zk.Conn, path string) []int64 {
	t.Helper()
	children, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		t.Fatalf("list %s: %v", path, err)
	}
	var out []int64
	for _, c := range children {
		_, stat, err := conn.Get(path + "/" + c)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone meanwhile
		}
		if err != nil {
			t.Fatalf("get %s/%s: %v", path, c, err)
		}
		out = append(out, stat.EphemeralOwner)
	}
	return out
}

// eventually polls cond until it holds, failing the test when ctx ends
// first: for state that settles asynchronously, never for timing.
func eventually(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("never: %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
