package main

import (
	"bytes"
	"context"
	"errors"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
)

// scanner lists lock nodes under the lock root with a session of its own,
// on the servers directly (never through a fault proxy).
type scanner struct {
	conn     *zkConn
	requests int64 // requests the scanner sent, to subtract from mntr's count
}

func openScanner(ctx context.Context, servers []string) (*scanner, error) {
	c, err := dialZK(ctx, servers, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &scanner{conn: c}, nil
}

func (s *scanner) Close() { s.conn.Close() }

func (s *scanner) sent() int64 { return s.requests }

// isLockNode: a sequential node (its name ends in ZooKeeper's 10-digit
// counter): every lock recipe's contender node is one.
func isLockNode(name string) bool {
	if len(name) < 10 {
		return false
	}
	for _, r := range name[len(name)-10:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// ours lists the lock nodes under root whose data carries marker, i.e.
// nodes this run created (peers' nodes on a shared path are not counted).
func (s *scanner) ours(root string, marker []byte) ([]string, error) {
	c := s.conn.conn
	s.requests++
	if _, err := c.Sync(root); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	var found []string
	var walk func(p string) error
	walk = func(p string) error {
		s.requests++
		kids, _, err := c.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			child := path.Join(p, k)
			if isLockNode(k) {
				s.requests++
				data, _, err := c.Get(child)
				if errors.Is(err, zk.ErrNoNode) {
					continue
				}
				if err != nil {
					return err
				}
				if bytes.Contains(data, marker) {
					found = append(found, child)
				}
				continue
			}
			if err := walk(child); err != nil {
				return err
			}
		}
		return nil
	}
	err := walk(root)
	return found, err
}

// settle polls ours until none is left or wait has passed, and returns what
// is left then: nodes of a session that could not close cleanly go when the
// server expires it, which takes up to a session timeout.
func (s *scanner) settle(ctx context.Context, root string, marker []byte, wait time.Duration) ([]string, error) {
	deadline := time.Now().Add(wait)
	for {
		left, err := s.ours(root, marker)
		if err == nil && len(left) == 0 {
			return nil, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return left, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// countChildren sums the children of paths (for the waiters plateau).
func (s *scanner) countChildren(paths []string) (int, error) {
	n := 0
	for _, p := range paths {
		s.requests++
		kids, _, err := s.conn.conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return n, err
		}
		n += len(kids)
	}
	return n, nil
}
