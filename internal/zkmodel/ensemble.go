package zkmodel

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// The ensemble: a leader and Config.Followers followers, every one
// serving the same tree (the model keeps one), each session connected to
// one member. What the ensemble adds to one server is the fault that only
// a follower can show: a follower cut from its leader.
//
// Only the leader tracks session expiry. A follower touches a session in
// a table of its own when the session's client sends it anything, and
// passes the table on to the leader with its next ping of the leader
// (LearnerSessionTracker); the model passes touches on at once while the
// follower is linked. Cut from its leader, a follower:
//
//   - goes on answering its clients' pings, with the last zxid it had,
//     and records the touches it cannot pass on, for up to SyncLimit ticks
//     (its read of the leader times out then); the leader meanwhile hears
//     nothing of those sessions and may expire them, and the follower,
//     which never learns of it, keeps their connections open;
//   - answers reads from its own tree, the leader's at the cut (a watch a
//     read sets fires once the link is back, if what the follower then
//     receives changed its node); holds writes and syncs, which wait for
//     the leader, and every request and ping sent behind one, as the
//     server answers a session's requests in order; and holds the watch
//     events of the leader's transactions it does not receive;
//   - answers no handshake: a new session and a session moving to it are
//     both the leader's to validate;
//   - after SyncLimit ticks, gives up its leader: it closes every client
//     connection (what it held is lost, and so are the touches) and serves
//     no client until the link comes back.
//
// When the link comes back before that, the follower passes its touches on
// (a session the leader has not expired yet is touched then), sends what
// it held in order, and delivers the held events; a session the leader
// expired meanwhile has its connection closed.
//
// Where it simplifies: a follower that gave up
// its leader rejoins the moment the link is back (the server first elects
// and syncs); the leader is never cut.

// MemberID names a member of the ensemble: 0 is the leader (or the
// standalone server), 1 to Config.Followers the followers.
type MemberID int

// TheLeader is the leader's MemberID.
const TheLeader MemberID = 0

// Errors of a handshake with a member that cannot take it.
var (
	// ErrStalled: the member is a follower cut from its leader; the
	// handshake waits for a leader that does not answer.
	ErrStalled = errors.New("zkmodel: handshake waits for a leader the follower cannot reach")
	// ErrNotServing: the member gave up its leader and serves no client.
	ErrNotServing = errors.New("zkmodel: member serves no client")
)

type member struct {
	cut     bool
	cutAt   time.Time
	dropped bool  // gave up its leader: serves no client until healed
	zxid    int64 // the last transaction it has while cut
	// touched are the sessions it heard from while cut, to pass on.
	touched map[SessionID]struct{}
	// tree is its tree while cut: the leader's at the cut.
	tree map[string]*node
}

// held is a request (or a ping) a cut follower holds.
type held struct {
	req  Request
	ping bool
}

// Members is the number of members: 1 for a standalone server.
func (m *Model) Members() int { return len(m.members) }

// Role is what member id's srvr four-letter word says its mode is:
// "standalone", "leader", "follower", or "" when it serves no client (its
// answer then says so, and names no mode).
func (m *Model) Role(id MemberID) string {
	switch {
	case len(m.members) == 1:
		return "standalone"
	case id == TheLeader:
		return "leader"
	case m.members[id].dropped:
		return ""
	}
	return "follower"
}

// CutOff reports whether follower id is cut from its leader.
func (m *Model) CutOff(id MemberID) bool { return m.members[id].cut }

// Cut cuts follower id from the leader at now.
func (m *Model) Cut(now time.Time, id MemberID) error {
	m.Tick(now)
	if id == TheLeader || int(id) >= len(m.members) {
		return fmt.Errorf("zkmodel: member %d is not a follower", id)
	}
	f := m.members[id]
	if f.cut {
		return nil
	}
	f.cut, f.cutAt, f.zxid = true, m.now, m.zxid
	f.touched = make(map[SessionID]struct{})
	f.tree = make(map[string]*node, len(m.nodes))
	for p, n := range m.nodes {
		c := *n
		c.data = slices.Clone(n.data)
		c.children = maps.Clone(n.children)
		f.tree[p] = &c
	}
	return nil
}

// Heal brings back follower id's link to the leader at now (see the
// comment at the top of this file).
func (m *Model) Heal(now time.Time, id MemberID) {
	m.Tick(now)
	f := m.members[id]
	if !f.cut {
		return
	}
	f.cut, f.tree = false, nil
	if f.dropped {
		f.dropped = false
		return
	}
	for _, sid := range slices.Sorted(maps.Keys(f.touched)) {
		if s := m.sessions[sid]; s.state == Connected || s.state == Disconnected {
			m.touch(s)
		}
	}
	f.touched = nil
	for _, s := range m.onMember(id) {
		deferred, stalled, watches := s.deferred, s.stalled, s.cutWatches
		s.deferred, s.stalled, s.cutWatches = nil, nil, SetWatches{}
		s.outbox = append(s.outbox, deferred...)
		if !s.orphan {
			// The watches it set while cut meet the transactions the
			// follower now applies: those that changed their node fire.
			watches.RelativeZxid = f.zxid
			m.setWatches(s, watches)
		}
		if s.orphan {
			// The leader ended the session: the follower learns it now
			// and closes the connection; what it held is refused.
			s.orphan = false
			s.push(Message{Kind: MsgClosed})
			continue
		}
		for _, h := range stalled {
			if h.ping {
				s.push(Message{Kind: MsgPing, Reply: Reply{Zxid: m.zxid}})
				continue
			}
			m.touch(s)
			s.push(Message{Kind: MsgReply, Reply: m.apply(s, h.req)})
		}
	}
}

// onMember are the sessions with a connection open on member id, by id.
func (m *Model) onMember(id MemberID) []*session {
	var on []*session
	for _, sid := range slices.Sorted(maps.Keys(m.sessions)) {
		if s := m.sessions[sid]; s.member == id && (s.state == Connected || s.orphan) {
			on = append(on, s)
		}
	}
	return on
}

// cutOff reports whether s's connection is on a follower cut from the
// leader.
func (m *Model) cutOff(s *session) bool { return m.members[s.member].cut }

// dropDue has every cut follower that has not heard from its leader for
// SyncLimit ticks give it up.
func (m *Model) dropDue() {
	limit := time.Duration(m.cfg.SyncLimit) * m.cfg.TickTime
	for id, f := range m.members {
		if !f.cut || f.dropped || m.now.Before(f.cutAt.Add(limit)) {
			continue
		}
		f.dropped = true
		f.touched, f.tree = nil, nil
		for _, s := range m.onMember(MemberID(id)) {
			s.stalled, s.deferred, s.cutWatches = nil, nil, SetWatches{}
			s.orphan = false
			s.push(Message{Kind: MsgClosed})
			clear(s.dataWatches)
			clear(s.childWatches)
			if s.state == Connected {
				s.state = Disconnected
			}
		}
	}
}

// deliver queues a watch event on s's connection, or holds it while the
// connection's follower is cut from the leader that sends it.
func (m *Model) deliver(s *session, msg Message) {
	if m.cutOff(s) {
		s.deferred = append(s.deferred, msg)
		return
	}
	s.push(msg)
}

// heldBy is a cut follower taking a request or a ping of s: a ping, and
// a read, are answered at once unless a request waits before them; the
// read from the follower's own tree, the leader's at the cut. Either way
// the follower records the touch it cannot pass on.
func (m *Model) heldBy(s *session, h held) {
	f := m.members[s.member]
	f.touched[s.id] = struct{}{}
	switch {
	case len(s.stalled) > 0:
	case h.ping:
		s.push(Message{Kind: MsgPing, Reply: Reply{Zxid: f.zxid}})
		return
	case h.req.Op == OpExists || h.req.Op == OpGetData || h.req.Op == OpGetChildren:
		s.push(Message{Kind: MsgReply, Reply: m.staleRead(s, f, h.req)})
		return
	}
	s.stalled = append(s.stalled, h)
}

// staleRead answers a read from follower f's tree. A watch it asks for is
// set on the follower, which fires it, as the transactions it missed
// arrive, once the link is back (Heal), if they changed its node.
func (m *Model) staleRead(s *session, f *member, req Request) Reply {
	watch := req.Watch
	req.Watch = false
	live := m.nodes
	m.nodes = f.tree
	rep := m.apply(s, req)
	m.nodes = live
	rep.Zxid = f.zxid
	if watch {
		w := &s.cutWatches
		switch {
		case req.Op == OpExists && rep.Err == NoNode:
			w.Exist = append(w.Exist, req.Path)
		case rep.Err != OK:
		case req.Op == OpGetChildren:
			w.Child = append(w.Child, req.Path)
		default:
			w.Data = append(w.Data, req.Path)
		}
	}
	return rep
}

// handshakeWith is whether member id can answer a handshake now.
func (m *Model) handshakeWith(id MemberID) error {
	if int(id) < 0 || int(id) >= len(m.members) {
		return fmt.Errorf("zkmodel: no member %d", id)
	}
	f := m.members[id]
	switch {
	case f.dropped:
		return ErrNotServing
	case f.cut:
		return ErrStalled
	}
	return nil
}
