package engine

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"
)

// dial connects through the configured dialer and records every read, so
// the engine knows when it last heard from a server, pings included.
func (e *Engine) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := e.cfg.Dialer(network, address, timeout)
	if err != nil {
		return nil, err
	}
	e.lastRead.Store(time.Now().UnixNano())
	return &trackedConn{Conn: c, last: &e.lastRead, frames: frameScanner{zxid: &e.lastZxid, connecting: true}}, nil
}

type trackedConn struct {
	net.Conn
	last   *atomic.Int64
	frames frameScanner // only the client's receive goroutine reads
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.last.Store(time.Now().UnixNano())
		c.frames.scan(p[:n])
	}
	return n, err
}

// frameScanner follows the server's length-prefixed replies as they are
// read and keeps the greatest zxid their headers carry. Every reply header
// holds the zxid the server had reached when it answered (for a write, the
// write's own), so after any reply has been read, the tracked zxid is at
// least that reply's. The client exposes no zxid itself. The first frame on
// a connection is the session handshake, which has no reply header.
type frameScanner struct {
	zxid       *atomic.Int64
	connecting bool     // the next frame is the handshake
	buf        [20]byte // the frame length, then the reply header
	have       int      // bytes of buf filled
	skip       int      // bytes of the current frame's body still to pass over
}

const (
	frameLenSize = 4
	replyHdrSize = 16 // xid int32, zxid int64, err int32
)

func (f *frameScanner) scan(p []byte) {
	for len(p) > 0 {
		if f.skip > 0 {
			k := min(f.skip, len(p))
			f.skip -= k
			p = p[k:]
			continue
		}
		want := frameLenSize
		if f.have >= frameLenSize && !f.connecting {
			want += replyHdrSize
		}
		k := copy(f.buf[f.have:want], p)
		f.have += k
		p = p[k:]
		if f.have < want {
			return
		}
		size := int(binary.BigEndian.Uint32(f.buf[:frameLenSize]))
		switch {
		case f.connecting:
			f.connecting = false
			f.skip, f.have = size, 0
		case want == frameLenSize:
			if size < replyHdrSize {
				f.skip, f.have = size, 0 // not a reply; pass over it
			}
			// else read the header next
		default:
			if zxid := int64(binary.BigEndian.Uint64(f.buf[frameLenSize+4:])); zxid > 0 {
				for cur := f.zxid.Load(); zxid > cur && !f.zxid.CompareAndSwap(cur, zxid); cur = f.zxid.Load() {
				}
			}
			f.skip, f.have = size-replyHdrSize, 0
		}
	}
}

// zkLogger routes the client's log lines to slog at debug level, and reads
// the negotiated session timeout from the line the client logs when a
// session is established (the client does not expose it otherwise).
type zkLogger struct{ e *Engine }

func (l zkLogger) Printf(format string, args ...any) {
	if strings.HasPrefix(format, "authenticated: id=%d, timeout=%d") && len(args) == 2 {
		if ms, ok := args[1].(int32); ok && ms > 0 {
			l.e.negotiated.Store(int64(time.Duration(ms) * time.Millisecond))
		}
	}
	l.e.log.Debug(fmt.Sprintf(format, args...), slog.String("component", "zk"))
}
