// Package input is the vocabulary of the engine's core: every event the
// runtime (or the simulator) feeds it: session state, a watch fired, a
// request's reply classified into an Outcome, a request done, a change of
// the watchdog's trust, a timer, a user's command.
//
// It knows nothing of ZooKeeper clients: the runtime translates the
// client's callbacks and errors into these values, so the core decides on
// them alone. Nothing here is public API: what observers see is package
// events' Report.
package input

import (
	"time"
)

// Event is anything the loop consumes. The concrete types are listed below;
// the loop switches on them.
type Event interface{ isEvent() }

// SessionState is the state of the engine's ZooKeeper session as the loop
// sees it.
type SessionState int

const (
	// Disconnected: the connection dropped; the session may still be valid.
	Disconnected SessionState = iota
	// Connected: the session is established (new, or the same one again).
	Connected
	// Expired: the server ended the session; its ephemeral nodes are gone.
	Expired
	// Closed: the engine closed the session on purpose.
	Closed
)

func (s SessionState) String() string {
	switch s {
	case Disconnected:
		return "disconnected"
	case Connected:
		return "connected"
	case Expired:
		return "expired"
	case Closed:
		return "closed"
	}
	return "unknown"
}

// SessionChanged reports a change of the session's state.
type SessionChanged struct {
	State     SessionState
	SessionID int64 // the session now in use; 0 when none
	// Timeout is the session timeout the server negotiated, when the client
	// reported it; 0 when unknown.
	Timeout time.Duration
	At      time.Time
}

// WatchType says what a fired watch saw.
type WatchType int

const (
	NodeCreated WatchType = iota
	NodeDeleted
	NodeDataChanged
	NodeChildrenChanged
	// NotWatching: the client dropped the watch (session expired or closed).
	NotWatching
)

func (w WatchType) String() string {
	switch w {
	case NodeCreated:
		return "created"
	case NodeDeleted:
		return "deleted"
	case NodeDataChanged:
		return "data-changed"
	case NodeChildrenChanged:
		return "children-changed"
	case NotWatching:
		return "not-watching"
	}
	return "unknown"
}

// WatchFired reports a watch notification for one znode path.
type WatchFired struct {
	Type WatchType
	Path string
}

// OpKind names a ZooKeeper request the engine sends.
type OpKind int

const (
	// OpCreate creates a contender's node; made with its lock path (see
	// the core's Op.Cold), in one request.
	OpCreate OpKind = iota
	OpList
	OpWatch
	OpDelete
	OpWatchChildren // getChildren with a watch
	OpRevokeWatch   // getData with a watch on a revocable holder's own node
	// OpRecover settles a create whose reply was lost: a sync of the lock
	// path, its children, and an exists of each child carrying the
	// contender's protected id, to learn which session owns it.
	OpRecover
	// OpPin creates the engine's pin on a lock path, OpUnpin deletes it:
	// an ephemeral child that keeps the path from being removed while the
	// engine cycles on it without listing (see the engine's DESIGN.md).
	OpPin
	OpUnpin
	// OpCohortWatch lists a lock path with a watch for a cohort's node:
	// whether another client waits (see the core's cohorts.go).
	OpCohortWatch
	// OpMark writes a cohort's node's data again, unchanged, to mark it
	// lingering or held again (each write moves its data version by one).
	OpMark
	opKinds
)

// NumOpKinds is the number of OpKind values, for counters indexed by kind.
const NumOpKinds = int(opKinds)

func (k OpKind) String() string {
	switch k {
	case OpCreate:
		return "create"
	case OpList:
		return "list"
	case OpWatch:
		return "watch"
	case OpDelete:
		return "delete"
	case OpWatchChildren:
		return "watch-children"
	case OpRevokeWatch:
		return "revoke-watch"
	case OpRecover:
		return "recover"
	case OpPin:
		return "pin"
	case OpUnpin:
		return "unpin"
	case OpCohortWatch:
		return "cohort-watch"
	case OpMark:
		return "mark"
	}
	return "unknown"
}

// Outcome is a request's reply as the core needs it: the client's error
// values are the runtime's to classify.
type Outcome int

const (
	OK         Outcome = iota
	NoNode             // the znode named does not exist
	NodeExists         // the znode to create exists
	ConnLoss           // the request's fate is unknown: connection lost, session moved or expired
	Closing            // the client is closing; nothing more can be sent
	Refused            // any other error: the server or the client refused the request
	// NoAuth: the server refused the request for lack of rights (the
	// node's ACL does not grant them to the session's credentials) or
	// refused the credentials. Unlike another refusal, asking again is
	// refused for as long as the session lives.
	NoAuth
)

var outcomeNames = [...]string{"ok", "no-node", "node-exists", "connection-loss", "closing", "refused", "no-auth"}

func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomeNames) {
		return "unknown"
	}
	return outcomeNames[o]
}

// OpDone reports that one ZooKeeper request (or one op of a multi request)
// finished. Every op the engine sends comes back as exactly one OpDone.
type OpDone struct {
	Op        OpKind
	Contender uint64 // 0 for requests shared by several contenders (listings)
	Path      string // the znode the request named
	Name      string // OpCreate: the created node's name (last path element); OpRecover: the contender's own node, if found
	Children  []string
	Data      []byte // OpRevokeWatch, OpWatch: the node's data
	Version   int32  // OpWatch: the watched node's data version (0 for a node of this engine, watched locally); OpMark: the version the write left
	Pzxid     int64  // OpList, OpRecover, OpWatchChildren: the parent's pzxid at the time of the listing
	// Cversion, with Pzxid: the parent's child version at the time of the
	// listing, as the server reports it: 2×(children ever created) −
	// (children now), so every create and delete of a child moves it.
	Cversion int32
	Zxid     int64 // OpCreate, OpDelete: the greatest zxid the client had read once the reply came
	Outcome  Outcome
	Err      error // the client's error, for the user; nil when Outcome is OK

	// Foreign, for OpRecover: a child carries the contender's protected id,
	// but another session owns it.
	Foreign bool
	// Fresh, for OpCreate: the request that made the node made its lock
	// path too, as a container, and the node was the path's first child.
	// The create and the container's were one transaction, so no other
	// node was on the path when the node was made.
	Fresh bool
	// Pruned, for OpDelete: the lock path was deleted with the node.
	Pruned bool
}

// RequestDone reports that a request the core sent (one multi request
// counts once) came back, after the OpDone of each of its ops: the core
// counts requests in flight with it. Write: the request carried creates
// or deletes; Ops of them (group commit weighs the writes in flight by it).
type RequestDone struct {
	Write bool
	Ops   int
}

// TrustChanged reports the session watchdog's verdict: Lapsed, the server
// may have expired the session, since no reply came in time (the watchdog
// has already closed the Lost channel of every lease held); or it answers
// the same session again, in time. Expired, with Lapsed: it lapsed
// because the server said the session expired (a handshake refused it or
// named a new one), so the lapse is that expiry, not a silence that may
// have outlived the session.
//
// Margin, with Lapsed, is the watchdog's lost margin then: the time after
// the lapse before which the server cannot have expired the session. A
// lost holder was promised that time to stop, so a node that keeps others
// out stays that long even if the session answers again sooner.
type TrustChanged struct {
	Lapsed  bool
	Expired bool
	Margin  time.Duration
}

// Command is a request from a user of the engine: acquire, release,
// cancel, close. Its payload is the engine's own; the core type-switches
// on it.
type Command struct {
	Payload any
}

// TimerFired reports that a timer the loop armed has fired.
type TimerFired struct {
	ID uint64
}

func (SessionChanged) isEvent() {}
func (WatchFired) isEvent()     {}
func (OpDone) isEvent()         {}
func (Command) isEvent()        {}
func (TimerFired) isEvent()     {}
func (RequestDone) isEvent()    {}
func (TrustChanged) isEvent()   {}
