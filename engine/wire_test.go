package engine_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"
)

// wireTap sits between an engine's client and the server, one ZooKeeper
// frame at a time (a 4-byte length, then the body): it counts the requests
// outstanding on the wire and can lose a request or its reply by cutting
// the connection, as a network fault would. The client writes each request
// as one frame in one Write.
type wireTap struct {
	mu             sync.Mutex
	outstanding    map[int32]int32 // xid → opcode, sent and not answered
	maxOutstanding int
	// onRequest, if set, sees every request (its xid, opcode and the body
	// after the header) before it is sent, and says what becomes of it.
	onRequest func(xid, opcode int32, body []byte) verdict
}

type verdict int

const (
	pass      verdict = iota
	loseReply         // send it; when its reply comes, cut the connection instead of delivering it
	cutBefore         // cut the connection without sending it
)

// ZooKeeper opcodes the tests look for.
const (
	opCreate       = 1
	opSync         = 9
	opGetChildren2 = 12
)

// errCut is what a cut connection reports: a closed connection, as the
// client would see one the network dropped.
var errCut = fmt.Errorf("wiretap: connection cut: %w", net.ErrClosed)

func newWireTap() *wireTap { return &wireTap{outstanding: make(map[int32]int32)} }

// dial is an engine.Config.Dialer.
func (w *wireTap) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &tapConn{Conn: c, tap: w}, nil
}

// most is the greatest number of requests that were outstanding at once.
func (w *wireTap) most() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxOutstanding
}

type tapConn struct {
	net.Conn
	tap           *wireTap
	sentHandshake bool
	readHandshake bool
	in            []byte // read from the server, not yet a whole frame
	out           []byte // whole frames not yet delivered

	mu    sync.Mutex     // the client writes and reads on two goroutines
	cutOn map[int32]bool // xids whose reply cuts the connection
	cut   bool
}

func (c *tapConn) isCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

func (c *tapConn) Write(p []byte) (int, error) {
	if c.isCut() {
		return 0, errCut
	}
	if !c.sentHandshake {
		c.sentHandshake = true
		return c.Conn.Write(p)
	}
	if len(p) >= 12 {
		xid := int32(binary.BigEndian.Uint32(p[4:]))
		opcode := int32(binary.BigEndian.Uint32(p[8:]))
		if xid > 0 {
			v := pass
			if c.tap.onRequest != nil {
				v = c.tap.onRequest(xid, opcode, p[12:])
			}
			switch v {
			case cutBefore:
				c.cutNow()
				return 0, errCut
			case loseReply:
				c.mu.Lock()
				if c.cutOn == nil {
					c.cutOn = make(map[int32]bool)
				}
				c.cutOn[xid] = true
				c.mu.Unlock()
			}
			c.tap.mu.Lock()
			c.tap.outstanding[xid] = opcode
			c.tap.maxOutstanding = max(c.tap.maxOutstanding, len(c.tap.outstanding))
			c.tap.mu.Unlock()
		}
	}
	return c.Conn.Write(p)
}

func (c *tapConn) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.isCut() {
			return 0, errCut
		}
		buf := make([]byte, 64<<10)
		n, err := c.Conn.Read(buf)
		c.in = append(c.in, buf[:n]...)
		c.frames()
		if err != nil && len(c.out) == 0 {
			return 0, err
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// frames moves the whole frames read so far to out, up to a reply that
// cuts the connection.
func (c *tapConn) frames() {
	for len(c.in) >= 4 && !c.isCut() {
		size := int(binary.BigEndian.Uint32(c.in))
		if len(c.in) < 4+size {
			return
		}
		frame := c.in[:4+size]
		c.in = c.in[4+size:]
		if !c.readHandshake {
			c.readHandshake = true
		} else if size >= 4 {
			xid := int32(binary.BigEndian.Uint32(frame[4:]))
			if xid > 0 {
				c.tap.mu.Lock()
				delete(c.tap.outstanding, xid)
				c.tap.mu.Unlock()
			}
			c.mu.Lock()
			cut := c.cutOn[xid]
			c.mu.Unlock()
			if cut {
				c.cutNow()
				return
			}
		}
		c.out = append(c.out, frame...)
	}
}

func (c *tapConn) cutNow() {
	c.mu.Lock()
	c.cut = true
	c.mu.Unlock()
	c.Conn.Close()
	c.tap.mu.Lock()
	clear(c.tap.outstanding) // lost with the connection
	c.tap.mu.Unlock()
}

// requestPath reads the path that starts a request's body (create, sync,
// getChildren and most others).
func requestPath(body []byte) string {
	if len(body) < 4 {
		return ""
	}
	n := int(binary.BigEndian.Uint32(body))
	if n < 0 || 4+n > len(body) {
		return ""
	}
	return string(body[4 : 4+n])
}
