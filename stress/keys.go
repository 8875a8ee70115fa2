package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// The keys workload: each worker's every cycle locks a path never used
// before, the way a scheduler locks a job id once. Worker w's cycle n locks
// <prefix>-<w>/<n>, where prefix is <lock-root>/keys/<pid>.<run>. The
// parents <prefix>-<w> are made before the run, unmeasured, so that every
// impl's cycle pays for exactly one new path, the key, and no listing in
// the run grows past a worker's own keys (a single parent of every key
// would outgrow ZooKeeper's 1 MiB reply within seconds).

// keysPrefix is the prefix of run idx's keys.
func keysPrefix(root string, idx int) string {
	return fmt.Sprintf("%s/keys/%d.%d", root, os.Getpid(), idx)
}

// keysWorkerDir is the parent of worker w's keys.
func keysWorkerDir(prefix string, w int) string { return fmt.Sprintf("%s-%d", prefix, w) }

// keyPath is worker w's n-th key.
func keyPath(prefix string, w int, n int64) string { return fmt.Sprintf("%s-%d/%d", prefix, w, n) }

// reapEvery is how often the embedded servers of a keys run look for
// empty containers to remove (ZooKeeper's default is a minute, and at most
// 10,000 a minute): a client cannot tell a container from a persistent
// node (both report an ephemeralOwner of 0), so the harness lets the server
// reap, and the keys that outlast a few of its sweeps are the ones left
// forever.
const reapEvery = time.Second

// reaperFlags are the embedded servers' JVM flags for reapEvery.
var reaperFlags = []string{
	fmt.Sprintf("-Dznode.container.checkIntervalMs=%d", reapEvery.Milliseconds()),
	"-Dznode.container.maxPerMinute=100000000",
}

// prepareKeys makes the run's worker parents, persistent, and their
// ancestors.
func prepareKeys(conn *zk.Conn, prefix string, workers int) error {
	p := ""
	for _, seg := range strings.Split(strings.TrimPrefix(path.Dir(prefix), "/"), "/") {
		p += "/" + seg
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("keys: create %s: %w", p, err)
		}
	}
	for w := range workers {
		d := keysWorkerDir(prefix, w)
		if _, err := conn.Create(d, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("keys: create %s: %w", d, err)
		}
	}
	return nil
}

// prepareLockPaths makes dir/0 .. dir/<workers-1> and their ancestors as
// persistent nodes, those already there kept.
func prepareLockPaths(conn *zk.Conn, dir string, workers int) error {
	p := ""
	for _, seg := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		p += "/" + seg
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("lock paths: create %s: %w", p, err)
		}
	}
	for w := range workers {
		d := fmt.Sprintf("%s/%d", dir, w)
		if _, err := conn.Create(d, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("lock paths: create %s: %w", d, err)
		}
	}
	return nil
}

// keysScanner looks for one keys run's lock nodes under its keys only (a
// walk of the whole lock root would list every key of every run), several
// requests in flight at once.
type keysScanner struct {
	*scanner
	prefix  string
	workers int
}

// scanParallel bounds the scan's requests in flight.
const scanParallel = 32

// keysFound is one pass over a run's keys.
type keysFound struct {
	locks []string // lock nodes carrying the marker (nil marker: any)
	keys  int
}

func (k *keysScanner) pass(marker []byte) (keysFound, error) {
	c := k.conn.conn
	var sent atomic.Int64
	defer func() { k.requests += sent.Load() }()
	var (
		mu    sync.Mutex
		found keysFound
		errs  []error
	)
	sem := make(chan struct{}, scanParallel)
	var wg sync.WaitGroup
	for w := range k.workers {
		dir := keysWorkerDir(k.prefix, w)
		sent.Add(1)
		kids, _, err := c.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return found, err
		}
		for _, kid := range kids {
			key := dir + "/" + kid
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				locks, err := k.key(c, key, marker, &sent)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				found.keys++
				found.locks = append(found.locks, locks...)
			})
		}
	}
	wg.Wait()
	return found, errors.Join(errs...)
}

// key reads one key's lock nodes carrying marker.
func (k *keysScanner) key(c *zk.Conn, key string, marker []byte, sent *atomic.Int64) (locks []string, err error) {
	sent.Add(1)
	ok, st, err := c.Exists(key)
	if err != nil || !ok || st.NumChildren == 0 {
		return nil, err
	}
	sent.Add(1)
	kids, _, err := c.Children(key)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, kid := range kids {
		if !isLockNode(kid) {
			continue
		}
		sent.Add(1)
		data, _, err := c.Get(key + "/" + kid)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return locks, err
		}
		if marker == nil || bytes.Contains(data, marker) {
			locks = append(locks, key+"/"+kid)
		}
	}
	return locks, nil
}

// settle is scanner.settle over the run's keys; root is not walked.
func (k *keysScanner) settle(ctx context.Context, _ string, marker []byte, wait time.Duration) ([]string, error) {
	deadline := time.Now().Add(wait)
	for {
		f, err := k.pass(marker)
		if err == nil && len(f.locks) == 0 {
			return nil, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return f.locks, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// countKeys is how many of the run's keys exist.
func (k *keysScanner) countKeys() (int, error) {
	n := 0
	for w := range k.workers {
		k.requests++
		_, st, err := k.conn.conn.Get(keysWorkerDir(k.prefix, w))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return n, err
		}
		n += int(st.NumChildren)
	}
	return n, nil
}

// leftForever waits, once the run's client has gone, while the server
// reaps the run's empty containers, until no key is left or the count has
// not moved for three sweeps, and returns the keys left then: persistent
// nodes (or containers that never had a child, which the server keeps).
func (k *keysScanner) leftForever(ctx context.Context, sweep time.Duration) (int, error) {
	last, since := -1, time.Now()
	for {
		n, err := k.countKeys()
		if err != nil || n == 0 || ctx.Err() != nil {
			return n, err
		}
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > 3*sweep {
			return n, nil
		}
		time.Sleep(sweep / 4)
	}
}

// removeKeys deletes what the run left under its keys (containers the
// server would reap in its own time, persistent keys it never would, and
// the workers' parents), so that later runs and scans do not meet them.
func (k *keysScanner) removeKeys() error {
	c := k.conn.conn
	var errs []error
	for w := range k.workers {
		dir := keysWorkerDir(k.prefix, w)
		kids, _, err := c.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		const batch = 500
		for i := 0; i < len(kids); i += batch {
			var ops []any
			for _, kid := range kids[i:min(i+batch, len(kids))] {
				ops = append(ops, &zk.DeleteRequest{Path: dir + "/" + kid, Version: -1})
			}
			if _, err := c.Multi(ops...); err != nil {
				// One key of the batch went meanwhile (the server reaps
				// empty containers) or has a child: one by one.
				for _, op := range ops {
					if err := deleteTree(c, op.(*zk.DeleteRequest).Path); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
		if err := c.Delete(dir, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteTree deletes p and everything under it; a node already gone is
// no error.
func deleteTree(c *zk.Conn, p string) error {
	kids, _, err := c.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, kid := range kids {
		if err := deleteTree(c, p+"/"+kid); err != nil {
			return err
		}
	}
	if err := c.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}
