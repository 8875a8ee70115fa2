package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/events"
)

// Ready is what the core decided while stepping the events since the
// runtime last took it: the runtime carries it out, each list in order,
// before it steps the next event. It names contenders by their ids: the
// runtime keeps, by id, the futures, leases and contexts it acts on.
type Ready struct {
	// Counts are what the runtime adds to the engine's figures (Stats,
	// Sessions), before anything else, so that whoever sees a notice
	// carried out sees the counts that led to it.
	Counts Counts
	// Logs are records for the engine's logger, in the order made.
	Logs     []Log
	Requests []Op            // to send
	Timers   []TimerAction   // to arm or stop
	Contexts []ContextAction // cancel groups to follow or let go
	// Notices reach users: futures to resolve, leases to mark, reports to
	// the observer. Their order is the order users see.
	Notices []Notice
	// Loopback are events the core addresses to itself, such as the reply
	// to a watch on one of its own nodes, which needs no request: the
	// runtime queues them behind the events already waiting.
	Loopback []input.Event
	// State is the engine's state, when StateChanged.
	State        State
	StateChanged bool
	// FirstSession: the engine's first session is up; Start may return.
	FirstSession bool
	// Exit: the core closed and has nothing left; the runtime ends the
	// session and the loop.
	Exit bool
}

// Counts are increments of the engine's figures.
type Counts struct {
	LocalWatches, Predicted                         uint64 // Stats
	Reconnects, Disconnects, Expirations, Untrusted uint64 // Sessions
}

// Level is a record's level, with log/slog's values.
type Level int

const (
	LevelDebug Level = -4
	LevelInfo  Level = 0
	LevelWarn  Level = 4
	LevelError Level = 8
)

// Log is one record for the engine's logger: a message and its
// attributes as key-value pairs, as slog.Logger.Log takes them.
type Log struct {
	Level Level
	Msg   string
	Args  []any
}

// TimerAction arms timer ID to fire after After, or stops it.
type TimerAction struct {
	ID    uint64
	After time.Duration
	Stop  bool
}

// ContextAction follows the contexts of a cancel group (see cancel.go),
// posting the engine's cancel command when they end, or stops following
// them.
type ContextAction struct {
	Group uint64
	Stop  bool
}

// NoticeKind is what a notice tells.
type NoticeKind int

const (
	NoteAcquired       NoticeKind = iota // resolve the acquisition: granted (its lease admitted), or failed with Err
	NoteReleased                         // resolve the release with Err, or with the lease's end when FromLease
	NoteReleaseRefused                   // resolve a release of a lease not held: its end, or ErrNotHeld
	NoteLost                             // the lease is lost with Err
	NoteEnded                            // the lease ended (released or forgotten)
	NoteSuspended                        // the lease's session is disconnected
	NoteResumed                          // the lease's session is back
	NoteRevoked                          // a revocation was asked of the lease
	NoteReport                           // tell the observer
	NoteDropped                          // the core forgot the contender: the runtime lets go of its lease
)

var noticeNames = [...]string{"acquired", "released", "release-refused", "lost", "ended", "suspended", "resumed", "revoked", "report", "dropped"}

// Notice is one thing users see, about contender ID.
type Notice struct {
	Kind      NoticeKind
	ID        uint64
	Ref       any   // noteAcquired: the acquisition's Acquire.Ref
	Token     int64 // the lease's, in every notice about one
	Err       error
	FromLease bool          // noteReleased: the error is the lease's end, as it is when the notice is carried out, if it ended so; else Err
	Report    events.Report // noteReport
}

func (n Notice) String() string {
	var b strings.Builder
	b.WriteString(noticeNames[n.Kind])
	if n.Kind == NoteReport {
		fmt.Fprintf(&b, " %v %s", n.Report.Kind, n.Report.Path)
		if n.Report.Node != "" {
			fmt.Fprintf(&b, " node=%s", n.Report.Node)
		}
		if n.Report.Token != 0 {
			fmt.Fprintf(&b, " token=%d", n.Report.Token)
		}
		if n.Report.Err != nil {
			fmt.Fprintf(&b, ": %v", n.Report.Err)
		}
		return b.String()
	}
	if n.Token != 0 {
		fmt.Fprintf(&b, " token=%d", n.Token)
	}
	if n.Err != nil {
		fmt.Fprintf(&b, ": %v", n.Err)
	}
	return b.String()
}

func (t TimerAction) String() string {
	if t.Stop {
		return fmt.Sprintf("stop timer %d", t.ID)
	}
	return fmt.Sprintf("timer %d after %v", t.ID, t.After)
}

// notify queues a notice.
func (c *Core) notify(n Notice) { c.rd.Notices = append(c.rd.Notices, n) }

// report queues a report to the observer about contender en.
func (c *Core) report(en *entry, r events.Report) {
	if c.cfg.Observe {
		r.ID, r.Carrier = en.id, en.carrier
		c.notify(Notice{Kind: NoteReport, ID: en.id, Report: r})
	}
}

// log queues a record for the engine's logger.
func (c *Core) log(level Level, msg string, args ...any) {
	c.rd.Logs = append(c.rd.Logs, Log{Level: level, Msg: msg, Args: args})
}

// debug reports whether debug records are wanted now.
func (c *Core) debug() bool { return c.cfg.Debug != nil && c.cfg.Debug() }

// State is the engine's standing with ZooKeeper as the core derives it
// from the session flags: engine.State, value for value.
type State int

const (
	StateConnected State = iota + 1 // connected and trusted: leases are granted and held
	StateSuspended                  // the connection is down; the session may live
	StateExpired                    // no session: the server expired it, or none yet
	StateClosed                     // the engine closed
	StateLapsed                     // the session is not trusted, and may live
)

var stateNames = [...]string{StateConnected: "connected", StateSuspended: "suspended", StateExpired: "expired", StateClosed: "closed", StateLapsed: "lapsed"}

func (s State) String() string {
	if s <= 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("State(%d)", int(s))
	}
	return stateNames[s]
}
