package engine_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// The workload: acquisitions of the real recipes of package lock, mixed
// on the same paths, cancelled and released at random.

type acqKind uint8

const (
	kindMutex acqKind = iota
	kindRead
	kindWrite
	kindReentrant
	kindDowngrade // a read lease taken in a held write lease's place
)

var kindNames = [...]string{"mutex", "read", "write", "reentrant", "downgrade"}

// acq is one acquisition the workload started.
type acq struct {
	id     int
	c      *client
	kind   acqKind
	try    bool
	path   string
	fut    *engine.Future[*lock.Lease]
	cancel context.CancelFunc

	rw          *lock.RWMutex        // kindWrite, kindRead, kindDowngrade
	rm          *lock.ReentrantMutex // kindReentrant
	owner       int                  // kindReentrant
	downgradeOf *acq                 // kindDowngrade
	callbacks   int                  // times the future's Then callback ran
	released    bool                 // the workload began its release
	releaseAt   time.Duration        // when the holder lets go; 0 until seen held
	relFut      *engine.Future[struct{}]
}

func (a *acq) String() string {
	try := ""
	if a.try {
		try = " try"
	}
	return fmt.Sprintf("#%d %s %s%s on %s", a.id, a.c.name, kindNames[a.kind], try, a.path)
}

// lease is the granted lease, or nil.
func (a *acq) lease() *lock.Lease {
	l, ok, err := a.fut.Result()
	if !ok || err != nil {
		return nil
	}
	return l
}

func (a *acq) unsettled() string {
	if _, ok, _ := a.fut.Result(); !ok {
		return "still waiting"
	}
	if l := a.lease(); l != nil && !a.released && l.Err() == nil {
		return "still held"
	}
	if a.relFut != nil {
		if _, ok, _ := a.relFut.Result(); !ok {
			return "release still pending"
		}
	}
	return ""
}

// reentrant is the one ReentrantMutex of an engine on a path, which its
// owners share.
func (w *world) reentrant(c *client, p string) *lock.ReentrantMutex {
	key := c.name + " " + p
	if w.reentrants[key] == nil {
		w.reentrants[key] = lock.NewReentrantMutex(c.eng, p)
	}
	return w.reentrants[key]
}

func (w *world) acquire(c *client) {
	p := simPaths[w.rng.IntN(len(simPaths))]
	ctx, cancel := context.WithCancel(context.Background())
	a := &acq{id: len(w.acqs) + 1, c: c, path: p, cancel: cancel}
	switch k := w.rng.IntN(10); {
	case k < 3:
		a.kind = kindMutex
		a.fut = lock.NewMutex(c.eng, p).Acquire(ctx)
		a.try = w.rng.IntN(4) == 0 && c.eng.MakeLastTry()
	case k < 5:
		a.kind, a.rw = kindRead, lock.NewRWMutex(c.eng, p)
		a.fut = a.rw.Reader().Acquire(ctx)
	case k < 7:
		a.kind, a.rw = kindWrite, lock.NewRWMutex(c.eng, p)
		a.fut = a.rw.Writer().Acquire(ctx)
		a.try = w.rng.IntN(4) == 0 && c.eng.MakeLastTry()
	case k < 9:
		a.kind, a.rm, a.owner = kindReentrant, w.reentrant(c, p), 1+w.rng.IntN(2)
		for _, b := range w.open {
			if b.rm == a.rm && b.owner == a.owner && b.unsettled() == "still waiting" {
				cancel()
				return // joining a pending acquisition waits on a goroutine of the recipe's
			}
		}
		a.fut = a.rm.Acquire(ctx, a.owner)
	default:
		var held []*acq
		for _, b := range w.open {
			if b.kind == kindWrite && b.c == c && !b.released && b.lease() != nil && b.lease().Held() {
				held = append(held, b)
			}
		}
		if len(held) == 0 {
			cancel()
			return
		}
		wr := held[w.rng.IntN(len(held))]
		a.kind, a.path, a.rw, a.downgradeOf = kindDowngrade, wr.path, wr.rw, wr
		a.fut = wr.rw.Downgrade(ctx, wr.lease())
	}
	if a.kind == kindMutex || a.kind == kindWrite || a.kind == kindReentrant {
		// The engine's own future: its callbacks run through the engine.
		a.fut.Then(func(*lock.Lease, error) {
			a.callbacks++
			if a.callbacks > 1 {
				w.fail("%v: the future's callback ran %d times", a, a.callbacks)
			}
		})
	}
	w.acqs = append(w.acqs, a)
	w.open = append(w.open, a)
	w.tracef("%s: acquire %v", c.name, a)
}

// releaseOne begins the release of a held lease; in the quiet phase it is
// the only way waiters behind get in, so it is made often enough.
func (w *world) releaseOne() {
	w.prune()
	var held []*acq
	for _, a := range w.open {
		if a.released || a.lease() == nil {
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
		if w.clock.now >= a.releaseAt || !w.faults {
			held = append(held, a)
		}
	}
	if len(held) == 0 {
		return
	}
	a := held[w.rng.IntN(len(held))]
	a.released = true
	w.tracef("%s: release %v", a.c.name, a)
	if a.kind == kindReentrant {
		done, cancel := context.WithCancel(context.Background())
		cancel() // Release waits for the deletion; the simulator cannot block
		_ = a.rm.Release(done, a.owner)
		return
	}
	a.relFut = a.lease().ReleaseAsync()
}

// cancelOne cancels a waiting acquisition's context.
func (w *world) cancelOne() {
	var waiting []*acq
	for _, a := range w.open {
		if _, ok, _ := a.fut.Result(); !ok {
			waiting = append(waiting, a)
		}
	}
	if len(waiting) == 0 {
		return
	}
	a := waiting[w.rng.IntN(len(waiting))]
	w.tracef("%s: cancel %v", a.c.name, a)
	a.cancel()
	a.c.contextsDone()
}

var _ = slices.Index[[]int]
