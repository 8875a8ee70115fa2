package engine

import (
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
	return &trackedConn{Conn: c, last: &e.lastRead}, nil
}

type trackedConn struct {
	net.Conn
	last *atomic.Int64
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.last.Store(time.Now().UnixNano())
	}
	return n, err
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
