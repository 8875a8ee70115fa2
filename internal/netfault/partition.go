// Package netfault gives tests network faults between a ZooKeeper client
// and its server, on loopback and without touching the server: dialers
// whose connections can be cut, or stalled.
package netfault

import (
	"errors"
	"net"
	"sync"
	"time"
)

// ErrPartitioned is what a Partition's Dial returns while it is cut.
var ErrPartitioned = errors.New("netfault: partitioned")

// Partition is a dialer whose connections can be cut and whose new dials
// refused: a network partition between one client and ZooKeeper. The zero
// value lets everything through.
type Partition struct {
	mu      sync.Mutex
	blocked bool
	conns   []net.Conn
}

// Dial connects unless the partition is cut; pass it as a Dialer.
func (p *Partition) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blocked {
		return nil, ErrPartitioned
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		p.conns = append(p.conns, c)
	}
	return c, err
}

// Cut closes every connection made so far and refuses new ones.
func (p *Partition) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Heal lets new connections through again.
func (p *Partition) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = false
}
