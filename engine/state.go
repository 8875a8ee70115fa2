package engine

import (
	"context"
	"strconv"
	"sync"
)

// State is the engine's standing with ZooKeeper, for readiness probes and
// dashboards: whether a lease can be granted and held now.
type State int

const (
	// StateConnected: the session is connected and trusted: leases are
	// granted and held.
	StateConnected State = iota + 1
	// StateSuspended: the connection is down and the session may still
	// live. Held leases are suspended (Lease.Suspended), not lost; nothing
	// is granted until the engine reconnects.
	StateSuspended
	// StateExpired: there is no session: the server said it expired
	// (every held lease was lost, with ErrSessionExpired), or the first one
	// is not established yet. The engine is connecting; waiters queue
	// again under a new session.
	StateExpired
	// StateClosed: Close closed the session; the engine does nothing more.
	StateClosed
	// StateLapsed: no server answered the session for so long that it may
	// have expired (Config.LostMargin before the server could expire it):
	// every held lease is lost, with ErrLost, and nothing is granted. The
	// server has not said it expired, and it may live on: if a server
	// answers it again in time, the engine is connected again under the
	// same session; if the server says it expired, the state is
	// StateExpired. A lapse is not an expiry, and is counted apart
	// (SessionStats.Untrusted, not Expirations).
	StateLapsed
)

var stateNames = [...]string{StateConnected: "connected", StateSuspended: "suspended", StateExpired: "expired", StateClosed: "closed", StateLapsed: "lapsed"}

// String is the state's lower-case name, for logs and probes.
func (s State) String() string {
	if s <= 0 || int(s) >= len(stateNames) {
		return "State(" + strconv.Itoa(int(s)) + ")"
	}
	return stateNames[s]
}

// State is the engine's state now: as the loop last saw the session.
func (e *Engine) State() State { return e.or().states.current() }

// StateChanges follows the engine's state: the channel holds the latest
// state, at once the current one, and a follower that reads late skips
// the states in between but never reads an older one after a newer.
// After StateClosed, or once ctx ends, the channel is closed; so
//
//	for s := range eng.StateChanges(ctx) { ... }
//
// ends with StateClosed when the engine closes. It works whether or not
// any lock is held, and costs no goroutine: each call adds a channel the
// engine keeps until ctx ends or the engine closes.
// With a nil ctx (or on an engine Start did not return) it is closed at once.
func (e *Engine) StateChanges(ctx context.Context) <-chan State {
	return e.or().states.follow(ctx)
}

// stateWatch is the latest state and the channels that follow it. Each
// channel has room for one state, and set replaces what a follower has
// not read yet, so the loop never waits for a follower.
type stateWatch struct {
	mu        sync.Mutex
	state     State
	followers map[chan State]struct{}
}

func newStateWatch() *stateWatch {
	return &stateWatch{state: StateExpired, followers: make(map[chan State]struct{})}
}

func (w *stateWatch) current() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}

// set records s and hands it to every follower; StateClosed also closes
// their channels, for good.
func (w *stateWatch) set(s State) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == StateClosed || w.state == s {
		return
	}
	w.state = s
	for ch := range w.followers {
		replace(ch, s)
		if s == StateClosed {
			close(ch)
			delete(w.followers, ch)
		}
	}
}

func (w *stateWatch) follow(ctx context.Context) <-chan State {
	ch := make(chan State, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	ch <- w.state
	if w.state == StateClosed || ctx == nil || ctx.Err() != nil {
		close(ch)
		return ch
	}
	w.followers[ch] = struct{}{}
	context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.followers[ch]; ok {
			delete(w.followers, ch)
			close(ch)
		}
	})
	return ch
}

// replace puts s in ch in place of the state it holds, if any. Only the
// holder of stateWatch.mu sends, so after the drain there is room.
func replace(ch chan State, s State) {
	select {
	case <-ch:
	default:
	}
	ch <- s
}
