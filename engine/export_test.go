package engine

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/core"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/future"
)

// What the simulator (sim_test.go, package engine_test) needs of the
// engine's inside: an engine whose seams it fills, a turn of its loop at a
// time, and the session events its simulated client reports.

// SimConn is the ZooKeeper client the simulator plays.
type SimConn = zkConn

// SimTimer is a timer on the simulator's clock.
type SimTimer = timer

// SimWorld is the outside world of a simulated engine; see runtime.
type SimWorld struct {
	Conn      SimConn
	NewID     func() string
	Goroutine func(f func())
	AfterFunc func(d time.Duration, f func()) SimTimer
	AfterDone func(ctx context.Context, f func()) (stop func() bool)
	CloseConn func()
	// Clock is the watchdog's monotonic clock.
	Clock func() time.Duration
}

// NewSimEngine makes an engine on w. Nothing runs until the simulator
// calls Turn.
func NewSimEngine(cfg Config, w SimWorld) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := newEngine(cfg)
	e.conn = w.Conn
	e.rt = runtime{newID: w.NewID, goroutine: w.Goroutine,
		afterFunc: w.AfterFunc, afterDone: w.AfterDone, closeConn: w.CloseConn}
	e.watchdog.clock, e.watchdog.afterFunc = w.Clock, w.AfterFunc
	return e, nil
}

// Turn runs one pass of the loop over every event queued; exited is true
// once the engine has shut down (it was closing and nothing was left).
func (e *Engine) Turn() (events int, exited bool) {
	batch := e.inbox.Drain(nil)
	return len(batch), e.turn(batch)
}

// Queued is the number of events waiting for the loop.
func (e *Engine) Queued() int { return e.inbox.Len() }

// Notify is the client's event callback: the simulated client calls it
// with each notification it reads, before it fires the channels.
func (e *Engine) Notify(ev zk.Event) { e.onZKEvent(ev) }

// Post queues an event for the loop, as the client's callbacks do.
func (e *Engine) Post(ev input.Event) { e.inbox.Put(ev) }

// BeginClose starts Close without waiting for the loop.
func (e *Engine) BeginClose() { e.closeOnce.Do(func() { e.post(&core.Close{}) }) }

// Handshake, Answered and SawZxid are what trackedConn reads off the wire.
func (e *Engine) Handshake(sent time.Duration, session int64, timeout time.Duration) {
	e.watchdog.Handshake(sent, session, int32(timeout/time.Millisecond))
}

func (e *Engine) Answered(sent time.Duration) { e.watchdog.Answered(sent) }

func (e *Engine) SawZxid(zxid int64) {
	if zxid > e.lastZxid.Load() {
		e.lastZxid.Store(zxid)
	}
}

// Trusted reports whether the watchdog trusts the session now.
func (e *Engine) Trusted() bool {
	e.watchdog.mu.Lock()
	defer e.watchdog.mu.Unlock()
	return !e.watchdog.lapsed
}

// Contenders is the number of contenders the loop keeps.
func (e *Engine) Contenders() int { return e.core.Contenders() }

// RunCallbacksInPlace has every future run its callbacks at once on the
// resolving goroutine, until restore is called: the simulator's one
// goroutine runs everything.
func RunCallbacksInPlace() (restore func()) { return future.RunCallbacksInPlace() }

// The token's encoding, for the tests that take a token apart.
const (
	TokenPassBits   = core.PassBits
	MaxCohortPasses = core.MaxCohortPasses
)

// OnLeader reports whether a connection of the engine is open to a server
// known to be the leader (or standalone), whose every answer moves the
// trust deadline.
func (e *Engine) OnLeader() bool { return e.servers.OnLeader() }
