// Package faultnet cuts a ZooKeeper client off its servers on purpose, for
// tests that need a session to be disconnected or expired while the
// servers, and every other client, carry on.
package faultnet

import (
	"errors"
	"net"
	"sync"
	"time"
)

// ErrPartitioned is what a dial returns while the partition is cut.
var ErrPartitioned = errors.New("faultnet: partitioned")

// Partition is a dialer (engine.Config.Dialer) whose connections can all be
// cut at once and whose new dials can be refused: a network partition
// between one client and ZooKeeper, on loopback, without touching the
// server. Kept cut for longer than the session timeout, it makes the server
// expire the client's session; healed before, the session survives. The
// zero value is a healed partition, safe for concurrent use.
type Partition struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

// Dial connects as net.DialTimeout does, unless the partition is cut.
func (p *Partition) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return nil, ErrPartitioned
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		p.conns = append(p.conns, c)
	}
	return c, err
}

// Cut closes every connection dialled so far and refuses new dials until
// Heal.
func (p *Partition) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Heal lets dials through again; the client reconnects on its own.
func (p *Partition) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}
