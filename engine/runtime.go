package engine

import (
	"cmp"
	"context"
	"log/slog"
	goruntime "runtime"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/core"
	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// The runtime: the loop goroutine that owns the core (internal/core),
// steps it through each event the inbox holds, and carries out what it
// decided.
// The core is deterministic given its events; the runtime reaches the
// world through the seams below: the ZooKeeper client, the goroutine each
// request runs on, timers, and context cancellation. Production fills them
// with the real thing (Start); the simulator (sim_test.go) fills them with
// a simulated world that it steps from one seed, single-threaded.

// zkConn is what the engine asks of its ZooKeeper client. *zk.Conn is the
// production one.
type zkConn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Delete(path string, version int32) error
	Multi(ops ...any) ([]zk.MultiResponse, error)
	Sync(path string) (string, error)
	Exists(path string) (bool, *zk.Stat, error)
	AddAuth(scheme string, auth []byte) error
	SessionID() int64
}

var _ zkConn = (*zk.Conn)(nil)

// timer is an armed timer: *time.Timer in production.
type timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// runtime is the engine's outside world but for the client itself.
type runtime struct {
	// newID makes a contender's protected id (nodename.NewID).
	newID func() string
	// goroutine runs one request, which blocks on the client, to its end.
	goroutine func(f func())
	// afterFunc runs f once d has passed, unless stopped first.
	afterFunc func(d time.Duration, f func()) timer
	// afterDone runs f once ctx is done, unless stop is called first.
	afterDone func(ctx context.Context, f func()) (stop func() bool)
	// closeConn closes the session and returns once the client's own
	// goroutines have exited.
	closeConn func()
}

// realAfterFunc is time.AfterFunc as a timer.
func realAfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

// stopTimer stops t, if one was armed.
func stopTimer(t timer) {
	if t != nil {
		t.Stop()
	}
}

// onZKEvent runs on the client's receive goroutine, before the client
// hands a notification to the channels it fires: it must never wait for
// the client. It queues the event for the loop; the inbox's lock is held
// across no request.
func (e *Engine) onZKEvent(ev zk.Event) {
	put := e.inbox.Put
	now := time.Now()
	switch ev.Type {
	case zk.EventSession:
		switch ev.State {
		case zk.StateHasSession:
			put(input.SessionChanged{State: input.Connected, SessionID: e.watchdog.sessionID(), At: now})
		case zk.StateDisconnected:
			put(input.SessionChanged{State: input.Disconnected, At: now})
		case zk.StateExpired:
			put(input.SessionChanged{State: input.Expired, At: now})
		}
	case zk.EventNodeDeleted:
		put(input.WatchFired{Type: input.NodeDeleted, Path: ev.Path})
	case zk.EventNodeDataChanged:
		put(input.WatchFired{Type: input.NodeDataChanged, Path: ev.Path})
	case zk.EventNodeCreated:
		put(input.WatchFired{Type: input.NodeCreated, Path: ev.Path})
	case zk.EventNodeChildrenChanged:
		put(input.WatchFired{Type: input.NodeChildrenChanged, Path: ev.Path})
	case zk.EventNotWatching:
		put(input.WatchFired{Type: input.NotWatching, Path: ev.Path})
	}
}

// loop is the one goroutine that steps the core.
func (e *Engine) loop() {
	defer close(e.loopDone)
	var batch []input.Event
	for {
		<-e.inbox.Wake()
		batch = e.inbox.Drain(batch)
		if e.turn(batch) {
			return
		}
		// Let the goroutines this turn woke run before the next turn. A
		// turn wakes its futures' callers, and the Go scheduler runs the
		// last one woken next, on this P, ahead of the others: a holder
		// passed the lock, which releases, and the loop again. On a hot
		// lock that chain would serve every queued caller before any
		// caller released earlier could queue again, and the cohort would
		// empty, each emptying a round trip through ZooKeeper. Yielded,
		// the callers woken queue again first (16 workers on one path: 13
		// to 15 times the cycles a second).
		goruntime.Gosched()
	}
}

// turn is one pass of the loop: it steps the core through a batch of
// events, carrying out what it decided after each, then ends the turn
// (group commit sends the batch's writes) and shuts the engine down once
// the core exits; true then.
func (e *Engine) turn(batch []input.Event) (exited bool) {
	for _, ev := range batch {
		e.step(ev)
		e.carryOut(e.core.Ready())
	}
	e.core.EndTurn()
	rd := e.core.Ready()
	e.carryOut(rd)
	if rd.Exit {
		e.shutdown()
		return true
	}
	return false
}

// step hands one event to the core. A user's acquisition takes its
// cancel group here, and its id from the core, in the order the loop
// takes them, and rides in the core as its Ref until resolved; the
// runtime keeps by that id what the later decisions are about (the
// lease, a release's future), before it carries them out.
func (e *Engine) step(ev input.Event) {
	if cmd, ok := ev.(input.Command); ok {
		switch cmd := cmd.Payload.(type) {
		case *acquireCmd:
			cmd.req.Cancel, cmd.req.Ref = e.cancels.Group(cmd.ctx), cmd
			e.core.Step(input.Command{Payload: &cmd.req})
			return
		case *releaseCmd:
			cmd.req.ID = cmd.lease.id
			e.releasing[cmd.req.ID] = cmd
			e.core.Step(input.Command{Payload: &cmd.req})
			return
		case *loopCall:
			cmd.f()
			cmd.ran = true
			close(cmd.done)
			return
		}
	}
	e.core.Step(ev)
}

// loopCall runs f on the loop, between two events: a view of the core
// for diagnostics and tests (see onLoop).
type loopCall struct {
	f    func()
	ran  bool
	done chan struct{}
}

// onLoop runs f on the loop and returns once it ran; false, and f not
// run, once the engine is closed.
func (e *Engine) onLoop(f func()) bool {
	c := &loopCall{f: f, done: make(chan struct{})}
	if !e.post(c) {
		return false
	}
	select {
	case <-c.done:
		return c.ran
	case <-e.loopDone:
		return false
	}
}

// carryOut does what the core decided, in order within each kind.
func (e *Engine) carryOut(rd core.Ready) {
	e.addCounts(rd.Counts)
	// Before the notices too: whoever a notice wakes reads the cohorts'
	// counts that led to it.
	e.cohortStats.store(e.core.CohortStats())
	for _, r := range rd.Logs {
		e.log.Log(context.Background(), slog.Level(r.Level), r.Msg, r.Args...)
	}
	for _, o := range rd.Requests {
		e.start(o)
	}
	for _, t := range rd.Timers {
		if t.Stop {
			if tm := e.timers[t.ID]; tm != nil {
				tm.Stop()
				delete(e.timers, t.ID)
			}
			continue
		}
		id := t.ID
		e.timers[id] = e.rt.afterFunc(t.After, func() { e.inbox.Put(input.TimerFired{ID: id}) })
	}
	for _, a := range rd.Contexts {
		if a.Stop {
			e.cancels.Drop(a.Group)
			continue
		}
		e.cancels.Follow(a.Group, e.rt.afterDone, func(group uint64, cause error) {
			e.post(&core.Cancel{Group: group, Cause: cause})
		})
	}
	for _, n := range rd.Notices {
		e.notice(n)
	}
	for _, ev := range rd.Loopback {
		e.inbox.Put(ev)
	}
	if rd.StateChanged && rd.State != core.StateClosed {
		e.states.set(stateOf(rd.State))
	}
	if rd.FirstSession {
		close(e.firstSession)
	}
}

// notice carries out one thing users see, on what the runtime keeps for
// the contender it names.
func (e *Engine) notice(n core.Notice) {
	switch n.Kind {
	case core.NoteAcquired:
		cmd := n.Ref.(*acquireCmd)
		if n.Err != nil {
			e.acquired(cmd, nil, n.Err)
			return
		}
		e.acquired(cmd, e.leases[n.ID], nil) // admitted as the core granted it
	case core.NoteReleased:
		r := e.releasing[n.ID]
		delete(e.releasing, n.ID)
		err := n.Err
		if n.FromLease {
			err = cmp.Or(r.lease.Err(), err)
		}
		e.released(r, err)
	case core.NoteReleaseRefused:
		r := e.releasing[n.ID]
		delete(e.releasing, n.ID)
		err := r.lease.Err()
		if err == nil {
			err = ErrNotHeld
		}
		e.released(r, err)
	case core.NoteLost:
		e.leases[n.ID].markLost(n.Err)
	case core.NoteEnded:
		e.leases[n.ID].end(n.Err)
	case core.NoteSuspended:
		e.leases[n.ID].setSuspended(true)
	case core.NoteResumed:
		e.leases[n.ID].setSuspended(false)
	case core.NoteRevoked:
		e.leases[n.ID].markRevoked()
	case core.NoteReport:
		if e.cfg.Observer != nil {
			r := n.Report
			r.Path = e.namespacePath(r.Path)
			e.cfg.Observer(r)
		}
	case core.NoteDropped:
		delete(e.leases, n.ID)
	}
}

// addCounts adds what the core counted to the engine's figures.
func (e *Engine) addCounts(c core.Counts) {
	if c == (core.Counts{}) {
		return
	}
	e.count.localWatches.Add(c.LocalWatches)
	e.count.predicted.Add(c.Predicted)
	e.gauges.reconnects.Add(c.Reconnects)
	e.gauges.disconnects.Add(c.Disconnects)
	e.gauges.expirations.Add(c.Expirations)
	e.gauges.untrusted.Add(c.Untrusted)
}

// watchdogAdmitter is the watchdog as the core asks it (see core.Admitter), on the
// loop goroutine: it maps contender ids to the leases the watchdog holds.
type watchdogAdmitter struct{ e *Engine }

// Admit makes the lease of a grant and has the watchdog hold it; the
// grant's notice hands it out.
func (t watchdogAdmitter) Admit(g core.Grant, session int64) bool {
	l := &Lease{eng: t.e, id: g.ID, path: g.Path, node: g.Node, token: g.Token<<core.PassBits | int64(g.Pass)}
	if g.Carrier != 0 {
		l.nodeLease = t.e.leases[g.Carrier]
	}
	if !t.e.watchdog.admit(l, session) {
		return false
	}
	t.e.leases[g.ID] = l
	return true
}

func (t watchdogAdmitter) Forget(id uint64) {
	if l := t.e.leases[id]; l != nil {
		t.e.watchdog.forget(l)
	}
}

func (t watchdogAdmitter) Follows(session int64) bool { return t.e.watchdog.follows(session) }

func (t watchdogAdmitter) Vouches(id uint64) (bool, time.Duration) {
	l := t.e.leases[id]
	if l == nil {
		return false, t.e.watchdog.clock()
	}
	return t.e.watchdog.vouches(l)
}

// shutdown closes the session; the loop then exits.
func (e *Engine) shutdown() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.watchdog.stop()
	for id, t := range e.timers {
		t.Stop()
		delete(e.timers, id)
	}
	e.cancels.DropAll()
	e.rt.closeConn()
	e.states.set(StateClosed)
	// Commands posted before closed was set still wait in the inbox.
	for _, ev := range e.inbox.Drain(nil) {
		cmd, ok := ev.(input.Command)
		if !ok {
			continue
		}
		switch cmd := cmd.Payload.(type) {
		case *acquireCmd:
			e.acquired(cmd, nil, ErrClosed)
		case *releaseCmd:
			e.released(cmd, cmd.lease.Err())
		case *loopCall:
			close(cmd.done) // not run: the core is gone
		}
	}
}

// stateOf is the engine's state the core derived.
func stateOf(s core.State) State {
	switch s {
	case core.StateConnected:
		return StateConnected
	case core.StateSuspended:
		return StateSuspended
	case core.StateLapsed:
		return StateLapsed
	case core.StateClosed:
		return StateClosed
	}
	return StateExpired
}
