package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
)

// runRevoke asks the holders of the lock at PATH, or its contender NODE, to
// let go: it writes Curator's revocation request into their nodes. A
// revocable holder (turnstile's WithRevocation, Curator's makeRevocable,
// kazoo following Curator's convention) sees it and releases; others are
// not told. NODE is a node's name, or its path.
func runRevoke(ctx context.Context, s *session, _ options, args []string, out io.Writer) error {
	lockPath := args[0]
	v, found, _, err := newReader(s, false).read(ctx, s.full(lockPath))
	if err != nil {
		return err
	}
	if !found {
		return noneError("no lock at %s", lockPath)
	}
	targets := v.Holders
	if len(args) == 2 {
		n, ok := findNode(v, args[1])
		if !ok {
			return noneError("no node %s at %s", args[1], lockPath)
		}
		targets = []nodeView{n}
	}
	if len(targets) == 0 {
		return noneError("nothing held at %s", lockPath)
	}
	asked := 0
	for _, n := range targets {
		_, err := call(ctx, s, func() (*zk.Stat, error) {
			return s.conn.Set(s.full(n.Node), engine.RevokeData, -1)
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue // released meanwhile
		case err != nil:
			return fmt.Errorf("revoke %s: %w", n.Node, err)
		}
		asked++
		fmt.Fprintf(out, "revocation requested: %s\n", n.Node)
	}
	if asked == 0 {
		return noneError("nothing held at %s: released meanwhile", lockPath)
	}
	return nil
}

// findNode finds a contender of v by its name or its path.
func findNode(v lockView, node string) (nodeView, bool) {
	for _, list := range [][]nodeView{v.Holders, v.Waiters} {
		for _, n := range list {
			if n.Name == node || n.Node == node || n.Node == path.Join(v.Path, node) {
				return n, true
			}
		}
	}
	return nodeView{}, false
}
