package zkmodel

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// SessionID identifies a session. The model numbers sessions 1, 2, 3, ... in
// the order they are created (the server derives ids from its own id and its
// clock), so an id is never 0 (no owner) nor containerOwner.
type SessionID int64

// SessionState is a session's state as the server sees it.
type SessionState uint8

const (
	// Connected: the session has a connection; its requests and pings reach
	// the server, and replies and events are queued on the connection.
	Connected SessionState = iota + 1
	// Disconnected: the session lives on the server, which hears nothing
	// from it while its expiry deadline runs. Reconnect resumes it.
	Disconnected
	// Expired: the server expired the session and deleted its ephemerals.
	Expired
	// Closed: the client closed the session, with the same effects.
	Closed
)

func (s SessionState) String() string {
	switch s {
	case Connected:
		return "Connected"
	case Disconnected:
		return "Disconnected"
	case Expired:
		return "Expired"
	case Closed:
		return "Closed"
	}
	return fmt.Sprintf("SessionState(%d)", uint8(s))
}

// SessionInfo describes a session, for a simulator or a checker.
type SessionInfo struct {
	ID      SessionID
	State   SessionState
	Timeout time.Duration // as negotiated
	// Deadline is when the server expires the session unless it hears from
	// it first (see touch).
	Deadline time.Time
}

type session struct {
	id      SessionID
	timeout time.Duration
	// deadline is the session's expiry bucket: the server's ExpiryQueue
	// puts a session it hears from at now+timeout rounded up to the next
	// multiple of the tick, and its expirer thread expires the whole bucket
	// when the clock reaches it. So a silent session expires between
	// timeout and timeout+tick after the server last heard from it.
	deadline time.Time
	state    SessionState
	// outbox is what the server has sent down the session's connection and
	// the client has not taken yet, in order: replies, watch events, ping
	// replies, and last the connection's close. A lost connection loses it.
	outbox     []Message
	ephemerals map[string]struct{}
	// The watches the server holds for the session's connection, one-shot.
	// Data watches come from exists and getData, child watches from
	// getChildren; the server keeps them per connection (the watcher is the
	// ServerCnxn), so a lost connection drops them, and a reconnecting
	// client sets them again with setWatches.
	dataWatches  map[string]struct{}
	childWatches map[string]struct{}

	// member is the member the connection is on (ensemble.go). While it
	// is a follower cut from the leader, stalled are the requests it
	// holds, deferred the watch events it has not received yet, and orphan
	// says the leader ended the session while the follower, not knowing,
	// keeps the connection open.
	member     MemberID
	stalled    []held
	deferred   []Message
	orphan     bool
	cutWatches SetWatches // the watches its reads set on the cut follower
}

func (s *session) push(msg Message) { s.outbox = append(s.outbox, msg) }

// negotiate is the server's processConnectRequest: the requested timeout
// is raised to MinSessionTimeout, then lowered to MaxSessionTimeout. Like the
// server, the model works in whole milliseconds.
func (m *Model) negotiate(requested time.Duration) time.Duration {
	t := requested.Truncate(time.Millisecond)
	if t < m.cfg.MinSessionTimeout {
		t = m.cfg.MinSessionTimeout
	}
	if t > m.cfg.MaxSessionTimeout {
		t = m.cfg.MaxSessionTimeout
	}
	return t
}

// touch is the server hearing from the session: any request or ping, and
// the handshake of a reconnect. See session.deadline.
func (m *Model) touch(s *session) {
	tick := m.cfg.TickTime
	since := m.now.Add(s.timeout).Sub(m.epoch)
	s.deadline = m.epoch.Add((since/tick + 1) * tick)
}

// Connect creates a session whose client asks for the given timeout and
// returns its id and the negotiated timeout. createSession is a transaction:
// it takes a zxid.
func (m *Model) Connect(now time.Time, requested time.Duration) (SessionID, time.Duration) {
	id, timeout, err := m.ConnectTo(now, TheLeader, requested)
	if err != nil {
		panic(err) // the leader always answers
	}
	return id, timeout
}

// ConnectTo is Connect through member: ErrStalled or ErrNotServing when
// that member cannot answer a handshake now (ensemble.go).
func (m *Model) ConnectTo(now time.Time, member MemberID, requested time.Duration) (SessionID, time.Duration, error) {
	m.Tick(now)
	if err := m.handshakeWith(member); err != nil {
		return 0, 0, err
	}
	m.begin().commit()
	s := &session{
		id:           m.nextSession,
		timeout:      m.negotiate(requested),
		state:        Connected,
		ephemerals:   make(map[string]struct{}),
		dataWatches:  make(map[string]struct{}),
		childWatches: make(map[string]struct{}),
		member:       member,
	}
	m.nextSession++
	m.sessions[s.id] = s
	m.live = append(m.live, s) // ids grow, so live stays sorted
	m.touch(s)
	return s.id, s.timeout, nil
}

// Reconnect is the client of session id connecting again at now and
// sending the watches it still holds (w; see ClientWatches). A session that
// expired or was closed fails with ErrSessionExpired, as the server answers
// such a handshake with a zero session id. Otherwise the session is touched
// and connected, keeps its negotiated timeout (go-zookeeper asks for it
// again), and the server answers the setWatches request with an event for
// every watched node that changed since w.RelativeZxid (see setWatches),
// queued on the new connection before anything else.
//
// Reconnecting a session that is still connected models a client that gave
// up on a connection the server has not noticed is dead: that connection is
// dropped first, with what it held.
func (m *Model) Reconnect(now time.Time, id SessionID, w SetWatches) (time.Duration, error) {
	return m.ReconnectTo(now, TheLeader, id, w)
}

// ReconnectTo is Reconnect through member: ErrStalled or ErrNotServing
// when that member cannot answer a handshake now (ensemble.go).
func (m *Model) ReconnectTo(now time.Time, member MemberID, id SessionID, w SetWatches) (time.Duration, error) {
	m.Tick(now)
	s := m.sessions[id]
	if s == nil {
		return 0, ErrUnknownSession
	}
	if err := m.handshakeWith(member); err != nil {
		return 0, err
	}
	if s.state == Expired || s.state == Closed {
		return 0, ErrSessionExpired
	}
	m.dropConnection(s)
	s.state = Connected
	s.member = member
	m.touch(s)
	m.setWatches(s, w)
	return s.timeout, nil
}

// Disconnect loses session id's connection at now: whatever the server had
// queued on it (replies, events, its close) is lost, and so are the
// session's watches on the server. The session itself lives on until it
// expires or reconnects. Disconnecting a session that has no connection
// only drops what is left queued.
func (m *Model) Disconnect(now time.Time, id SessionID) error {
	m.Tick(now)
	s := m.sessions[id]
	if s == nil {
		return ErrUnknownSession
	}
	m.dropConnection(s)
	return nil
}

func (m *Model) dropConnection(s *session) {
	s.outbox = nil
	s.stalled, s.deferred, s.orphan, s.cutWatches = nil, nil, false, SetWatches{}
	clear(s.dataWatches)
	clear(s.childWatches)
	if s.state == Connected {
		s.state = Disconnected
	}
}

// Close is the client closing session id: a closeSession transaction as in
// expiry, then the close's reply (Op OpClose, Xid xid) and the connection's
// close are queued, after the watch events the session's own ephemerals'
// deletion sent it.
func (m *Model) Close(now time.Time, id SessionID, xid int64) error {
	m.Tick(now)
	s, err := m.connected(id)
	if err != nil {
		return err
	}
	if m.cutOff(s) {
		return ErrStalled // the close is the leader's; the session lives on
	}
	m.end(s, Closed, &Reply{Xid: xid, Op: OpClose})
	return nil
}

// Ping is the client's heartbeat: it touches the session and queues a ping
// reply carrying the last applied zxid (ping replies keep their place among
// the other replies).
func (m *Model) Ping(now time.Time, id SessionID) error {
	m.Tick(now)
	s, err := m.connected(id)
	if err != nil {
		return err
	}
	if m.cutOff(s) {
		m.heldBy(s, held{ping: true})
		return nil
	}
	m.touch(s)
	s.push(Message{Kind: MsgPing, Reply: Reply{Zxid: m.zxid}})
	return nil
}

func (m *Model) connected(id SessionID) (*session, error) {
	s := m.sessions[id]
	switch {
	case s == nil:
		return nil, ErrUnknownSession
	case s.state == Connected, s.orphan:
		return s, nil
	case s.state == Disconnected:
		return nil, ErrNotConnected
	}
	return nil, fmt.Errorf("%w: %w", ErrNotConnected, ErrSessionExpired)
}

// expireDue expires every live session whose deadline has come, earliest
// deadline first, lower id first within a bucket (the server's order within
// a bucket is a hash set's).
func (m *Model) expireDue() {
	for {
		var due *session
		for _, s := range m.live {
			if !s.deadline.After(m.now) && (due == nil || s.deadline.Before(due.deadline)) {
				due = s
			}
		}
		if due == nil {
			return
		}
		m.end(due, Expired, nil)
	}
}

// end is the closeSession transaction, of an expiry or of a client's close:
// one zxid, with which every ephemeral of the session is deleted, in path
// order or in Config.EndOrder's (the server walks a hash set). Their watch
// events go out at once, also to the dying session while it has a
// connection (the server closes the connection after it applied the
// transaction); then the server closes that connection, after the close's
// reply if there is one.
func (m *Model) end(s *session, state SessionState, closeReply *Reply) {
	hadConnection := s.state == Connected
	t := m.begin()
	t.ending = true
	paths := slices.Sorted(maps.Keys(s.ephemerals))
	if m.cfg.EndOrder != nil {
		paths = m.cfg.EndOrder(paths)
	}
	for _, p := range paths {
		if _, ok := s.ephemerals[p]; ok { // skip what EndOrder made up or repeated
			t.deleteNode(p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(s.ephemerals)) {
		t.deleteNode(p) // what an EndOrder left out
	}
	t.commit()
	if hadConnection && m.cutOff(s) {
		// The follower does not hear of the end: it keeps the connection
		// open, answering pings, until it hears (ensemble.go).
		s.orphan = true
	} else if hadConnection {
		if closeReply != nil {
			closeReply.Zxid = m.zxid
			s.push(Message{Kind: MsgReply, Reply: *closeReply})
		}
		s.push(Message{Kind: MsgClosed})
	}
	s.state = state
	clear(s.dataWatches)
	clear(s.childWatches)
	m.live = slices.DeleteFunc(m.live, func(x *session) bool { return x == s })
}

// Session describes session id.
func (m *Model) Session(id SessionID) (SessionInfo, bool) {
	s := m.sessions[id]
	if s == nil {
		return SessionInfo{}, false
	}
	return SessionInfo{ID: s.id, State: s.state, Timeout: s.timeout, Deadline: s.deadline}, true
}

// NextExpiry is the earliest deadline of a session not yet expired or
// closed: a simulator that jumps its clock there (Tick) sees it expire.
func (m *Model) NextExpiry() (time.Time, bool) {
	var next time.Time
	for _, s := range m.live {
		if next.IsZero() || s.deadline.Before(next) {
			next = s.deadline
		}
	}
	return next, !next.IsZero()
}

// Pending is the number of messages queued on session id's connection.
func (m *Model) Pending(id SessionID) int {
	if s := m.sessions[id]; s != nil {
		return len(s.outbox)
	}
	return 0
}

// Next takes the oldest message queued on session id's connection: the
// client receiving it. Messages come out in the order the server sent them;
// a simulator may take them as late as it likes, but not out of order.
func (m *Model) Next(id SessionID) (Message, bool) {
	s := m.sessions[id]
	if s == nil || len(s.outbox) == 0 {
		return Message{}, false
	}
	msg := s.outbox[0]
	s.outbox[0] = Message{}
	s.outbox = s.outbox[1:]
	if len(s.outbox) == 0 {
		s.outbox = nil
	}
	return msg, true
}
