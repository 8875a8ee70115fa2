package metrics_test

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// partition is a dialer whose connections can be cut and whose new dials
// refused: a network partition between one engine and ZooKeeper.
type partition struct {
	mu      sync.Mutex
	blocked bool
	conns   []net.Conn
}

func (p *partition) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blocked {
		return nil, errors.New("partitioned")
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		p.conns = append(p.conns, c)
	}
	return c, err
}

func (p *partition) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *partition) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = false
}

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
