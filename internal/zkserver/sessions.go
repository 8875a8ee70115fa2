package zkserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// ErrUnknownSession is returned (wrapped) by Sessions.Expire for a session
// that no connection of the Sessions' dialer was given.
var ErrUnknownSession = errors.New("zkserver: session not made through this dialer")

// Sessions is a dialer that remembers the id and password of every session
// a server hands out over its connections, so that a test can end one of
// those sessions the way the server ends a session that timed out: its
// owner's next request or reconnection is told that it expired. The zero
// value is ready to use; it is safe for concurrent use.
//
// It reads the plain ZooKeeper protocol: a client that wraps the
// connection in TLS hides the handshake from it.
type Sessions struct {
	mu     sync.Mutex
	passwd map[int64][]byte
}

// Dial connects as net.DialTimeout does and watches the connection's first
// reply, the server's answer to the client's handshake. Its signature is
// that of engine.Config.Dialer and zk.Dialer.
func (s *Sessions) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &snoopConn{Conn: c, s: s}, nil
}

func (s *Sessions) record(id int64, passwd []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.passwd == nil {
		s.passwd = make(map[int64][]byte)
	}
	s.passwd[id] = passwd
}

// Password returns the password the server gave session id, if one of the
// dialer's connections carried it.
func (s *Sessions) Password(id int64) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.passwd[id]
	return p, ok
}

// Expire closes session id on the server at one of addrs (any member of
// the ensemble will do): it attaches to the session with its password, as
// its owner would on a reconnection, and asks the server to close it. The
// server drops the owner's connection; the owner's next attempt to resume
// the session is told that it expired. Expire returns once the server has
// answered the close, so the session's ephemeral nodes are gone by then.
func (s *Sessions) Expire(ctx context.Context, addrs []string, id int64) error {
	passwd, ok := s.Password(id)
	if !ok {
		return fmt.Errorf("%w: %#x", ErrUnknownSession, id)
	}
	var errs []error
	for _, addr := range addrs {
		err := CloseSession(ctx, addr, id, passwd)
		if err == nil {
			return nil
		}
		if errors.Is(err, errSessionGone) && len(errs) > 0 {
			// An earlier server may have closed it before its reply was
			// lost (a server that restarts, or leaves the quorum, closes
			// its connections): the session is gone, as asked.
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// snoopConn passes everything through, and reads the session's id and
// password from the first frame the server sends.
type snoopConn struct {
	net.Conn
	s    *Sessions
	mu   sync.Mutex
	done bool
	buf  []byte
}

func (c *snoopConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.see(p[:n])
	}
	return n, err
}

func (c *snoopConn) see(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	c.buf = append(c.buf, b...)
	if len(c.buf) < 4 {
		return
	}
	size := int(binary.BigEndian.Uint32(c.buf))
	if size > 1<<16 {
		c.done, c.buf = true, nil // not a handshake reply: stop looking
		return
	}
	if len(c.buf) < 4+size {
		return
	}
	if id, passwd, err := parseConnectResponse(c.buf[4 : 4+size]); err == nil && id != 0 {
		c.s.record(id, passwd)
	}
	c.done, c.buf = true, nil
}

// parseConnectResponse reads ZooKeeper's ConnectResponse: protocol
// version, timeout, session id, password (length-prefixed), and, from 3.4
// on, a read-only flag this ignores.
func parseConnectResponse(b []byte) (int64, []byte, error) {
	if len(b) < 4+4+8+4 {
		return 0, nil, errors.New("short connect response")
	}
	timeout := int32(binary.BigEndian.Uint32(b[4:]))
	id := int64(binary.BigEndian.Uint64(b[8:]))
	n := int32(binary.BigEndian.Uint32(b[16:]))
	if timeout <= 0 || n < 0 || int(n) > len(b)-20 {
		return 0, nil, errors.New("connect response without a session")
	}
	return id, append([]byte(nil), b[20:20+int(n)]...), nil
}

// opCloseSession is ZooKeeper's closeSession request type.
const opCloseSession int32 = -11

// errSessionGone is CloseSession's error for a session the server no
// longer knows.
var errSessionGone = errors.New("the server no longer knows the session, or refused its password")

// CloseSession attaches to session id at addr with its password and closes
// it. It fails when the server no longer knows the session (already
// expired or closed) or refuses the password.
//
// The server does not always answer the close: when the connection that
// asked is the one the session is attached to, it may close that
// connection instead of replying. A close that ends without a reply is
// therefore checked by attaching again: a server that refuses the session
// has closed it; one that still knows it is asked again, a bounded number
// of times.
func CloseSession(ctx context.Context, addr string, id int64, passwd []byte) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	fail := func(err error) error { return fmt.Errorf("zkserver: close session %#x at %s: %w", id, addr, err) }
	const attempts = 5
	var closeSent bool // an earlier attempt sent the close, unanswered
	var last error
	for attempt := range attempts {
		if attempt > 0 {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return fail(fmt.Errorf("%w (after: %w)", context.Cause(ctx), last))
			}
		}
		sent, done, err := closeOnce(ctx, addr, id, passwd)
		switch {
		case done:
			return nil
		case errors.Is(err, errSessionGone) && closeSent:
			return nil // the close that went unanswered did its work
		case errors.Is(err, errSessionGone):
			return fail(err)
		case err != nil && !errors.Is(err, errUnanswered):
			return fail(err)
		}
		closeSent = closeSent || sent
		last = err
	}
	return fail(last)
}

// errUnanswered: the server closed the connection before it answered the
// handshake or the close. It does so now and then (and then logs
// nothing), with a session it knows: the attempt is repeated.
var errUnanswered = errors.New("the server closed the connection without an answer")

// unanswered reports whether err says the connection ended before the
// server's answer.
func unanswered(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// closeOnce attaches to the session on a connection of its own and asks
// the server to close it: sent when the close went out, done when the
// server answered that it closed the session; errUnanswered when the
// connection ended before an answer (see CloseSession).
func closeOnce(ctx context.Context, addr string, id int64, passwd []byte) (sent, done bool, err error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, false, err
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	// ConnectRequest: protocol version, last zxid seen, timeout, session
	// id, password. A last zxid of 0 is never ahead of the server's.
	req := binary.BigEndian.AppendUint32(nil, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, uint32(10_000))
	req = binary.BigEndian.AppendUint64(req, uint64(id))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	if err := writeFrame(conn, req); err != nil {
		return false, false, err
	}
	resp, err := readFrame(conn)
	if unanswered(err) {
		return false, false, fmt.Errorf("%w: handshake: %w", errUnanswered, err)
	}
	if err != nil {
		return false, false, err
	}
	got, _, err := parseConnectResponse(resp)
	if err != nil || got != id {
		return false, false, errSessionGone
	}
	// RequestHeader of closeSession: xid, type; no body.
	hdr := binary.BigEndian.AppendUint32(nil, 1)
	op := opCloseSession // a variable: a negative constant does not convert to uint32
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(op))
	if err := writeFrame(conn, hdr); err != nil {
		return false, false, err
	}
	// ReplyHeader: xid, zxid, err. A ping or a notification cannot come
	// first: the connection watches nothing and has sent nothing else.
	reply, err := readFrame(conn)
	if unanswered(err) {
		return true, false, fmt.Errorf("%w: closeSession: %w", errUnanswered, err)
	}
	if err != nil {
		return true, false, err
	}
	if len(reply) < 16 {
		return true, false, errors.New("short reply to closeSession")
	}
	if code := int32(binary.BigEndian.Uint32(reply[12:])); code != 0 {
		return true, false, fmt.Errorf("closeSession answered with error code %d", code)
	}
	return true, true, nil
}

func writeFrame(w io.Writer, b []byte) error {
	_, err := w.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}
