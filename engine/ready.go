package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/events"
)

// ready is what the core decided while stepping the events since the
// runtime last took it: the runtime carries it out, each list in order,
// before it steps the next event. It names contenders by their ids: the
// runtime keeps, by id, the futures, leases and contexts it acts on.
type ready struct {
	// Counts are what the runtime adds to the engine's figures (Stats,
	// Sessions), before anything else, so that whoever sees a notice
	// carried out sees the counts that led to it.
	Counts counts
	// Logs are records for the engine's logger, in the order made.
	Logs     []logRecord
	Requests []op            // to send
	Timers   []timerAction   // to arm or stop
	Contexts []contextAction // cancel groups to follow or let go
	// Notices reach users: futures to resolve, leases to mark, reports to
	// the observer. Their order is the order users see.
	Notices []notice
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

// counts are increments of the engine's figures.
type counts struct {
	LocalWatches, Predicted                         uint64 // Stats
	Reconnects, Disconnects, Expirations, Untrusted uint64 // Sessions
}

// logLevel is a record's level, with log/slog's values.
type logLevel int

const (
	levelDebug logLevel = -4
	levelInfo  logLevel = 0
	levelWarn  logLevel = 4
	levelError logLevel = 8
)

// logRecord is one record for the engine's logger: a message and its
// attributes as key-value pairs, as slog.Logger.Log takes them.
type logRecord struct {
	Level logLevel
	Msg   string
	Args  []any
}

// timerAction arms timer ID to fire after After, or stops it.
type timerAction struct {
	ID    uint64
	After time.Duration
	Stop  bool
}

// contextAction follows the contexts of a cancel group (see cancel.go),
// posting the engine's cancel command when they end, or stops following
// them.
type contextAction struct {
	Group uint64
	Stop  bool
}

type noticeKind int

const (
	noteAcquired       noticeKind = iota // resolve the acquisition: granted (its lease admitted), or failed with Err
	noteReleased                         // resolve the release with Err, or with the lease's end when FromLease
	noteReleaseRefused                   // resolve a release of a lease not held: its end, or ErrNotHeld
	noteLost                             // the lease is lost with Err
	noteEnded                            // the lease ended (released or forgotten)
	noteSuspended                        // the lease's session is disconnected
	noteResumed                          // the lease's session is back
	noteRevoked                          // a revocation was asked of the lease
	noteReport                           // tell the observer
	noteDropped                          // the core forgot the contender: the runtime lets go of its lease
)

var noticeNames = [...]string{"acquired", "released", "release-refused", "lost", "ended", "suspended", "resumed", "revoked", "report", "dropped"}

// notice is one thing users see, about contender ID.
type notice struct {
	Kind      noticeKind
	ID        uint64
	Token     int64 // the lease's, in every notice about one
	Err       error
	FromLease bool          // noteReleased: the error is the lease's end, as it is when the notice is carried out
	Report    events.Report // noteReport
}

func (n notice) String() string {
	var b strings.Builder
	b.WriteString(noticeNames[n.Kind])
	if n.Kind == noteReport {
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

func (t timerAction) String() string {
	if t.Stop {
		return fmt.Sprintf("stop timer %d", t.ID)
	}
	return fmt.Sprintf("timer %d after %v", t.ID, t.After)
}

// notify queues a notice.
func (c *core) notify(n notice) { c.rd.Notices = append(c.rd.Notices, n) }

// report queues a report to the observer about contender en.
func (c *core) report(en *entry, r events.Report) {
	if c.cfg.Observe {
		r.ID = en.id
		c.notify(notice{Kind: noteReport, ID: en.id, Report: r})
	}
}

// log queues a record for the engine's logger.
func (c *core) log(level logLevel, msg string, args ...any) {
	c.rd.Logs = append(c.rd.Logs, logRecord{Level: level, Msg: msg, Args: args})
}

// debug reports whether debug records are wanted now.
func (c *core) debug() bool { return c.cfg.Debug != nil && c.cfg.Debug() }
