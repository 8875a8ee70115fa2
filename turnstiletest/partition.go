package turnstiletest

import (
	"context"
	"net"
	"os"
	"sync"
	"time"
)

// Partition is a dialer whose connections can be silenced and healed: a
// network partition between the clients that dial through it and the
// cluster, on loopback, without touching the servers. While silent,
// nothing passes either way on its connections, old or new: the client's
// requests and pings go unanswered, the servers hear nothing from it
// (they expire its session once its timeout passes) and its new dials hang
// until their timeout, as behind a network that drops every packet. Heal
// lets everything through again; connections that were open while silent
// are closed then, as their streams lost bytes, and the client reconnects,
// resuming its session if the server has not expired it.
//
// A lease's promise that Lost() closes before any other client is granted
// its lock is tested with a Partition: silence the holder's connection and
// wait for the other client's grant. Make one per client (or group of
// clients) to be cut off with Cluster.NewPartition; its Dial stands in for
// Cluster.Dial, so ExpireSession still finds the sessions made through it.
// Its methods are safe for concurrent use.
type Partition struct {
	c *Cluster

	mu     sync.Mutex
	silent chan struct{} // closed by Heal; nil while healthy
	conns  map[*pumped]struct{}
}

// NewPartition returns a Partition in front of c, letting everything
// through until Silence.
func (c *Cluster) NewPartition() *Partition {
	return &Partition{c: c, conns: make(map[*pumped]struct{})}
}

// Dial connects to a server through the partition; set it as
// engine.Config.Dialer. While the partition is silent it waits, for up to
// timeout, for a Heal, and fails with a timeout error if none comes.
func (p *Partition) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	if p == nil || p.c.check(context.Background()) != nil {
		return nil, errNilPartition
	}
	p.mu.Lock()
	silent := p.silent
	p.mu.Unlock()
	if silent != nil {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-silent:
		case <-t.C:
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.ErrDeadlineExceeded}
		}
	}
	up, err := p.c.sessions.Dial(network, address, timeout)
	if err != nil {
		return nil, err
	}
	mine, theirs := net.Pipe()
	pc := &pumped{up: up, down: mine}
	p.mu.Lock()
	p.conns[pc] = struct{}{}
	pc.silenced = p.silent != nil
	p.mu.Unlock()
	pc.wg.Add(2)
	go p.pump(pc, up, mine)
	go p.pump(pc, mine, up)
	go func() {
		pc.wg.Wait()
		p.mu.Lock()
		delete(p.conns, pc)
		p.mu.Unlock()
	}()
	return theirs, nil
}

// Silence stops everything on the partition's connections, and its new
// dials, until Heal.
func (p *Partition) Silence() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.silent != nil {
		return
	}
	p.silent = make(chan struct{})
	for pc := range p.conns {
		pc.mu.Lock()
		pc.silenced = true
		pc.mu.Unlock()
	}
}

// Heal ends the silence: the connections that were open during it are
// closed, and new dials go through.
func (p *Partition) Heal() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.silent == nil {
		return
	}
	close(p.silent)
	p.silent = nil
	for pc := range p.conns {
		pc.mu.Lock()
		if pc.silenced {
			pc.close()
		}
		pc.mu.Unlock()
	}
}

// pumped is one connection through a partition: up to the server, down
// the client's end of a pipe whose other end the client holds.
type pumped struct {
	up, down net.Conn
	wg       sync.WaitGroup

	mu       sync.Mutex
	silenced bool // silent now, or since the latest Heal
}

func (pc *pumped) close() {
	pc.up.Close()
	pc.down.Close()
}

func (pc *pumped) isSilenced() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.silenced
}

// pump copies src to dst until either is closed, dropping what it reads
// while the connection is silenced, so that a client that closes its end
// still ends both pumps.
func (p *Partition) pump(pc *pumped, src, dst net.Conn) {
	defer pc.wg.Done()
	defer pc.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !pc.isSilenced() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
