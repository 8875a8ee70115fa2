package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Guarded sends ops (*zk.CreateRequest, *zk.SetDataRequest,
// *zk.DeleteRequest, *zk.CheckVersionRequest, with paths relative to
// Config.Root) to ZooKeeper as one multi on the engine's own session, the
// first op of which checks that the lease's node still exists: the writes
// are applied only while the lock is held, at the point of ZooKeeper's own
// order where they land, whatever a holder stalled past its session
// believes. It returns the responses to ops, in order.
//
// A node's name carries its contender's unique id, so the node's existence
// proves that this lease still holds it: another client is granted the
// lock only once the node is deleted, and a write that ZooKeeper ordered
// before that deletion precedes every write of the next holder. The check
// takes any version of the node, since a revocation request writes the
// node's data. A lease passed inside a cohort checks its carrier's node
// (Node), which the engine's session holds for every pass of the grant.
//
// A refused check fails with an error wrapping ErrLost (ErrNotHeld when
// the lease was released), and nothing of ops is applied. A lease already
// lost or released fails at once, without a request. When another op
// fails, the multi is not applied either, and the error wraps that op's
// (ErrNoNode for a missing node). Any other error (the connection lost
// with the request in flight, ctx ended) leaves the outcome unknown.
func (l *Lease) Guarded(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if l == nil {
		return nil, errNilGuarded
	}
	if l.unmade() {
		return nil, errNilLeaseOf
	}
	if err := l.guardState(); err != nil {
		return nil, err
	}
	e := l.eng
	reqs := make([]any, 0, len(ops)+1)
	reqs = append(reqs, &zk.CheckVersionRequest{Path: l.node, Version: -1})
	for i, op := range ops {
		r, err := e.guardedOp(op)
		if err != nil {
			return nil, fmt.Errorf("%w: guarded op %d: %w", ErrInvalidRequest, i, err)
		}
		reqs = append(reqs, r)
	}
	res, err := direct(ctx, e, func() ([]zk.MultiResponse, error) { return e.conn.Multi(reqs...) })
	if len(res) == len(reqs) {
		if res[0].Error != nil {
			if errors.Is(res[0].Error, zk.ErrNoNode) {
				if l.releasing.Load() {
					return nil, fmt.Errorf("%w: guarded write refused: node %s is gone", ErrNotHeld, l.Node())
				}
				return nil, fmt.Errorf("%w: guarded write refused: node %s is gone", ErrLost, l.Node())
			}
			return nil, fmt.Errorf("turnstile: guarded write: the lease's check: %w", zkErr(res[0].Error))
		}
		out := res[1:]
		for i := range out {
			if out[i].String != "" {
				out[i].String = e.namespacePath(out[i].String)
			}
		}
		// The ops ahead of a failed one answer no error, those after it
		// a code of their own: the first error is the one that failed.
		for i, r := range out {
			if r.Error != nil {
				return out, fmt.Errorf("turnstile: guarded write: op %d: %w", i, zkErr(r.Error))
			}
		}
		if err != nil {
			return out, fmt.Errorf("turnstile: guarded write: %w", zkErr(err))
		}
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("turnstile: guarded write: %w", err)
	}
	return nil, fmt.Errorf("turnstile: guarded write: %d responses to %d ops", len(res), len(reqs))
}

var errNilGuarded = fmt.Errorf("%w: Guarded on a nil *engine.Lease", ErrInvalidRequest)

// guardState is why a guarded write cannot be sent at all: the lease was
// released, or is lost.
func (l *Lease) guardState() error {
	if l.releasing.Load() {
		return ErrNotHeld
	}
	return l.Err()
}

// guardedOp is a copy of op with its path on the server.
func (e *Engine) guardedOp(op any) (any, error) {
	var p *string
	switch o := op.(type) {
	case *zk.CreateRequest:
		c := *o
		op, p = &c, &c.Path
	case *zk.SetDataRequest:
		c := *o
		op, p = &c, &c.Path
	case *zk.DeleteRequest:
		c := *o
		op, p = &c, &c.Path
	case *zk.CheckVersionRequest:
		c := *o
		op, p = &c, &c.Path
	default:
		return nil, fmt.Errorf("unsupported op %T", op)
	}
	full, err := e.serverPath(*p)
	if err != nil {
		return nil, err
	}
	*p = full
	return op, nil
}
