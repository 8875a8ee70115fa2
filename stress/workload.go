package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/fence"
)

// runState is what the workers of one run share.
type runState struct {
	cfg   *config
	impl  impl
	cl    client
	check *checker
	lat   *latencies
	seed  uint64
	logf  func(format string, a ...any)

	// stop ends acquisitions: cancelled at the end of -duration, when the
	// -cycles are used up, on SIGINT, or at the hard deadline.
	stop    context.Context
	stopNow context.CancelFunc

	// resource, in pause runs, is written by every holder with its token;
	// deposits counts the writes it accepted.
	resource holdResource
	deposits atomic.Int64

	cycles    atomic.Int64
	lost      atomic.Int64
	cancelled atomic.Int64
	errs      atomic.Int64
	errLogged atomic.Int64
	tickets   atomic.Int64
	limited   bool

	// open is the schedule of an open-loop run (-rate), nil when closed.
	open *schedule
	// windowFrom is when the measured window opened (UnixNano; 0: not yet):
	// an open-loop acquisition intended before it is not recorded.
	windowFrom atomic.Int64
	// unfinished counts open-loop acquisitions intended in the window that
	// had not been granted when the run stopped.
	unfinished atomic.Int64
	// lag, in an open loop, records how late a worker called Acquire after
	// the acquisition's intended start, for those intended in the window:
	// the part of a latency that the harness (no free worker, a worker not
	// yet scheduled) and not the lock put there.
	lag *latencies
	// tl is the per-second record of the run for -report; nil without it.
	tl *timeline
}

// lockPath is the lock path of worker i (for waiters: of path i).
func (r *runState) lockPath(i int) string {
	switch r.cfg.Workload {
	case "uncontended":
		return fmt.Sprintf("%s/u/%d", r.cfg.LockRoot, i)
	case "paths":
		return fmt.Sprintf("%s/p/%d", r.cfg.LockRoot, i%r.cfg.Paths)
	case "waiters":
		return fmt.Sprintf("%s/w/%d", r.cfg.LockRoot, i)
	case "keys":
		return keysWorkerDir(r.cfg.keysRun, i) // the parent of its keys
	}
	return r.cfg.LockPath
}

// witnessBase is the witness file of lock path index i: -witness-file
// itself for single-path workloads, PATH-<i> for the others.
func (r *runState) witnessBase(i int) string {
	base := r.cfg.WitnessFile
	switch r.cfg.Workload {
	case "uncontended":
		return fmt.Sprintf("%s-%d", base, i)
	case "paths":
		return fmt.Sprintf("%s-%d", base, i%r.cfg.Paths)
	case "waiters", "keys":
		return fmt.Sprintf("%s-%d", base, i)
	}
	return base
}

// takeTicket reports whether one more acquisition may start under -cycles.
func (r *runState) takeTicket() bool {
	if !r.limited {
		return true
	}
	if r.tickets.Add(-1) < 0 {
		r.stopNow()
		return false
	}
	return true
}

func (r *runState) noteErr(what string, err error) {
	r.errs.Add(1)
	if r.errLogged.Add(1) <= 3 {
		r.logf("note: %s: %v", what, err)
	}
}

func (r *runState) releaseTimeout() time.Duration { return 2*r.cfg.SessionTimeout + 10*time.Second }

// lockerFor gives each worker its locker for the mutex-like workloads.
func (r *runState) lockerFor(path string) (locker, rwLocker, error) {
	switch r.cfg.Workload {
	case "rw":
		rw, err := r.cl.RWMutex(path)
		return nil, rw, err
	case "semaphore":
		l, err := r.cl.Semaphore(path, r.cfg.Leases)
		return l, nil, err
	}
	l, err := r.cl.Mutex(path)
	return l, nil, err
}

// workerSet is the running workers of a duration/cycles workload.
type workerSet struct {
	live atomic.Int64
	done chan struct{} // closed when every worker has returned
}

// startWorkers starts the duration/cycles workloads' workers: one goroutine
// per worker, each cycling acquire → hold → release until r.stop (for the
// election workload: campaign → lead → resign).
func (r *runState) startWorkers() (*workerSet, error) {
	if r.cfg.Workload == "election" {
		return r.startElection() // workload_election.go
	}
	type target struct {
		path, wbase string
		l           locker
		rw          rwLocker
	}
	shared := map[string]target{}
	targets := make([]target, r.cfg.Workers)
	for i := range targets {
		p := r.lockPath(i)
		t, ok := shared[p]
		if r.cfg.Workload == "keys" {
			// A locker per key, made by the worker's every cycle.
			targets[i] = target{path: p, wbase: r.witnessBase(i)}
			continue
		}
		if !ok {
			l, rw, err := r.lockerFor(p)
			if err != nil {
				return nil, err
			}
			t = target{path: p, wbase: r.witnessBase(i), l: l, rw: rw}
			shared[p] = t
		}
		targets[i] = t
	}
	if r.open != nil {
		go r.open.run(r.stop)
	}
	return startAll(len(targets), func(i int) {
		t := targets[i]
		r.worker(i, t.path, t.wbase, t.l, t.rw)
	}), nil
}

// startAll runs work(0) … work(n-1), one goroutine each.
func startAll(n int, work func(i int)) *workerSet {
	ws := &workerSet{done: make(chan struct{})}
	var wg sync.WaitGroup
	for i := range n {
		ws.live.Add(1)
		wg.Go(func() {
			defer ws.live.Add(-1)
			work(i)
		})
	}
	go func() { wg.Wait(); close(ws.done) }()
	return ws
}

// wait waits up to d for every worker to return.
func (ws *workerSet) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ws.done:
		return true
	case <-t.C:
		return false
	}
}

// finish, once r.stop has ended the run, waits up to grace for the workers
// and returns how many are still out: stuck on an acquisition that cannot
// be cancelled, waiting for a lock nobody releases (they return when the
// client closes).
func (ws *workerSet) finish(grace time.Duration) (stuck int) {
	if ws.wait(grace) {
		return 0
	}
	return int(ws.live.Load())
}

func (r *runState) worker(id int, path, wbase string, l locker, rw rwLocker) {
	rng := rand.New(rand.NewPCG(r.seed, uint64(id)+1))
	cancelFault := r.cfg.Faults.has("cancel")
	keys := r.cfg.Workload == "keys"
	dir := path
	var n int64
	for {
		// intended is when this acquisition was meant to start: now in a
		// closed loop, the schedule's time in an open one, however late a
		// free worker picks it up.
		var intended time.Time
		if r.open != nil {
			at, ok := r.open.next(r.stop)
			if !ok {
				r.abandonBacklog()
				return
			}
			intended = at
		} else if r.stop.Err() != nil || !r.takeTicket() {
			return
		}
		k, lk := kMutex, l
		if keys {
			path = dir + "/" + strconv.FormatInt(n, 10)
			n++
			var err error
			if lk, _, err = r.lockerFor(path); err != nil {
				r.noteErr("locker "+path, err)
				return
			}
		}
		switch r.cfg.Workload {
		case "rw":
			if rng.Float64() < r.cfg.WriteRatio {
				k, lk = kWrite, rw.Writer()
			} else {
				k, lk = kRead, rw.Reader()
			}
		case "semaphore":
			k = kSem
		}
		actx, cancel := r.stop, context.CancelFunc(func() {})
		planned := false
		if cancelFault && rng.Float64() < r.cfg.CancelRatio {
			after := time.Duration(rng.Int64N(int64(r.cfg.CancelMax) + 1))
			actx, cancel = context.WithTimeout(r.stop, after)
			planned = true
		}
		t0 := time.Now()
		if r.open == nil {
			intended = t0
		}
		if r.open != nil {
			r.recordLag(intended, t0)
		}
		h, err := lk.Acquire(actx)
		cancel()
		if err != nil {
			switch {
			case r.stop.Err() != nil:
				if r.open != nil {
					r.unfinishedAt(intended, time.Now())
					r.abandonBacklog()
				}
				return
			case planned && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
				r.cancelled.Add(1)
			default:
				r.noteErr("acquire "+path, err)
				r.tl.errorAt(time.Now())
				if r.open == nil {
					sleepCtx(r.stop, time.Duration(5+rng.IntN(20))*time.Millisecond)
				}
			}
			continue
		}
		granted := time.Now()
		r.recordGrant(intended, granted)
		if trace.IsEnabled() {
			// A mark in -trace's execution trace, to find a slow
			// acquisition's moment: its lag before Acquire and its wait in it.
			trace.Logf(context.Background(), "grant", "worker %d lag %dus acquire %dus", id, t0.Sub(intended).Microseconds(), granted.Sub(t0).Microseconds())
		}
		r.holdAndRelease(id, path, wbase, k, h)
	}
}

// recordGrant records the latency of a grant, from its intended start:
// into the run's histogram (open loop: only acquisitions intended inside
// the window) and the per-second timeline.
func (r *runState) recordGrant(intended, granted time.Time) {
	d := granted.Sub(intended)
	if r.open == nil {
		r.lat.record(d)
	} else if from := r.windowFrom.Load(); from != 0 && intended.UnixNano() >= from {
		r.lat.record(d)
	}
	r.tl.grant(granted, d)
}

// recordLag records, for an open-loop acquisition intended in the window,
// how late its worker called Acquire.
func (r *runState) recordLag(intended, called time.Time) {
	if from := r.windowFrom.Load(); from != 0 && intended.UnixNano() >= from {
		r.lag.record(called.Sub(intended))
	}
}

// unfinishedAt counts an open-loop acquisition intended at intended that
// the end of the run cut short, and records the wait it had had by then:
// a lower bound, which the histogram must still see (leaving it out would
// hide the backlog that made it late).
func (r *runState) unfinishedAt(intended, now time.Time) {
	if from := r.windowFrom.Load(); from == 0 || intended.UnixNano() < from {
		return
	}
	r.unfinished.Add(1)
	r.lat.record(now.Sub(intended))
}

// abandonBacklog counts, once the run stopped, the scheduled acquisitions
// no worker took.
func (r *runState) abandonBacklog() {
	now := time.Now()
	for {
		at, ok := r.open.take()
		if !ok {
			return
		}
		r.unfinishedAt(at, now)
	}
}

// holdAndRelease is the critical section: enter the checkers, hold for
// -hold (or until the lease is lost), leave, release.
func (r *runState) holdAndRelease(id int, path, wbase string, k kind, h held) {
	hd := r.check.enter(path, wbase, id, k, h)
	lost := h.Lost()
	if r.resource != nil {
		r.writeResource(path, id, h, lost)
	}
	if r.cfg.Hold > 0 {
		t := time.NewTimer(r.cfg.Hold)
		select {
		case <-t.C:
		case <-lost:
		}
		t.Stop()
	}
	wasLost := closedChan(lost)
	r.check.leave(hd)
	// Cleanup never uses a context that the run may have cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), r.releaseTimeout())
	err := h.Release(ctx)
	cancel()
	// Lost counts leases that saw Lost() at any moment before their release
	// ended, also while the release was under way.
	switch {
	case wasLost || closedChan(lost) || errors.Is(err, engine.ErrLost) || errors.Is(err, errHoldExpired):
		r.lost.Add(1)
	case err != nil:
		r.noteErr("release "+path, err)
	}
	r.cycles.Add(1)
}

// writeResource is a holder's one read and write of the resource of a
// pause run. A refusal of a holder that was not told it lost is a
// violation. The run's end does not cut it short: a deposit is made or
// refused, so that the books at the end balance.
func (r *runState) writeResource(path string, id int, h held, lost <-chan struct{}) {
	token, hasToken := h.Token()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := r.resource.read(ctx, token, hasToken)
	accepted := false
	if err == nil {
		accepted, err = r.resource.write(ctx, token, hasToken, v, fmt.Sprintf("%d.%d", os.Getpid(), id))
	}
	switch {
	case err != nil && errors.Is(err, fence.ErrStale):
		// A fenced read refused: nothing was written either.
		if !closedChan(lost) {
			r.check.refused(path, id, token)
		}
	case err != nil:
		r.noteErr("resource", err)
	case accepted:
		r.deposits.Add(1)
	case !closedChan(lost):
		r.check.refused(path, id, token)
	}
}
