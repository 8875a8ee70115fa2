package main

import (
	"context"
	"io"
	"path"
	"slices"

	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// runLocks prints every lock under PATH (default /): the lock at PATH
// itself, and those below it.
func runLocks(ctx context.Context, s *session, o options, args []string, out io.Writer) error {
	top := "/"
	if len(args) > 0 {
		top = args[0]
	}
	r := newReader(s, false)
	locks := []lockView{}
	err := r.walk(ctx, s.full(top), func(v lockView) { locks = append(locks, v) })
	if err != nil {
		return err
	}
	if err := printLocks(out, o.json, locks); err != nil {
		return err
	}
	if len(locks) == 0 {
		return noneError("no locks under %s", top)
	}
	return nil
}

// runHolders prints the holders of the lock at PATH.
func runHolders(ctx context.Context, s *session, o options, args []string, out io.Writer) error {
	v, found, _, err := newReader(s, false).read(ctx, s.full(args[0]))
	if err != nil {
		return err
	}
	if v.Holders == nil {
		v.Holders = []nodeView{} // JSON: an empty list, not null
	}
	if err := printHolders(out, o.json, v.Holders); err != nil {
		return err
	}
	switch {
	case !found:
		return noneError("no lock at %s", args[0])
	case len(v.Holders) == 0:
		return noneError("nothing held at %s", args[0])
	}
	return nil
}

// walk visits the lock at full and every lock below it, in name order. It
// does not descend into lock nodes and pins (ephemeral: they have no children) nor
// into a semaphore's leases/ and locks/, which are read as part of it.
// /zookeeper is the server's own.
func (r *reader) walk(ctx context.Context, full string, visit func(lockView)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v, isLock, children, err := r.read(ctx, full)
	if err != nil {
		return err
	}
	if isLock {
		visit(v)
	}
	slices.Sort(children)
	for _, c := range children {
		if _, ok := queue.Parse(c); ok || nodename.IsPin(c) {
			continue // a lock node, or an engine's pin: neither has children
		}
		if v.Recipe == recipeSemaphore && (c == "leases" || c == "locks") {
			continue
		}
		child := path.Join(full, c)
		if child == "/zookeeper" {
			continue
		}
		if err := r.walk(ctx, child, visit); err != nil {
			return err
		}
	}
	return nil
}
