package main

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// kind is the sort of hold a worker has.
type kind int

const (
	kMutex kind = iota
	kRead
	kWrite
	kSem
)

func (k kind) String() string {
	return [...]string{"mutex", "read", "write", "semaphore"}[k]
}

func (k kind) exclusive() bool { return k == kMutex || k == kWrite }

// checker proves exclusion three ways, per lock path:
//   - an in-process overlap detector: who holds the path right now;
//   - the witness files (witness.go), which peer processes share, when
//     -witness-file is given (interop and fault runs: see placeWitness);
//   - fencing tokens: an exclusive grant's token exceeds every earlier
//     grant's of the path, and a read grant's exceeds every earlier
//     exclusive grant's. (Semaphore holders share the lock and may be
//     granted from one listing, so their tokens are not ordered.)
//
// A holder whose lease reports Lost must stop touching the resource at
// once; one that has not yet left when the next holder arrives is not
// counted as an overlap (it is evicted), since it was told.
type checker struct {
	enabled bool // false for an impl that takes no lock (rawzk)
	// oneShot: every path is locked once (keys), so its state goes when its
	// holder leaves, and the map does not grow with the run.
	oneShot bool
	leases  int
	witness crossWitness
	logf    func(format string, a ...any)

	paths sync.Map // lock path → *pathState

	overlaps     atomic.Int64
	witnessFails atomic.Int64
	tokenBack    atomic.Int64
	// fenceRefused: the fenced resource (pause runs) refused a holder that
	// was not told it lost: its token was not the greatest.
	fenceRefused atomic.Int64
	logged       atomic.Int64

	// staleOverlaps counts grants that found the witness file of the pause
	// fault's stalled holder: a second holder while the first, frozen, still
	// believes it holds. That is what the pause fault shows, not a fault of
	// the harness's workers, so it is reported apart from the violations.
	staleOverlaps atomic.Int64
}

type pathState struct {
	mu       sync.Mutex
	holders  map[*holding]struct{}
	seen     bool
	seenExcl bool
	lastAny  int64
	lastExcl int64
}

// holding is one worker's hold, from enter to leave.
type holding struct {
	path, wbase string
	worker      int
	kind        kind
	lost        <-chan struct{}
	token       int64
	hasToken    bool
	wfile       string // the witness file this holder created, to remove
	wslot       int    // shm witness: the word this holder entered
	wid         uint64 // shm witness: its id in that word (0: none)
}

// crossWitness is a protocol that sees the holders of other processes:
// the witness files (witness.go) or the shared-memory words
// (witness_shm.go). enter and leave return a failed check.
type crossWitness interface {
	enter(h *holding, leases int) error
	leave(h *holding) error
}

func newChecker(enabled bool, leases int, w crossWitness, logf func(string, ...any)) *checker {
	return &checker{enabled: enabled, leases: leases, witness: w, logf: logf}
}

func (c *checker) state(path string) *pathState {
	if s, ok := c.paths.Load(path); ok {
		return s.(*pathState)
	}
	s, _ := c.paths.LoadOrStore(path, &pathState{holders: map[*holding]struct{}{}})
	return s.(*pathState)
}

// violation counts one and logs the first few.
func (c *checker) violation(counter *atomic.Int64, format string, a ...any) {
	counter.Add(1)
	if c.logged.Add(1) <= 10 && c.logf != nil {
		c.logf("VIOLATION: "+format, a...)
	}
}

// enter records that worker now holds path (witness file base wbase).
func (c *checker) enter(path, wbase string, worker int, k kind, h held) *holding {
	hd := &holding{path: path, wbase: wbase, worker: worker, kind: k, lost: h.Lost()}
	hd.token, hd.hasToken = h.Token()
	if !c.enabled {
		return hd
	}
	s := c.state(path)
	s.mu.Lock()
	defer s.mu.Unlock()

	// Overlaps with holders still inside, less those told they lost.
	others, writers := 0, 0
	var sample *holding
	for o := range s.holders {
		if closedChan(o.lost) {
			delete(s.holders, o)
			continue
		}
		others++
		if o.kind.exclusive() {
			writers++
		}
		sample = o
	}
	switch {
	case k.exclusive() && others > 0:
		c.violation(&c.overlaps, "%s: worker %d granted %s while worker %d holds %s (%d holders)", path, worker, k, sample.worker, sample.kind, others)
	case k == kRead && writers > 0:
		c.violation(&c.overlaps, "%s: worker %d granted read while a writer holds", path, worker)
	case k == kSem && others+1 > c.leases:
		c.violation(&c.overlaps, "%s: worker %d granted a lease: %d holders, limit %d", path, worker, others+1, c.leases)
	}
	s.holders[hd] = struct{}{}

	if hd.hasToken {
		switch {
		case k.exclusive() && s.seen && hd.token <= s.lastAny:
			c.violation(&c.tokenBack, "%s: worker %d: %s token %d not above the last grant's %d", path, worker, k, hd.token, s.lastAny)
		case k == kRead && s.seenExcl && hd.token <= s.lastExcl:
			c.violation(&c.tokenBack, "%s: worker %d: read token %d not above the last writer's %d", path, worker, hd.token, s.lastExcl)
		}
		if !s.seen || hd.token > s.lastAny {
			s.lastAny = hd.token
		}
		s.seen = true
		if k.exclusive() {
			if !s.seenExcl || hd.token > s.lastExcl {
				s.lastExcl = hd.token
			}
			s.seenExcl = true
		}
	}

	if c.witness != nil {
		switch err := c.witness.enter(hd, c.leases); {
		case errors.Is(err, errStalledHolder):
			c.staleOverlaps.Add(1)
		case err != nil:
			c.violation(&c.witnessFails, "%s: worker %d (%s): witness %v", path, worker, k, err)
		}
	}
	return hd
}

// leave records that the holder is out (before its release is sent).
func (c *checker) leave(hd *holding) {
	if !c.enabled {
		return
	}
	s := c.state(hd.path)
	s.mu.Lock()
	delete(s.holders, hd)
	if c.oneShot && len(s.holders) == 0 {
		c.paths.Delete(hd.path)
	}
	s.mu.Unlock()
	if c.witness != nil {
		if err := c.witness.leave(hd); err != nil {
			c.violation(&c.witnessFails, "%s: worker %d (%s): witness %v", hd.path, hd.worker, hd.kind, err)
		}
	}
}

// refused records that the fenced resource refused worker's write while
// its lease was not lost.
func (c *checker) refused(path string, worker int, token int64) {
	c.violation(&c.fenceRefused, "%s: worker %d: the fenced resource refused token %d of a holder that was not told it lost", path, worker, token)
}

func (c *checker) violations() int64 {
	return c.overlaps.Load() + c.witnessFails.Load() + c.tokenBack.Load() + c.fenceRefused.Load()
}

func (c *checker) detail() map[string]int64 {
	return map[string]int64{
		"overlap":        c.overlaps.Load(),
		"witness":        c.witnessFails.Load(),
		"token_backward": c.tokenBack.Load(),
		"fence_refused":  c.fenceRefused.Load(),
	}
}

func (c *checker) String() string {
	return fmt.Sprintf("overlap %d, witness %d, token %d, fence %d", c.overlaps.Load(), c.witnessFails.Load(), c.tokenBack.Load(), c.fenceRefused.Load())
}
