package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/events"
)

// ready is what the core decided while stepping the events since the
// runtime last took it: the runtime carries it out, each list in order,
// before it steps the next event.
type ready struct {
	Requests []op            // to send
	Timers   []timerAction   // to arm or stop
	Contexts []contextAction // acquisition contexts to follow or let go
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

// timerAction arms timer id to fire after d, or stops it.
type timerAction struct {
	id    uint64
	after time.Duration
	stop  bool
}

// contextAction follows an acquisition context, posting the engine's
// cancel command when it ends, or stops following it.
type contextAction struct {
	ctx  context.Context
	done <-chan struct{}
	stop bool
}

type noticeKind int

const (
	noteAcquired       noticeKind = iota // resolve acquired with lease, or err
	noteReleased                         // resolve released with err, or with the lease's end when fromLease
	noteReleaseRefused                   // resolve released for a lease not held: its end, or ErrNotHeld
	noteLost                             // the lease is lost with err
	noteEnded                            // the lease ended (released or forgotten)
	noteSuspended                        // the lease's session is disconnected
	noteResumed                          // the lease's session is back
	noteRevoked                          // a revocation was asked of the lease
	noteReport                           // tell the observer
)

var noticeNames = [...]string{"acquired", "released", "release-refused", "lost", "ended", "suspended", "resumed", "revoked", "report"}

// notice is one thing users see.
type notice struct {
	kind      noticeKind
	acquired  *Future[*Lease]
	released  *Future[struct{}]
	lease     *Lease
	err       error
	fromLease bool          // noteReleased: the error is the lease's end, as it is when the notice is carried out
	report    events.Report // noteReport
}

func (n notice) String() string {
	var b strings.Builder
	b.WriteString(noticeNames[n.kind])
	if n.kind == noteReport {
		fmt.Fprintf(&b, " %v %s", n.report.Kind, n.report.Path)
		if n.report.Node != "" {
			fmt.Fprintf(&b, " node=%s", n.report.Node)
		}
		if n.report.Token != 0 {
			fmt.Fprintf(&b, " token=%d", n.report.Token)
		}
		if n.report.Err != nil {
			fmt.Fprintf(&b, ": %v", n.report.Err)
		}
		return b.String()
	}
	if n.lease != nil {
		fmt.Fprintf(&b, " token=%d", n.lease.token)
	}
	if n.err != nil {
		fmt.Fprintf(&b, ": %v", n.err)
	}
	return b.String()
}

func (t timerAction) String() string {
	if t.stop {
		return fmt.Sprintf("stop timer %d", t.id)
	}
	return fmt.Sprintf("timer %d after %v", t.id, t.after)
}

// notify queues a notice.
func (c *core) notify(n notice) { c.rd.Notices = append(c.rd.Notices, n) }

// report queues a report to the observer about contender en.
func (c *core) report(en *entry, r events.Report) {
	if c.cfg.Observer != nil {
		r.ID = en.id
		c.notify(notice{kind: noteReport, report: r})
	}
}
