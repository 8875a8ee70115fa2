// Package election is leader election on ZooKeeper, served asynchronously
// by a turnstile engine.Engine like the locks of package lock: a Campaign
// returns a future at once, thousands of candidates and elections share the
// engine's one loop goroutine, and a leader learns from Lost() that it may
// no longer lead before another candidate can be elected.
//
// Candidates follow Apache Curator's LeaderLatch on the wire: each creates
// an ephemeral sequential node "_c_<uuid>-latch-<seq>" under the election
// path, holding its value (Curator's participant id); the lowest node leads,
// and every other candidate watches the candidate just ahead of it. So Go
// candidates and Java LeaderLatch candidates can share one election. A
// leader may change its value during its term (Leadership.Proclaim):
// observers receive it again with the new value.
//
// A Leadership is a lease of the engine: its fencing token grows with every
// leader of the election, across sessions and reconnects, and its Lost
// channel closes as soon as the session can no longer be trusted. Faults are
// those of the locks: a connection loss keeps every candidacy (a leader is
// Suspended, and Lost only when the session may have expired); a session
// expiry ends a leadership (Lost closes) and puts every candidate that was
// not yet elected at the back of the election under the new session, or
// fails it with engine.ErrSessionExpired (WithFailOnExpiry, or the engine's
// Config.FailOnExpiry). Cancelling a campaign's context before it is elected
// removes its node.
package election

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/turnstile-go/turnstile/internal/future"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/seam"
	"github.com/turnstile-go/turnstile/queue"
)

// ErrNoLeader: the election has no candidate, so no leader. The other
// errors an election returns are the engine's (engine.ErrLost,
// engine.ErrClosed, ...), which errors.Is finds in a wrapped error.
var ErrNoLeader = errors.New("turnstile: election has no leader")

// errNilElection is what a call on a nil *Election returns: a pointer New
// did not make, which names no election. (A nil engine or context is
// reported by the engine, with the same sentinel.)
var errNilElection = fmt.Errorf("%w: nil *election.Election, or one New did not make", engine.ErrInvalidRequest)

// unmade reports an Election New did not return: nil, or a zero Election
// (no runtime to read the election with).
func (e *Election) unmade() bool { return e == nil || e.opts.rt.Children == nil || e.obs.el == nil }

// Election is one leader election: the candidates under one ZooKeeper path.
// Its methods are safe for concurrent use. Use one Election per path per
// engine: its observers share one watch.
type Election struct {
	eng  *engine.Engine
	path string
	opts options
	obs  observers
}

// Option configures an Election.
type Option func(*options)

type options struct {
	failOnExpiry bool
	rt           seam.ElectionRuntime
}

// WithFailOnExpiry makes a candidate that is not yet elected when the
// session expires fail with engine.ErrSessionExpired, instead of joining the
// election again, at the back, under the new session.
func WithFailOnExpiry() Option { return func(o *options) { o.failOnExpiry = true } }

// New returns the election on path. It does no I/O: an invalid path is
// reported by the first Campaign or Leader, with engine.ErrInvalidPath.
func New(eng *engine.Engine, path string, opts ...Option) *Election {
	e := &Election{eng: eng, path: path}
	for _, opt := range opts {
		if opt != nil { // a nil option sets nothing
			opt(&e.opts)
		}
	}
	e.opts.rt = runtimeOf(eng)
	e.obs.el = e
	return e
}

// Campaign enters a candidate with value (its participant id, written as
// its node's data) and returns at once. The future resolves with the
// Leadership once this candidate leads, or with an error: context.Cause(ctx)
// when ctx ends first (the candidate's node is then removed), engine.ErrClosed, or
// engine.ErrSessionExpired (see WithFailOnExpiry). Every Campaign is a candidate
// of its own, whatever its value, and joins at the back of the election:
// a leader that resigns and campaigns again waits for every candidate that
// was there before it.
func (e *Election) Campaign(ctx context.Context, value []byte) *engine.Future[*Leadership] {
	value = bytes.Clone(value)
	fut, resolve := future.New[*Leadership]()
	f := (*engine.Future[*Leadership])(fut)
	if e.unmade() {
		resolve(nil, errNilElection)
		return f
	}
	req := engine.Request{
		Path: e.path, Kind: queue.KindLatch, Decide: decideCandidate, Data: value,
		FailOnExpiry: e.opts.failOnExpiry,
	}
	e.eng.Acquire(ctx, req).Then(func(l *engine.Lease, err error) {
		if err != nil {
			resolve(nil, err)
			return
		}
		resolve(&Leadership{Lease: l, el: e, value: value}, nil)
	})
	return f
}

// Leader is a leader of an election, as an observer sees it.
type Leader struct {
	Node  string // the full path of the leader's node
	Value []byte // the node's data: the value it campaigned with
}

// Leader reads who leads now, whichever client it is: ErrNoLeader when
// the election has no candidate. The answer is a snapshot, stale at once.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if e.unmade() {
		return Leader{}, errNilElection
	}
	for {
		children, err := e.opts.rt.Children(ctx, e.path)
		switch {
		case errors.Is(err, engine.ErrNoNode):
			return Leader{}, ErrNoLeader
		case err != nil:
			return Leader{}, err
		}
		nodes := queue.NewListing(children).Nodes()
		leader, _ := leaderOf(nodes)
		if leader == "" {
			return Leader{}, ErrNoLeader
		}
		node := e.path + "/" + leader
		value, err := e.opts.rt.Data(ctx, node)
		switch {
		case errors.Is(err, engine.ErrNoNode):
			continue // its term ended between the two reads: look again
		case err != nil:
			return Leader{}, err
		}
		return Leader{Node: node, Value: value}, nil
	}
}
