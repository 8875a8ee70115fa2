// Package zktest holds what the tests of several packages need to look at
// a real ZooKeeper beside the clients under test.
package zktest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Inspect opens a plain ZooKeeper session of the test's own on servers, for
// reading nodes without disturbing any contender. It is closed at cleanup.
func Inspect(t testing.TB, servers ...string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
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
