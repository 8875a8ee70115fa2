package zkmodel

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"time"
)

// Errors of the model's API: a simulator that hits one drove the model
// wrongly or raced a session's end. Replies carry ZooKeeper's Codes instead.
var (
	// ErrUnknownSession: no session with that id was ever created.
	ErrUnknownSession = errors.New("zkmodel: unknown session")
	// ErrNotConnected: the session has no connection to send on (it is
	// disconnected, or the server closed the connection when the session
	// expired or was closed).
	ErrNotConnected = errors.New("zkmodel: session not connected")
	// ErrSessionExpired: the session expired or was closed; a client that
	// reconnects learns it from the handshake (go-zookeeper: StateExpired).
	ErrSessionExpired = errors.New("zkmodel: session expired")
)

// Config is the server's configuration the model needs.
type Config struct {
	// TickTime is the server's tick: the session expiry buckets are this
	// wide, and the default session timeout bounds are multiples of it.
	// Default 3s (ZooKeeperServer.DEFAULT_TICK_TIME).
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound a negotiated session
	// timeout. Defaults, as the server's: 2×TickTime and 20×TickTime.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// EndOrder, if set, puts in order the paths of the ephemerals a
	// session's close or expiry deletes (they come sorted); the deletions,
	// and the watch events they fire, follow that order. The server's order
	// is that of a Java HashSet, which no client can rely on, so a
	// simulator may permute the paths here (from its own seeded choices) to
	// explore the orders. It must return a permutation of paths.
	EndOrder func(paths []string) []string
	// Followers is the number of followers beside the leader: 0, the
	// default, models one standalone server (see ensemble.go).
	Followers int
	// SyncLimit is how many ticks a follower cut from its leader goes on
	// serving its clients before it gives the leader up (the server's
	// syncLimit). Default 5.
	SyncLimit int
}

func (c Config) withDefaults() Config {
	if c.TickTime <= 0 {
		c.TickTime = 3 * time.Second
	}
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 20 * c.TickTime
	}
	if c.SyncLimit <= 0 {
		c.SyncLimit = 5
	}
	return c
}

// Model is one ZooKeeper server, in memory. It is not safe for concurrent
// use: one goroutine (the simulator's) drives it.
type Model struct {
	cfg Config
	// epoch is the clock's origin: expiry buckets fall on epoch + k×TickTime
	// (the server's fall on multiples of TickTime of its monotonic clock).
	epoch time.Time
	now   time.Time
	zxid  int64 // the last transaction applied

	nodes      map[string]*node
	containers map[string]struct{} // the container nodes, as DataTree.getContainers

	// lives is the history of every node's life, by parent path (see
	// Lives); living indexes the life of each node that exists.
	lives  map[string][]Life
	living map[string]int

	sessions    map[SessionID]*session // every session ever created
	live        []*session             // sessions not expired or closed, by id
	nextSession SessionID

	members []*member // the leader first, then the followers (ensemble.go)
}

// New returns a server whose clock reads now, with an empty tree but for
// the root and the server's own /zookeeper, /zookeeper/quota and
// /zookeeper/config (all with zero stats, as the server builds them).
func New(cfg Config, now time.Time) *Model {
	m := &Model{
		cfg:         cfg.withDefaults(),
		epoch:       now,
		now:         now,
		nodes:       make(map[string]*node),
		containers:  make(map[string]struct{}),
		lives:       make(map[string][]Life),
		living:      make(map[string]int),
		sessions:    make(map[SessionID]*session),
		nextSession: 1,
	}
	m.nodes["/"] = &node{children: map[string]struct{}{"zookeeper": {}}}
	m.nodes["/zookeeper"] = &node{children: map[string]struct{}{"quota": {}, "config": {}}}
	m.nodes["/zookeeper/quota"] = &node{}
	m.nodes["/zookeeper/config"] = &node{}
	for range 1 + max(m.cfg.Followers, 0) {
		m.members = append(m.members, &member{})
	}
	return m
}

// Config is the configuration in force, defaults filled in.
func (m *Model) Config() Config { return m.cfg }

// Now is the server's clock: the latest time any call passed in.
func (m *Model) Now() time.Time { return m.now }

// Zxid is the last transaction applied.
func (m *Model) Zxid() int64 { return m.zxid }

// Tick moves the server's clock to now and expires every session the server
// has not heard from within its timeout (see session.go). Every method that
// takes a time does the same first. The clock never goes back: a time
// before the current one leaves it where it is.
func (m *Model) Tick(now time.Time) {
	if now.After(m.now) {
		m.now = now
	}
	m.dropDue()
	m.expireDue()
}

// Submit is the server receiving req on session id's connection at now: it
// touches the session, applies req at once (a write gets the next zxid) and
// queues its reply on the session's connection, after any watch event the
// request triggered for that same session. Watch events for other sessions
// are queued on theirs, so each sees an event before any later reply.
//
// To model a request lost with its connection, do not call Submit; to model
// one applied whose reply is lost, call Submit, then Disconnect before the
// reply is taken from the connection.
func (m *Model) Submit(now time.Time, id SessionID, req Request) error {
	m.Tick(now)
	s, err := m.connected(id)
	if err != nil {
		return err
	}
	if m.cutOff(s) {
		m.heldBy(s, held{req: req})
		return nil
	}
	m.touch(s)
	rep := m.apply(s, req)
	s.push(Message{Kind: MsgReply, Reply: rep})
	return nil
}

func (m *Model) apply(s *session, req Request) Reply {
	rep := Reply{Xid: req.Xid, Op: req.Op}
	switch req.Op {
	case OpMulti:
		rep.Results, rep.Err = m.multi(s.id, req.Ops)
	case OpCreate, OpCreateContainer, OpDelete, OpSetData, OpCheck:
		t := m.begin()
		t.by = s.id
		res := t.write(s.id, req)
		t.commit()
		rep.Err, rep.Path, rep.Stat = res.Err, res.Path, res.Stat
	case OpExists:
		rep.Stat, rep.Err = m.exists(s, req.Path, req.Watch)
	case OpGetData:
		rep.Data, rep.Stat, rep.Err = m.getData(s, req.Path, req.Watch)
	case OpGetChildren:
		rep.Children, rep.Stat, rep.Err = m.getChildren(s, req.Path, req.Watch)
	case OpSync:
		rep.Path = req.Path
	default:
		rep.Err = MarshallingError
	}
	rep.Zxid = m.zxid
	return rep
}

// exists is the server's exists: it leaves a data watch on the path whether
// or not the node exists (DataTree.statNode adds it before it looks), so a
// later create fires NodeCreated. Only a NUL in the path is refused; reads
// do not validate paths further (go-zookeeper validates before sending).
func (m *Model) exists(s *session, p string, watch bool) (Stat, Code) {
	if strings.IndexByte(p, 0) >= 0 {
		return Stat{}, BadArguments
	}
	if watch {
		s.dataWatches[p] = struct{}{}
	}
	n := m.nodes[p]
	if n == nil {
		return Stat{}, NoNode
	}
	return n.stat(), OK
}

// getData leaves a data watch only on a node that exists: on a missing node
// it fails with NoNode and watches nothing.
func (m *Model) getData(s *session, p string, watch bool) ([]byte, Stat, Code) {
	n := m.nodes[p]
	if n == nil {
		return nil, Stat{}, NoNode
	}
	if watch {
		s.dataWatches[p] = struct{}{}
	}
	return slices.Clone(n.data), n.stat(), OK
}

// getChildren is getChildren2: the names and the parent's own stat. A child
// watch is left only on a node that exists.
func (m *Model) getChildren(s *session, p string, watch bool) ([]string, Stat, Code) {
	n := m.nodes[p]
	if n == nil {
		return nil, Stat{}, NoNode
	}
	if watch {
		s.childWatches[p] = struct{}{}
	}
	return n.sortedChildren(), n.stat(), OK
}

// Node returns the stat and data of the node at p, for a checker: it is not
// a request and touches no session.
func (m *Model) Node(p string) (Stat, []byte, bool) {
	n := m.nodes[p]
	if n == nil {
		return Stat{}, nil, false
	}
	return n.stat(), slices.Clone(n.data), true
}

// Children returns the sorted names of p's children, for a checker.
func (m *Model) Children(p string) ([]string, bool) {
	n := m.nodes[p]
	if n == nil {
		return nil, false
	}
	return n.sortedChildren(), true
}

// Ephemerals returns the sorted paths of the ephemeral nodes session id
// owns, for a checker.
func (m *Model) Ephemerals(id SessionID) []string {
	s := m.sessions[id]
	if s == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.ephemerals))
}
