package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/future"
	"github.com/turnstile-go/turnstile/lock"
)

// The workload: acquisitions of every recipe of packages lock and
// election, mixed on shared paths, tried, cancelled one by one and in
// storms, and released at random.

// simSemPaths are the semaphores' paths, beside the mutexes' (simPaths).
// A world gives each its number of leases, one to three (see newWorkload):
// one is a mutex on the semaphore's layout, more let holders share.
var simSemPaths = []string{"/sim/s", "/sim/t"}

// simElectionPath is the one election: every engine's candidates meet on it.
const simElectionPath = "/sim/e"

type acqKind uint8

const (
	kindMutex acqKind = iota
	kindRead
	kindWrite
	kindReentrant
	kindDowngrade // a read lease taken in a held write lease's place
	kindSemaphore
	kindMulti // a MultiLock over two or three paths
	kindLeader
	numKinds
)

var kindNames = [numKinds]string{"mutex", "read", "write", "reentrant", "downgrade", "semaphore", "multi", "leader"}

// simTry marks the context of an acquisition that the workload makes a
// try-lock: the world has the engines mark it so (Engine.MarkTries) before
// each turn, as the recipe's blocking TryAcquire would have.
type simTry struct{}

func isTry(ctx context.Context) bool { return ctx.Value(simTry{}) != nil }

// ended is a context that has ended: the blocking releases (of a
// ReentrantMutex, a MultiLease, a Leadership) return at once with it, and
// the deletion goes on, which a single-threaded simulator needs.
var ended = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// workload is the workload's state in one world, beside its acquisitions.
type workload struct {
	semLeases  map[string]int                  // semaphore path → its number of leases
	reentrants map[string]*lock.ReentrantMutex // engine and path → its one ReentrantMutex
	elections  map[*client]*election.Election  // one Election per engine
	storms     int                             // cancel storms started
}

func newWorkload(rng *rand.Rand) workload {
	l := workload{semLeases: make(map[string]int), reentrants: make(map[string]*lock.ReentrantMutex),
		elections: make(map[*client]*election.Election)}
	for _, p := range simSemPaths {
		l.semLeases[p] = 1 + rng.IntN(3)
	}
	return l
}

// acq is one acquisition the workload started.
type acq struct {
	id     int
	c      *client
	kind   acqKind
	try    bool
	paths  []string // the lock path; a multi-lock's, in the order it takes them
	cancel context.CancelFunc
	storm  int // the cancel storm it belongs to; 0: none
	// shielded: the workload does not cancel it, for a lapse was aimed at
	// it (simpeer_test.go), whose outcome a cancel would hide.
	shielded bool
	// heldOn: an aimed lapse has its holder keep it until releaseAt, also
	// once the faults stop (simpeer_test.go).
	heldOn bool

	rw          *lock.RWMutex        // kindWrite, kindRead, kindDowngrade
	rm          *lock.ReentrantMutex // kindReentrant
	owner       int                  // kindReentrant
	downgradeOf *acq                 // kindDowngrade

	// resolved reports whether its future has resolved, read off the
	// future itself; callbacks counts the runs of the callback the
	// workload gave the future's Then, which records the outcome.
	resolved  func() bool
	callbacks int
	err       error
	grant     grant // what it was granted; nil until then, or when it failed

	released    bool          // the workload began its release
	releaseAt   time.Duration // when the holder lets go; 0 until seen held
	releaseDone func() bool   // whether the release begun has completed
}

func (a *acq) String() string {
	try, storm := "", ""
	if a.try {
		try = " try"
	}
	if a.storm != 0 {
		storm = fmt.Sprintf(" (storm %d)", a.storm)
	}
	return fmt.Sprintf("#%d %s %s%s on %v%s", a.id, a.c.name, kindNames[a.kind], try, a.paths, storm)
}

func (a *acq) unsettled() string {
	if a.callbacks == 0 {
		return "still waiting"
	}
	if a.grant != nil && !a.released && a.grant.held() {
		return "still held"
	}
	if a.releaseDone != nil && !a.releaseDone() {
		return "release pending"
	}
	return ""
}

// lease is the granted lease of a single-lease acquisition, or nil.
func (a *acq) lease() *lock.Lease {
	if g, ok := a.grant.(leaseGrant); ok {
		return g.l
	}
	return nil
}

// grant is what a granted acquisition holds, whatever its recipe.
type grant interface {
	// held reports whether some part of it is not lost.
	held() bool
	// release begins letting go, the recipe's way, and returns whether
	// the release has completed.
	release() (done func() bool)
}

// leaseGrant is one lease, released with ReleaseAsync.
type leaseGrant struct{ l *lock.Lease }

func (g leaseGrant) held() bool { return g.l.Err() == nil }

func (g leaseGrant) release() func() bool {
	f := g.l.ReleaseAsync()
	return func() bool { _, ok, _ := f.Result(); return ok }
}

// reentrantGrant is one owner's acquisition of a ReentrantMutex: the last
// release of the owner deletes the node.
type reentrantGrant struct {
	leaseGrant
	rm    *lock.ReentrantMutex
	owner int
}

func (g reentrantGrant) release() func() bool {
	_ = g.rm.Release(ended, g.owner) // it waits for the deletion: see ended
	return func() bool { return true }
}

// multiGrant is a MultiLease: it holds every part's path until each part
// is released or lost.
type multiGrant struct{ ml *lock.MultiLease }

func (g multiGrant) held() bool {
	for _, l := range g.ml.Leases() {
		if l.Err() == nil {
			return true
		}
	}
	return false
}

func (g multiGrant) release() func() bool {
	_ = g.ml.Release(ended)
	return func() bool { return allEnded(g.ml.Leases()...) }
}

// leaderGrant is a term of a leader: Resign ends it.
type leaderGrant struct{ ld *election.Leadership }

func (g leaderGrant) held() bool { return g.ld.Err() == nil }

func (g leaderGrant) release() func() bool {
	_ = g.ld.Resign(ended)
	return func() bool { return g.ld.Context().Err() != nil }
}

// allEnded reports whether every lease has ended: its release completed,
// or it was lost (its Context is cancelled either way).
func allEnded(leases ...*lock.Lease) bool {
	for _, l := range leases {
		if l.Context().Err() == nil {
			return false
		}
	}
	return true
}

// await follows a's future: it records the outcome, the first time its
// callback runs, and fails the run if it ever runs again.
func await[T any](w *world, a *acq, f *engine.Future[T], granted func(T) grant) {
	a.resolved = func() bool { _, ok, _ := f.Result(); return ok }
	f.Then(func(v T, err error) {
		a.callbacks++
		if a.callbacks > 1 {
			w.fail("%v: the future's callback ran %d times", a, a.callbacks)
			return
		}
		a.err = err
		if err == nil {
			a.grant = granted(v)
		}
	})
}

func grantLease(l *lock.Lease) grant { return leaseGrant{l} }

// reentrant is the one ReentrantMutex of an engine on a path, which its
// owners share.
func (w *world) reentrant(c *client, p string) *lock.ReentrantMutex {
	key := c.name + " " + p
	if w.load.reentrants[key] == nil {
		w.load.reentrants[key] = lock.NewReentrantMutex(c.eng, p)
	}
	return w.load.reentrants[key]
}

func (w *world) semaphore(c *client, p string) *lock.Semaphore {
	s, err := lock.NewSemaphore(c.eng, p, w.load.semLeases[p])
	if err != nil {
		panic(err)
	}
	return s
}

// simBusy is how many unsettled acquisitions a client may have before it
// starts no more: a client's pool of workers. Without a bound, cancel
// storms and multi-locks pile up queues on a path that, once the faults
// stop, take longer than simQuiet to serve one by one.
const simBusy = 12

// acquire starts one acquisition on c, or, now and then, a cancel storm;
// nothing while c is busy.
func (w *world) acquire(c *client) {
	if w.busy(c) >= simBusy {
		return
	}
	if w.rng.IntN(12) == 0 {
		w.storm(c)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	if !w.start(c, ctx, cancel, 0) {
		cancel()
	}
}

// storm starts several acquisitions on one context, of c and at times of
// other engines, and cancels it a little later: every waiter among them
// is cancelled at once, in one engine's loop turn or several.
func (w *world) storm(c *client) {
	w.load.storms++
	id := w.load.storms
	ctx, cancel := context.WithCancel(context.Background())
	spread := w.rng.IntN(2) == 0
	n := 3 + w.rng.IntN(6)
	w.tracef("%s: storm %d of %d acquisitions", c.name, id, n)
	for range n {
		on := c
		if spread {
			on = w.clients[w.rng.IntN(len(w.clients))]
		}
		if !on.exited && !w.ens.quietFor(on) {
			w.start(on, ctx, cancel, id)
		}
	}
	after := time.Duration(w.rng.Int64N(int64(time.Second)))
	w.clock.afterFunc(after, func() {
		w.tracef("storm %d: cancel", id)
		cancel()
		w.contextsDone()
	})
}

// start begins one acquisition of a random recipe under ctx; false if it
// made none.
func (w *world) start(c *client, ctx context.Context, cancel context.CancelFunc, storm int) bool {
	p := simPaths[w.rng.IntN(len(simPaths))]
	a := &acq{id: len(w.acqs) + 1, c: c, paths: []string{p}, cancel: cancel, storm: storm}
	a.try = w.rng.IntN(4) == 0
	tryCtx := ctx
	if a.try {
		tryCtx = context.WithValue(ctx, simTry{}, true)
	}
	switch k := w.rng.IntN(15); {
	case k < 3:
		a.kind = kindMutex
		await(w, a, lock.NewMutex(c.eng, p).Acquire(tryCtx), grantLease)
	case k < 5:
		a.kind, a.rw = kindRead, lock.NewRWMutex(c.eng, p)
		await(w, a, a.rw.Reader().Acquire(tryCtx), grantLease)
	case k < 7:
		a.kind, a.rw = kindWrite, lock.NewRWMutex(c.eng, p)
		await(w, a, a.rw.Writer().Acquire(tryCtx), grantLease)
	case k < 9:
		a.kind, a.rm, a.owner = kindReentrant, w.reentrant(c, p), 1+w.rng.IntN(2)
		var f *engine.Future[*lock.Lease]
		switch {
		case w.ownerWaiting(a.rm, a.owner) && !a.try:
			// A join of the owner's acquisition still waiting: it counts
			// one more hold and resolves with that one. Under a context
			// that cannot end, whose end the recipe would follow with a
			// goroutine of context.AfterFunc's that the simulator cannot
			// schedule; it still ends with the one it joins, cancelled or
			// not.
			f = a.rm.Acquire(context.WithoutCancel(ctx), a.owner)
		case w.ownerWaiting(a.rm, a.owner):
			// The owner's own acquisition is still waiting: TryAcquire
			// fails at once, without blocking.
			g, resolve := future.New[*lock.Lease]()
			resolve(a.rm.TryAcquire(ctx, a.owner))
			f = (*engine.Future[*lock.Lease])(g)
		default:
			f = a.rm.Acquire(tryCtx, a.owner)
		}
		await(w, a, f, func(l *lock.Lease) grant { return reentrantGrant{leaseGrant{l}, a.rm, a.owner} })
	case k < 10:
		var held []*acq
		for _, b := range w.open {
			if b.kind == kindWrite && b.c == c && !b.released && b.lease() != nil && b.lease().Held() {
				held = append(held, b)
			}
		}
		if len(held) == 0 {
			return false
		}
		wr := held[w.rng.IntN(len(held))]
		a.kind, a.try, a.paths, a.rw, a.downgradeOf = kindDowngrade, false, wr.paths, wr.rw, wr
		await(w, a, wr.rw.Downgrade(ctx, wr.lease()), grantLease)
	case k < 12:
		p = simSemPaths[w.rng.IntN(len(simSemPaths))]
		a.kind, a.paths = kindSemaphore, []string{p}
		await(w, a, w.semaphore(c, p).Acquire(tryCtx), grantLease)
	case k < 14:
		a.kind = kindMulti
		ml := w.multiLock(c, a)
		await(w, a, ml.Acquire(tryCtx), func(ml *lock.MultiLease) grant { return multiGrant{ml} })
	default:
		a.kind, a.try, a.paths = kindLeader, false, []string{simElectionPath}
		await(w, a, w.election(c).Campaign(ctx, []byte(c.name)),
			func(ld *election.Leadership) grant { return leaderGrant{ld} })
	}
	w.acqs = append(w.acqs, a)
	w.open = append(w.open, a)
	w.tracef("%s: acquire %v", c.name, a)
	return true
}

// busy is the number of c's acquisitions not settled.
func (w *world) busy(c *client) int {
	n := 0
	for _, a := range w.open {
		if a.c == c && a.unsettled() != "" {
			n++
		}
	}
	return n
}

// ownerWaiting reports whether owner's acquisition of rm is still waiting.
func (w *world) ownerWaiting(rm *lock.ReentrantMutex, owner int) bool {
	for _, b := range w.open {
		if b.rm == rm && b.owner == owner && b.callbacks == 0 {
			return true
		}
	}
	return false
}

// multiLock is a MultiLock over two or three of the shared paths, given in
// a random order (the recipe takes them in its own): a mutex, a read or a
// write lock on a mutex path, a semaphore on a semaphore's. Clients take
// the same paths with parts of different recipes.
func (w *world) multiLock(c *client, a *acq) *lock.MultiLock {
	all := append(append([]string(nil), simPaths...), simSemPaths...)
	w.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	a.paths = all[:2+w.rng.IntN(2)]
	parts := make([]lock.Acquirer, len(a.paths))
	for i, p := range a.paths {
		switch k := w.rng.IntN(5); {
		case w.load.semLeases[p] > 0:
			parts[i] = w.semaphore(c, p)
		case k < 2:
			parts[i] = lock.NewMutex(c.eng, p)
		case k < 4:
			parts[i] = lock.NewRWMutex(c.eng, p).Writer()
		default:
			parts[i] = lock.NewRWMutex(c.eng, p).Reader()
		}
	}
	ml, err := lock.NewMultiLock(parts...)
	if err != nil {
		panic(err)
	}
	a.paths = ml.Paths()
	return ml
}

// releaseOne begins the release of a held lease; in the quiet phase it is
// the only way waiters behind get in, so it is made often enough.
func (w *world) releaseOne() {
	w.prune()
	var held []*acq
	for _, a := range w.open {
		if a.released || a.grant == nil || w.ens.stillFor(a.c) {
			continue
		}
		if a.releaseAt == 0 {
			// Seen held for the first time: the holder keeps it a while,
			// mostly briefly, at times for longer than a session timeout.
			var hold time.Duration
			switch k := w.rng.IntN(10); {
			case k < 5:
				hold = time.Duration(w.rng.Int64N(int64(100 * time.Millisecond)))
			case k < 9:
				hold = time.Duration(w.rng.Int64N(int64(time.Second)))
			default:
				hold = time.Duration(w.rng.Int64N(int64(4 * simSessionTimeout)))
			}
			a.releaseAt = w.clock.now + hold + 1
		}
		if w.clock.now >= a.releaseAt || !w.faults && !a.heldOn {
			held = append(held, a)
		}
	}
	if len(held) == 0 {
		return
	}
	a := held[w.rng.IntN(len(held))]
	a.released = true
	w.tracef("%s: release %v", a.c.name, a)
	a.releaseDone = a.grant.release()
}

// cancelOne cancels a waiting acquisition's context: a storm's cancels
// every acquisition of the storm.
func (w *world) cancelOne() {
	var waiting []*acq
	for _, a := range w.open {
		if a.callbacks == 0 && !w.ens.quietFor(a.c) && !a.shielded {
			waiting = append(waiting, a)
		}
	}
	if len(waiting) == 0 {
		return
	}
	a := waiting[w.rng.IntN(len(waiting))]
	w.tracef("%s: cancel %v", a.c.name, a)
	a.cancel()
	w.contextsDone()
}

// contextsDone runs every client's AfterFunc of an ended context: a
// storm's context is registered with several engines.
func (w *world) contextsDone() {
	for _, c := range w.clients {
		c.contextsDone()
	}
}

// granted counts the acquisitions granted, by recipe.
func (w *world) granted() [numKinds]int {
	var n [numKinds]int
	for _, a := range w.acqs {
		if a.grant != nil {
			n[a.kind]++
		}
	}
	return n
}

func addGranted(sum *[numKinds]int, n [numKinds]int) {
	for k := range n {
		sum[k] += n[k]
	}
}

// byRecipe prints counts by recipe: "mutex 12, read 3, ...".
func byRecipe(n [numKinds]int) string {
	s := make([]string, len(n))
	for k := range n {
		s[k] = fmt.Sprintf("%s %d", kindNames[k], n[k])
	}
	return strings.Join(s, ", ")
}
