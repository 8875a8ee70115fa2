// Package serverconn is the engine's connections to its ZooKeeper servers,
// and what they prove about the session: each connection notes the send
// time of every request and matches each reply to it by xid, reads the
// greatest zxid in reply headers and the timeout each handshake granted,
// and feeds the session's trust deadline (the engine's watchdog, through
// Watchdog) with what proves a touch of the session at the leader: a
// handshake, a leader's answers, and on any other server a chain of the
// engine's own syncs (sync.go); which server is the leader (roles.go); and
// a keeper per connection that pings a leader, syncs through any other
// server, and closes a connection to a silent server.
package serverconn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/tlsdial"
)

// What the engine reads of ZooKeeper's wire protocol. Every frame, either
// way, is a big-endian int32 length and that many bytes. The first frame
// each way on a connection is the session handshake; after it, a request
// starts with its xid and opcode, a reply with its xid, zxid and error
// code. The client (go-zookeeper) exposes neither the send time of its
// requests, nor the zxids of replies, nor the timeout a server granted, so
// the engine reads them off the connection.
const (
	// frameLenSize is the length prefix of every frame.
	frameLenSize = 4
	// xidSize: a request's head as far as the engine cares, its xid. The
	// xid is what a reply names to say which request it answers.
	xidSize = 4
	// replyHdrSize is a reply's header: xid int32, zxid int64, err int32.
	replyHdrSize = 16
	// handshakeHeadSize is as much of the server's handshake answer as the
	// engine reads: protocolVersion int32, timeOut int32 (the session
	// timeout granted, in milliseconds), sessionId int64. The password and
	// read-only flag follow. It is the same size as a reply header, so one
	// buffer serves both.
	handshakeHeadSize = 16
	// notificationXid marks a watch notification: the server sends it on
	// its own, so it answers no request and proves nothing about when the
	// server last heard from the session.
	notificationXid = -1
	// pingXid is the xid of every ping. Pings are the one request sent
	// again and again with the same xid, so their send times queue.
	pingXid = -2
	// syncXid is the xid of the keeper's own syncs (sync.go), one at a
	// time on a connection. The client takes a reply of a negative xid
	// other than a ping's or a notification's for none of its requests
	// and passes over it; the server counts no negative xid against its
	// throttle.
	syncXid = -3
	// errSessionExpired and errSessionMoved: a reply with either error
	// code says the server is not keeping this session alive for this
	// connection, so it does not count as an answer.
	errSessionExpired = -112
	errSessionMoved   = -118
)

// Watchdog is the engine's watchdog over its session, as the connections
// feed it: its monotonic clock, how long after an answered request the
// session is trusted, and the answers themselves.
type Watchdog interface {
	Clock() time.Duration
	Lifetime() time.Duration
	// Handshake: the server answered the connect request sent at sent,
	// naming session (0: expired) and the timeout granted in milliseconds
	// (0 when the answer did not carry one).
	Handshake(sent time.Duration, session int64, timeoutMs int32)
	// Answered: the session was touched at the leader after sent (the
	// leader answered a request sent at sent, or a chain of syncs proves
	// it).
	Answered(sent time.Duration)
}

// Config is what the connections are made with.
type Config struct {
	Servers     []string
	Dialer      func(network, address string, timeout time.Duration) (net.Conn, error)
	DialTimeout time.Duration // the most one dial, or one role probe, may take
	// ProbeGrace is how long a follower's answer waits for a leader's when
	// a dial looks for the leader (see pick); zero: dials do not look,
	// each goes to the server the client's shuffled list names next, as
	// any ZooKeeper client's does, and sessions spread over the ensemble.
	ProbeGrace time.Duration
	Log        *slog.Logger
	Trust      Watchdog      // the engine's watchdog
	Zxid       *atomic.Int64 // the greatest zxid read in any reply header
}

// Conns is an engine's connections: the dialer and host list its client
// is given, the open connections, and the goroutines kept beside them.
type Conns struct {
	cfg Config
	// dialErr is the last dial's failure, nil once a dial succeeds.
	dialErr atomic.Pointer[error]
	// conns are the open connections, and bg counts the goroutines that
	// keep them and probe servers.
	conns connSet
	bg    sync.WaitGroup
	hosts hostList // the client's servers, in turn
	// tick is the servers' tickTime once CheckTick has read it, 0 before
	// or when unknown: the spacing of a sync chain rests on it (sync.go).
	tick atomic.Int64
}

// New returns the connections of an engine, none open yet.
func New(cfg Config) *Conns { return &Conns{cfg: cfg} }

// Hosts is the client's host provider (zk.WithHostProvider).
func (e *Conns) Hosts() zk.HostProvider { return &e.hosts }

// DialErr is the last dial's failure, nil once a dial succeeds: Start
// wraps it, so that a caller sees why no session came (a refused port, a
// certificate that does not verify), not only that none did.
func (e *Conns) DialErr() error {
	if err := e.dialErr.Load(); err != nil {
		return *err
	}
	return nil
}

// Dial connects through the configured dialer and watches the bytes that
// cross the connection: the send time of every request and the replies
// that answer them feed the session's trust deadline, and reply headers
// the greatest zxid read. With Config.TLS the dialer has completed the
// handshake already, so what is watched is ZooKeeper's plaintext.
//
// With more than one server and a ProbeGrace, the address is the
// engine's choice, not the client's: the leader if one answers (see
// pick); without, it is the client's. Each connection is kept by a
// goroutine of its own (see trackedConn.keep).
func (e *Conns) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	if len(e.cfg.Servers) > 1 && e.cfg.ProbeGrace > 0 {
		address = e.pick(address)
	}
	c, err := e.cfg.Dialer(network, address, min(timeout, e.cfg.DialTimeout))
	if errors.Is(err, tlsdial.ErrHandshake) {
		// Start can only say that no session came in time; the reason is
		// here (a plain port, a certificate that does not verify).
		e.cfg.Log.Warn("TLS connection failed", slog.String("server", address), slog.Any("err", err))
	}
	if err != nil {
		e.dialErr.Store(&err)
		return nil, err
	}
	e.dialErr.Store(nil)
	tc := &trackedConn{Conn: c, watchdog: e.cfg.Trust, zxid: e.cfg.Zxid, eng: e, addr: address, done: make(chan struct{})}
	tc.lastRead.Store(int64(e.cfg.Trust.Clock()))
	if !e.conns.add(tc) {
		_ = c.Close() // the engine is closing
		return nil, net.ErrClosed
	}
	e.bg.Add(1)
	go tc.keep()
	return tc, nil
}

// trackedConn is a connection to a server, read and written by the client
// as usual, that notes each request's send time as it is written and
// matches each reply to its request, by xid, as it is read.
type trackedConn struct {
	net.Conn
	watchdog Watchdog
	zxid     *atomic.Int64 // the greatest zxid in any reply header
	eng      *Conns        // nil in unit tests: then no keeper, no role probe
	addr     string        // the address dialed

	lastRead  atomic.Int64  // watchdog.Clock() at the last read that returned bytes
	pinging   atomic.Bool   // a keepalive ping is being written
	done      chan struct{} // closed by Close
	closeOnce sync.Once

	// The client writes on one goroutine and reads on another; the keeper
	// and the role probe come in between.
	mu   sync.Mutex
	sent sentLog
	out  frameSplitter // requests, as written
	in   frameSplitter // replies, as read
	// welcomed: the handshake was answered, with session (0: expired).
	welcomed bool
	session  int64
	// leader: the server answered srvr "leader" or "standalone" at
	// leaderFrom or before, on this connection's watch (see
	// confirmLeader). Only then does a reply to a request sent from
	// leaderFrom on move the trust deadline; before, and on a follower,
	// the handshake and the chain of syncs do (see DESIGN.md, "The trust
	// deadline").
	leader     bool
	leaderFrom time.Duration
	syncs      syncChain
}

// confirmLeader records that the server was the leader (or standalone)
// at some instant before at, while this connection was open.
func (c *trackedConn) confirmLeader(at time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.leader {
		c.leader, c.leaderFrom = true, at
	}
}

// Close closes the connection and stops its keeper.
func (c *trackedConn) Close() error {
	c.closeOnce.Do(func() {
		if c.done != nil {
			close(c.done)
		}
	})
	return c.Conn.Close()
}

// Write notes the requests in p before they go out: a request's send time
// is taken before the server can have received it.
func (c *trackedConn) Write(p []byte) (int, error) {
	c.wrote(p, c.watchdog.Clock())
	return c.Conn.Write(p)
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		now := c.watchdog.Clock()
		c.lastRead.Store(int64(now))
		c.read(p[:n], now)
	}
	return n, err
}

func (c *trackedConn) wrote(p []byte, now time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(p) > 0 {
		var head []byte
		var start time.Duration
		var ok bool
		if head, start, p, ok = c.out.next(p, now, xidSize); !ok {
			continue
		}
		switch {
		case c.out.frames == 1:
			c.sent.handshake, c.sent.greeted = start, true
		case len(head) == xidSize:
			c.sent.add(int32(binary.BigEndian.Uint32(head)), start)
		}
	}
}

func (c *trackedConn) read(p []byte, now time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(p) > 0 {
		var head []byte
		var ok bool
		if head, _, p, ok = c.in.next(p, 0, replyHdrSize); !ok {
			continue
		}
		if c.in.frames == 1 {
			// The handshake answer: it answers the connect request, and
			// names the session and the timeout granted. One too short to
			// name a session proves nothing.
			if len(head) == handshakeHeadSize && c.sent.greeted {
				timeout := int32(binary.BigEndian.Uint32(head[4:]))
				session := int64(binary.BigEndian.Uint64(head[8:]))
				c.watchdog.Handshake(c.sent.handshake, session, timeout)
				c.welcomed, c.session = true, session
				if session != 0 && c.eng != nil {
					c.eng.bg.Add(1)
					go c.eng.probeRole(c)
				}
			}
			continue
		}
		if len(head) < replyHdrSize {
			continue // not a reply
		}
		xid := int32(binary.BigEndian.Uint32(head))
		zxid := int64(binary.BigEndian.Uint64(head[4:]))
		code := int32(binary.BigEndian.Uint32(head[12:]))
		if zxid > 0 {
			for cur := c.zxid.Load(); zxid > cur && !c.zxid.CompareAndSwap(cur, zxid); cur = c.zxid.Load() {
			}
		}
		if xid == notificationXid {
			continue
		}
		sent, ok := c.sent.take(xid)
		if ok && xid == syncXid {
			c.syncs.out = false
		}
		if !ok || code == errSessionExpired || code == errSessionMoved {
			continue
		}
		if c.leader && sent >= c.leaderFrom {
			c.watchdog.Answered(sent)
		}
		if xid == syncXid && code == 0 {
			if anchor, ok := c.syncs.answered(sent, now, c.syncGap()); ok {
				c.watchdog.Answered(anchor)
			}
		}
	}
}

// sentLog is when each request still unanswered on one connection was
// sent, by xid.
type sentLog struct {
	handshake time.Duration // when the connect request was sent
	greeted   bool          // the connect request was sent
	byXid     map[int32]time.Duration
	pings     []time.Duration // oldest first: the server answers a connection's requests in order
}

// waiting reports whether a request on the connection awaits its reply.
func (s *sentLog) waiting() bool { return len(s.pings) > 0 || len(s.byXid) > 0 }

func (s *sentLog) add(xid int32, at time.Duration) {
	if xid == pingXid {
		s.pings = append(s.pings, at)
		return
	}
	if s.byXid == nil {
		s.byXid = make(map[int32]time.Duration)
	}
	if prev, ok := s.byXid[xid]; ok && prev < at {
		return // xids wrapped around: keep the older, which promises less
	}
	s.byXid[xid] = at
}

// take forgets the request a reply with xid answers and returns when it
// was sent; false when no such request was sent on this connection.
func (s *sentLog) take(xid int32) (time.Duration, bool) {
	if xid == pingXid {
		if len(s.pings) == 0 {
			return 0, false
		}
		at := s.pings[0]
		s.pings = s.pings[:copy(s.pings, s.pings[1:])]
		return at, true
	}
	at, ok := s.byXid[xid]
	if ok {
		delete(s.byXid, xid)
	}
	return at, ok
}

// frameSplitter follows one direction of a connection, a stream of
// length-prefixed frames passing in pieces of any size, and picks out the
// first bytes (the head) of each frame.
type frameSplitter struct {
	buf    [frameLenSize + replyHdrSize]byte // the frame length, then its head
	have   int                               // bytes of buf filled
	skip   int                               // bytes of the current frame still to pass over
	start  time.Duration                     // when the current frame's first byte passed
	frames int                               // heads found so far
}

// next consumes p up to the end of the next frame's head (or to the end of
// p) and returns what is left of it as rest. Once a head is complete, ok is
// true: head holds the frame's first want bytes (all of them, when the
// frame is shorter; head is only valid until the next call), and start is
// the now given when the frame's first byte passed.
func (f *frameSplitter) next(p []byte, now time.Duration, want int) (head []byte, start time.Duration, rest []byte, ok bool) {
	if f.skip > 0 {
		k := min(f.skip, len(p))
		f.skip -= k
		return nil, 0, p[k:], false
	}
	if f.have == 0 {
		f.start = now
	}
	need := frameLenSize
	if f.have >= frameLenSize {
		need += min(want, f.size())
	}
	k := copy(f.buf[f.have:need], p)
	f.have += k
	p = p[k:]
	if f.have < need {
		return nil, 0, p, false
	}
	if need == frameLenSize && min(want, f.size()) > 0 {
		return nil, 0, p, false // the length is in; the head comes next
	}
	head = f.buf[frameLenSize:need]
	f.skip = f.size() - len(head)
	f.have = 0
	f.frames++
	return head, f.start, p, true
}

func (f *frameSplitter) size() int { return int(binary.BigEndian.Uint32(f.buf[:frameLenSize])) }

// Logger routes the client's log lines to log at debug level.
func Logger(log *slog.Logger) zkLogger { return zkLogger{log} }

type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	if !l.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	l.log.Debug(fmt.Sprintf(format, args...), slog.String("component", "zk"))
}
