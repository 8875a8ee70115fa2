package metrics_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// session is a plain ZooKeeper session for checks.
type session struct {
	conn   *zk.Conn
	events <-chan zk.Event
}

func plainSession(t *testing.T) session {
	t.Helper()
	conn, events, err := zk.Connect([]string{shared.Addr()}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	return session{conn, events}
}

func (s session) nodeExists(p string) bool {
	ok, _, err := s.conn.Exists(p)
	return ok || err != nil
}

func (s session) close() {
	s.conn.Close()
	for range s.events {
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
