package netfault

import (
	"net"
	"sync"
	"time"
)

// Gate is a dialer whose connections stop delivering what the server sends
// while it is held: requests go out, their replies wait. A read already
// waiting when Hold is called still completes. Hold it briefly, well inside
// the client's ping timeout, or the client gives the connection up. The
// zero value is open.
type Gate struct {
	mu     sync.Mutex
	closed chan struct{} // nil while open
}

// Dial connects through the gate; pass it as a Dialer.
func (g *Gate) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return gatedConn{Conn: c, g: g}, nil
}

// Hold stops the delivery of replies.
func (g *Gate) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

// Release delivers what was held back, and what comes next.
func (g *Gate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

func (g *Gate) wait() {
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

type gatedConn struct {
	net.Conn
	g *Gate
}

func (c gatedConn) Read(p []byte) (int, error) {
	c.g.wait()
	return c.Conn.Read(p)
}
