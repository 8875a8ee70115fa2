package engine

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// The runtime: the loop goroutine that owns the core (core.go), steps it
// through each event the inbox holds, and carries out what it decided.
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

// onZKEvent runs on the client's receive goroutine: it must never block.
func (e *Engine) onZKEvent(ev zk.Event) {
	now := time.Now()
	switch ev.Type {
	case zk.EventSession:
		switch ev.State {
		case zk.StateHasSession:
			e.inbox.Put(input.SessionChanged{State: input.Connected, SessionID: e.trust.sessionID(), At: now})
		case zk.StateDisconnected:
			e.inbox.Put(input.SessionChanged{State: input.Disconnected, At: now})
		case zk.StateExpired:
			e.inbox.Put(input.SessionChanged{State: input.Expired, At: now})
		}
	case zk.EventNodeDeleted:
		e.inbox.Put(input.WatchFired{Type: input.NodeDeleted, Path: ev.Path})
	case zk.EventNodeDataChanged:
		e.inbox.Put(input.WatchFired{Type: input.NodeDataChanged, Path: ev.Path})
	case zk.EventNodeCreated:
		e.inbox.Put(input.WatchFired{Type: input.NodeCreated, Path: ev.Path})
	case zk.EventNodeChildrenChanged:
		e.inbox.Put(input.WatchFired{Type: input.NodeChildrenChanged, Path: ev.Path})
	case zk.EventNotWatching:
		e.inbox.Put(input.WatchFired{Type: input.NotWatching, Path: ev.Path})
	}
}

// loop is the one goroutine that steps the core.
func (e *Engine) loop() {
	defer close(e.loopDone)
	var batch []input.Event
	for {
		<-e.inbox.Ready()
		batch = e.inbox.Drain(batch)
		if e.turn(batch) {
			return
		}
	}
}

// turn is one pass of the loop: it steps the core through a batch of
// events, carrying out what it decided after each, then ends the turn
// (group commit sends the batch's writes) and shuts the engine down once
// the core exits; true then.
func (e *Engine) turn(batch []input.Event) (exited bool) {
	for _, ev := range batch {
		e.core.step(ev)
		e.carryOut(e.core.ready())
	}
	e.core.endTurn()
	rd := e.core.ready()
	if rd.Exit {
		e.core.stopTimers()
		stops := e.core.ready()
		rd.Timers = append(rd.Timers, stops.Timers...)
	}
	e.carryOut(rd)
	if rd.Exit {
		e.shutdown()
		return true
	}
	return false
}

// carryOut does what the core decided, in order within each kind.
func (e *Engine) carryOut(rd ready) {
	for _, o := range rd.Requests {
		e.start(o)
	}
	for _, t := range rd.Timers {
		if t.stop {
			if tm := e.timers[t.id]; tm != nil {
				tm.Stop()
				delete(e.timers, t.id)
			}
			continue
		}
		id := t.id
		e.timers[id] = e.rt.afterFunc(t.after, func() { e.inbox.Put(input.TimerFired{ID: id}) })
	}
	for _, a := range rd.Contexts {
		if a.stop {
			if stop := e.contexts[a.done]; stop != nil {
				stop()
				delete(e.contexts, a.done)
			}
			continue
		}
		ctx, done := a.ctx, a.done
		e.contexts[done] = e.rt.afterDone(ctx, func() { e.post(cancelCmd{done: done, cause: context.Cause(ctx)}) })
	}
	for _, n := range rd.Notices {
		e.notice(n)
	}
	for _, ev := range rd.Loopback {
		e.inbox.Put(ev)
	}
	if rd.StateChanged && rd.State != StateClosed {
		e.states.set(rd.State)
	}
	if rd.FirstSession {
		close(e.ready)
	}
}

// notice carries out one thing users see.
func (e *Engine) notice(n notice) {
	switch n.kind {
	case noteAcquired:
		n.acquired.resolve(n.lease, n.err)
	case noteReleased:
		err := n.err
		if n.fromLease {
			err = n.lease.Err()
		}
		n.released.resolve(struct{}{}, err)
	case noteReleaseRefused:
		err := n.lease.Err()
		if err == nil {
			err = ErrNotHeld
		}
		n.released.resolve(struct{}{}, err)
	case noteLost:
		n.lease.markLost(n.err)
	case noteEnded:
		n.lease.end(n.err)
	case noteSuspended:
		n.lease.setSuspended(true)
	case noteResumed:
		n.lease.setSuspended(false)
	case noteRevoked:
		n.lease.markRevoked()
	case noteReport:
		if e.cfg.Observer != nil {
			r := n.report
			r.Path = e.namespacePath(r.Path)
			e.cfg.Observer(r)
		}
	}
}

// shutdown closes the session; the loop then exits.
func (e *Engine) shutdown() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.trust.stop()
	for id, t := range e.timers {
		t.Stop()
		delete(e.timers, id)
	}
	for done, stop := range e.contexts {
		stop()
		delete(e.contexts, done)
	}
	e.rt.closeConn()
	e.states.set(StateClosed)
	// Commands posted before closed was set still wait in the inbox.
	for _, ev := range e.inbox.Drain(nil) {
		cmd, ok := ev.(input.Command)
		if !ok {
			continue
		}
		switch cmd := cmd.Payload.(type) {
		case acquireCmd:
			cmd.fut.resolve(nil, ErrClosed)
		case releaseCmd:
			cmd.fut.resolve(struct{}{}, cmd.lease.Err())
		}
	}
}
