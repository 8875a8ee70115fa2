package serverconn

import (
	"encoding/binary"
	"sync/atomic"
	"time"
)

// SimWire is one simulated connection as the engine's own trackedConn
// sees it, the deterministic simulator's seam (engine's tests): the
// simulator writes the frames its client sends and reads those the server
// answers, and the trust deadline moves as it would on the wire, by
// trackedConn's own rules (which replies count: a leader's, any
// handshake, and a chain of syncs). The role probe's answer and the keeper's looks come from the
// simulator too, which runs neither goroutine.
type SimWire struct{ c *trackedConn }

// NewSimWire is a connection just dialed, feeding the watchdog and zxid: nothing
// written or read yet.
func NewSimWire(watchdog Watchdog, zxid *atomic.Int64) *SimWire {
	c := &trackedConn{watchdog: watchdog, zxid: zxid, addr: "sim", done: make(chan struct{})}
	c.lastRead.Store(int64(watchdog.Clock()))
	return &SimWire{c: c}
}

func simFrame(head []byte) []byte {
	f := binary.BigEndian.AppendUint32(nil, uint32(len(head)))
	return append(f, head...)
}

// Greet writes the connect request, now.
func (s *SimWire) Greet() {
	s.c.wrote(simFrame(make([]byte, 44)), s.c.watchdog.Clock())
}

// Welcome reads the handshake's answer: the session (0: expired) and the
// timeout granted.
func (s *SimWire) Welcome(session int64, timeout time.Duration) {
	head := binary.BigEndian.AppendUint32(nil, 0) // protocol version
	head = binary.BigEndian.AppendUint32(head, uint32(timeout/time.Millisecond))
	head = binary.BigEndian.AppendUint64(head, uint64(session))
	s.read(simFrame(head))
}

// Sent writes a request of xid (PingXid for a ping), now.
func (s *SimWire) Sent(xid int32) { s.SentAt(xid, s.c.watchdog.Clock()) }

// SentAt writes a request of xid that was written at at: the simulator
// hands a request to the server later than the client wrote it.
func (s *SimWire) SentAt(xid int32, at time.Duration) {
	head := binary.BigEndian.AppendUint32(nil, uint32(xid))
	head = binary.BigEndian.AppendUint32(head, 0) // opcode: not read
	s.c.wrote(simFrame(head), at)
}

// Replied reads the reply to xid, with its header's zxid and error code.
// A watch event is a reply of xid NotificationXid.
func (s *SimWire) Replied(xid int32, zxid int64, code int32) {
	head := binary.BigEndian.AppendUint32(nil, uint32(xid))
	head = binary.BigEndian.AppendUint64(head, uint64(zxid))
	head = binary.BigEndian.AppendUint32(head, uint32(code))
	s.read(simFrame(head))
}

func (s *SimWire) read(p []byte) {
	now := s.c.watchdog.Clock()
	s.c.lastRead.Store(int64(now))
	s.c.read(p, now)
}

// Probed is the answer of the server's srvr four-letter word, read now,
// as probeRole takes it.
func (s *SimWire) Probed(srvr string) {
	if parseMode([]byte(srvr)) == modeLeader {
		s.c.confirmLeader(s.c.watchdog.Clock())
	}
}

// KeepWait and KeepLook are the keeper's: when it looks next, and what it
// does then (close the connection, why; ping; or sync, with SyncXid, "/").
func (s *SimWire) KeepWait() time.Duration                 { return s.c.keepWait() }
func (s *SimWire) KeepLook() (why string, ping, sync bool) { return s.c.keepLook() }

// The xids trackedConn tells apart.
const (
	PingXid         = pingXid
	NotificationXid = notificationXid
	SyncXid         = syncXid
)
