package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/turnstile-go/turnstile/engine"
)

// waitersResult is what the waiters workload measures besides the common
// fields.
type waitersResult struct {
	waiters  int
	plateau  bool // every waiter was seen queued (nodes and watches)
	base, at memSnapshot
	drain    time.Duration
	stuck    int
	notes    []string
}

// runWaiters: K paths each held while W waiters queue behind its holder;
// measure memory and goroutines with all queued, then release the holders
// and time the drain (every waiter granted, held for -hold, released).
//
// Waiters of an impl with an asyncLocker (turnstile) are queued with no
// goroutine of the harness's; an impl without one (gozk) gets the goroutine
// per waiter its API needs.
func (r *runState) runWaiters(ctx context.Context, sc *scanner, cl *cluster) (*waitersResult, error) {
	K, W := r.cfg.Paths, r.cfg.Workers
	res := &waitersResult{waiters: K * W}
	lockers := make([]locker, K)
	paths := make([]string, K)
	for k := range K {
		paths[k] = r.lockPath(k)
		l, err := r.cl.Mutex(paths[k])
		if err != nil {
			return nil, err
		}
		lockers[k] = l
	}

	// 1. One holder per path.
	holders := make([]held, K)
	holdings := make([]*holding, K)
	for k := range K {
		t0 := time.Now()
		h, err := lockers[k].Acquire(r.stop)
		if err != nil {
			for j := range k {
				r.check.leave(holdings[j])
				holders[j].Release(context.Background())
			}
			return nil, fmt.Errorf("holder of %s: %w", paths[k], err)
		}
		r.lat.record(time.Since(t0))
		holders[k] = h
		holdings[k] = r.check.enter(paths[k], r.witnessBase(k), k, kMutex, h)
	}
	res.base = takeMem()
	watchCount := cl.watchCount
	if wc, ok := r.cl.(waitCounter); ok {
		watchCount = func(context.Context) (int64, bool) { return wc.Waits(), true }
	}
	watches0, _ := watchCount(ctx)

	// 2. W waiters behind each. The per-waiter state the harness keeps is a
	// small closure (the shared waiterSet, two ints and a flag), so that the
	// heap per waiter measures the library, not the harness.
	rng := rand.New(rand.NewPCG(r.seed, 0))
	ws := &waiterSet{r: r, paths: paths, allDone: make(chan struct{})}
	ws.remaining.Store(int64(K * W))
	var cancels []context.CancelFunc
	var cancelAfter []time.Duration
	for k := range K {
		for j := range W {
			actx := r.stop
			planned := false
			if r.cfg.Faults.has("cancel") && rng.Float64() < r.cfg.CancelRatio {
				var cancel context.CancelFunc
				actx, cancel = context.WithCancel(r.stop)
				cancels = append(cancels, cancel)
				cancelAfter = append(cancelAfter, time.Duration(rng.Int64N(int64(r.cfg.CancelMax)+1)))
				planned = true
			}
			cb := func(h held, err error) { ws.granted(k, j, planned, h, err) }
			if al, ok := lockers[k].(asyncLocker); ok {
				al.AcquireAsync(actx, cb)
			} else {
				go func() { cb(lockers[k].Acquire(actx)) }()
			}
		}
	}

	// 3. The plateau: every waiter's node exists and its watch is set, or,
	// for waiters queued inside the client, it counts them.
	nodes := K * (W + 1)
	if nc, ok := r.cl.(nodeCounter); ok {
		nodes = K * nc.NodesFor(W)
	}
	var note string
	res.plateau, note = r.waitPlateau(ctx, sc, watchCount, paths, nodes, watches0+int64(K*W), ws.allDone)
	if note != "" {
		res.notes = append(res.notes, note)
	}
	res.at = takeMem()
	for k := range K {
		if closedChan(holders[k].Lost()) {
			res.notes = append(res.notes, "holders lost their leases before the drain (a fault), so waiters were granted early: the drain figures do not measure a drain")
			break
		}
	}

	// 4. Drain.
	start := time.Now()
	ws.drainStart.Store(start.UnixNano())
	for i, c := range cancels {
		time.AfterFunc(cancelAfter[i], c)
	}
	for k := range K {
		r.check.leave(holdings[k])
		rctx, cancel := context.WithTimeout(context.Background(), r.releaseTimeout())
		err := holders[k].Release(rctx)
		switch {
		case closedChan(holders[k].Lost()) || errors.Is(err, engine.ErrLost) || errors.Is(err, errHoldExpired):
			r.lost.Add(1)
		case err != nil:
			r.noteErr("release holder "+paths[k], err)
		}
		cancel()
	}
	select {
	case <-ws.allDone:
	case <-r.stop.Done():
		// Interrupted or past the hard deadline: the queued acquisitions end
		// with the stop context; wait a little for their callbacks.
		t := time.NewTimer(r.releaseTimeout())
		select {
		case <-ws.allDone:
		case <-t.C:
		}
		t.Stop()
	}
	res.drain = time.Since(start)
	res.stuck = int(ws.remaining.Load())
	for _, c := range cancels {
		c()
	}
	return res, nil
}

// waitPlateau waits until the servers hold nodes (children of paths) for
// every waiter, and every waiter waits: by the client's own count when it
// keeps one, else by the servers' watches (mntr zk_watch_count, all
// members); at most a minute plus 10 ms per waiter.
func (r *runState) waitPlateau(ctx context.Context, sc *scanner, watchCount func(context.Context) (int64, bool), paths []string, nodes int, watches int64, allDone <-chan struct{}) (bool, string) {
	deadline := time.Now().Add(time.Minute + time.Duration(nodes)*10*time.Millisecond)
	watchesOK := false
	for time.Now().Before(deadline) && r.stop.Err() == nil && !closedChan(allDone) {
		if !watchesOK {
			w, ok := watchCount(ctx)
			if !ok { // no mntr: count nodes only
				watchesOK = true
			} else {
				watchesOK = w >= watches
			}
		}
		if watchesOK {
			n, err := sc.countChildren(paths)
			if err == nil && n >= nodes {
				return true, ""
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false, "the plateau (every waiter queued at once) was not reached; memory measured anyway"
}

// waiterSet is what every waiter of the waiters workload shares.
type waiterSet struct {
	r          *runState
	paths      []string
	remaining  atomic.Int64
	allDone    chan struct{}
	drainStart atomic.Int64 // unix nanos; a waiter's latency is from here
}

// granted is waiter j of path k's outcome: hold and release, or count why
// not.
func (ws *waiterSet) granted(k, j int, planned bool, h held, err error) {
	defer func() {
		if ws.remaining.Add(-1) == 0 {
			close(ws.allDone)
		}
	}()
	r := ws.r
	path := ws.paths[k]
	if err != nil {
		if planned && errors.Is(err, context.Canceled) && r.stop.Err() == nil {
			r.cancelled.Add(1)
		} else if r.stop.Err() == nil {
			r.noteErr("waiter on "+path, err)
		}
		return
	}
	if s := ws.drainStart.Load(); s != 0 {
		d := time.Since(time.Unix(0, s))
		r.lat.record(d)
		r.tl.grant(time.Now(), d)
	}
	id := len(ws.paths) + k*r.cfg.Workers + j
	r.holdAndRelease(id, path, r.witnessBase(k), kMutex, h)
}
