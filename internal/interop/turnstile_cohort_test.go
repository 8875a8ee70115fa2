package interop_test

import (
	"errors"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
)

// A Curator or kazoo waiter on a lock that a turnstile engine's workers
// keep passing among themselves (lock cohorting) is granted within the
// cohort's bound: the node it queued behind passes at most MaxPasses
// times after the grant, and goes back by MaxHold from the grant, so the
// peer waits for at most MaxPasses+1 turnstile holds, and for about
// MaxHold, one hold and one handoff.
//
// What is asserted does not depend on the machine's speed: every peer
// acquisition is granted, no witness check fails, and each peer node was
// seen waiting by at most MaxPasses+1 turnstile holds (each turnstile
// holder lists the lock path while it holds, and counts the lock nodes
// but its own that it sees: any of them waits behind it). The peer's
// waits, the most turnstile holds one peer node waited through, and the
// turnstile side's figures are logged, for the default policy and for
// YieldToOthers: the times are figures, not assertions. So is where the
// peer's longest wait can go on the turnstile side while the peer runs:
// the longest term of a grant of its node (from its first holder's grant
// to its last holder's release), the longest hold, and the longest
// give-back (the last holder's release, which returns with the node's
// deletion). A watcher on a session of its own sees when each peer node
// appears and when the turnstile node before it goes: the longest such
// wait is logged in parts (before that node's grant, its term, from its
// last release to its deletion); the rest of the peer's longest wait is
// on the peer's side (its create, then its notification and listing).
func TestCohortPeerWaitsWithinTheBound(t *testing.T) {
	for _, peer := range []struct {
		name  string
		start func(*testing.T) starter
	}{{"curator", curatorStarter}, {"kazoo", kazooStarter}} {
		for _, yield := range []bool{false, true} {
			name := peer.name
			if yield {
				name += "/yield"
			}
			t.Run(name, func(t *testing.T) { cohortBeside(t, peer.start(t), yield) })
		}
	}
}

// cohortMaxPasses bounds the passes of the turnstile side in
// TestCohortPeerWaitsWithinTheBound: low enough that the count means
// something, high enough that MaxHold (the default, 100ms) usually ends a
// grant first.
const cohortMaxPasses = 200

func cohortBeside(t *testing.T, start starter, yield bool) {
	ctx := testCtx(t)
	p := lockPath(t)
	witness := filepath.Join(t.TempDir(), "witness")
	eng := startEngine(t, engine.Config{Cohort: engine.CohortConfig{MaxPasses: cohortMaxPasses, YieldToOthers: yield}})
	look := inspect(t)
	m := lock.NewMutex(eng, p)
	w, err := interop.NewWitness(witness)
	if err != nil {
		t.Fatal(err)
	}

	// The peer: one worker, so that its every acquisition but the first
	// queues behind the turnstile workers, which never stop asking.
	const iterations = 30
	peerDone := make(chan struct{})
	var (
		mu      sync.Mutex
		seen    = map[string]int{} // peer node → turnstile holds that saw it waiting
		holds   int
		errs    []error
		workers sync.WaitGroup
		// terms are the grants of the turnstile node while the peer ran,
		// by node (each grant queues a node of its own, which its
		// passes share); timing tells whether a hold counts.
		terms  = map[string]*cohortTerm{}
		timing atomic.Bool
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	before := eng.CohortStats()
	for range 4 {
		workers.Go(func() {
			for {
				select {
				case <-peerDone:
					return
				default:
				}
				l, err := m.Lock(ctx)
				if err != nil {
					fail(err)
					return
				}
				start, timed := time.Now(), timing.Load()
				if err := w.AcquireMutex(); err != nil {
					fail(err)
				}
				children, _, err := look.Children(p)
				if err != nil && !errors.Is(err, zk.ErrNoNode) {
					fail(err)
				}
				self := path.Base(l.Node())
				mu.Lock()
				holds++
				for _, c := range children {
					if _, lockNode := queue.Parse(c); lockNode && c != self {
						seen[c]++
					}
				}
				mu.Unlock()
				if err := w.ReleaseMutex(); err != nil {
					fail(err)
				}
				end := time.Now()
				if err := l.Release(ctx); err != nil {
					fail(err)
					return
				}
				if timed {
					mu.Lock()
					terms[self] = terms[self].add(start, end, time.Since(end))
					mu.Unlock()
				}
			}
		})
	}
	eventually(t, ctx, "turnstile passing", func() bool { return eng.CohortStats().Passes > before.Passes })
	timing.Store(true)
	watchDone := make(chan struct{})
	sighted, stopWatch := watchChildren(inspect(t), p, watchDone)

	pr, err := start(ctx, interop.PeerConfig{Connect: zookeeper(t), Path: p, Recipe: "mutex", Workers: 1,
		Iterations: iterations, Hold: time.Millisecond, Witness: witness, Timeout: peerTimeout, Bench: true})
	if err != nil {
		close(peerDone)
		close(watchDone)
		workers.Wait()
		stopWatch()
		t.Fatal(err)
	}
	res := waitAll(t, pr)
	timing.Store(false)
	close(peerDone)
	close(watchDone)
	workers.Wait()
	if err := stopWatch(); err != nil {
		t.Errorf("watching %s: %v", p, err)
	}
	for _, err := range errs {
		t.Error(err)
	}
	checkAll(t, []*interop.Peer{pr}, res, iterations)

	most := 0
	for _, n := range seen {
		most = max(most, n)
	}
	if most > cohortMaxPasses+1 {
		t.Errorf("a peer node waited through %d turnstile holds, want at most MaxPasses+1 (%d)", most, cohortMaxPasses+1)
	}
	b, err := interop.ParseBench(res[0].Output)
	if err != nil {
		t.Fatal(err)
	}
	var waits []int64
	for _, l := range b.Latency {
		for range l.Count {
			waits = append(waits, l.Micros)
		}
	}
	slices.Sort(waits)
	s := eng.CohortStats()
	ms := func(us int64) float64 { return float64(us) / 1000 }
	if len(waits) > 0 {
		t.Logf("yield=%v: peer waits (%d acquisitions): p50 %.1f ms, max %.1f ms (MaxHold %v); most turnstile holds one peer node waited through: %d (MaxPasses %d); turnstile: %d holds, %d grants of its node, %d passes, %d given back to another client, %d at a bound",
			yield, len(waits), ms(waits[len(waits)/2]), ms(waits[len(waits)-1]), engine.DefaultCohortHold, most, cohortMaxPasses,
			holds, s.Carriers-before.Carriers, s.Passes-before.Passes, s.Yielded-before.Yielded, s.Bounded-before.Bounded)
	}
	mu.Lock()
	var term, hold, giveBack time.Duration
	for _, tm := range terms {
		term, hold, giveBack = max(term, tm.last.Sub(tm.first)), max(hold, tm.hold), max(giveBack, tm.giveBack)
	}
	mu.Unlock()
	t.Logf("yield=%v: turnstile side while the peer ran: %d grants of its node; longest term (first holder's grant to last holder's release) %.1f ms, longest hold %.1f ms, longest give-back (a release that waits for the node's deletion) %.1f ms",
		yield, len(terms), msOf(term), msOf(hold), msOf(giveBack))
	if pw, n := longestPeerWait(sighted, terms); n > 0 {
		t.Logf("yield=%v: %d peer nodes queued behind a turnstile node; the longest wait one had as a watcher saw it, from its creation to that node's deletion, %.1f ms: %.1f ms before that node's grant, %.1f ms of its term, %.1f ms from its last release to the deletion seen (the rest of the peer's longest wait is the peer's own create, notification and listing)",
			yield, n, msOf(pw.total), msOf(pw.beforeGrant), msOf(pw.term), msOf(pw.giveBack))
	}
}

// sightings are when a watcher of a lock path, on a session of its own,
// first saw each child there and first saw it gone: a listing with a
// watch, again at each change, so a sighting is late by a notification
// and a listing at most.
type sightings struct {
	first, gone map[string]time.Time
	err         error
}

// watchChildren keeps the sightings of p's children until done is
// closed; stop waits for that and returns them, or the error that ended
// the watching.
func watchChildren(conn *zk.Conn, p string, done <-chan struct{}) (s *sightings, stop func() error) {
	s = &sightings{first: map[string]time.Time{}, gone: map[string]time.Time{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		var prev []string
		for {
			children, _, ch, err := conn.ChildrenW(p)
			now := time.Now()
			if err != nil {
				s.err = err
				return
			}
			for _, c := range children {
				if _, ok := s.first[c]; !ok {
					s.first[c] = now
				}
			}
			for _, c := range prev {
				if _, ok := s.gone[c]; !ok && !slices.Contains(children, c) {
					s.gone[c] = now
				}
			}
			prev = children
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	})
	return s, func() error { wg.Wait(); return s.err }
}

// peerWait is the wait of one peer node behind a turnstile node, as the
// sightings and the turnstile holders saw it.
type peerWait struct {
	total, beforeGrant, term, giveBack time.Duration
}

// longestPeerWait finds, among the peer nodes sighted whose predecessor
// is a turnstile node of terms, the one that waited longest from its
// creation to its predecessor's deletion; n is how many there were.
func longestPeerWait(s *sightings, terms map[string]*cohortTerm) (longest peerWait, n int) {
	for name, created := range s.first {
		if _, ours := terms[name]; ours {
			continue
		}
		node, ok := queue.Parse(name)
		if !ok {
			continue
		}
		pred, found := "", false
		var predSeq = node.Seq
		for other := range s.first {
			o, ok := queue.Parse(other)
			if ok && o.Seq < node.Seq && (!found || o.Seq > predSeq) {
				pred, predSeq, found = other, o.Seq, true
			}
		}
		tm, ours := terms[pred]
		gone, deleted := s.gone[pred]
		if !found || !ours || !deleted {
			continue
		}
		n++
		// The three parts add up to the total: each sighting may be late
		// by a notification and a listing, so each instant is kept
		// between the one before and the deletion seen.
		granted := clampTime(tm.first, created, gone)
		released := clampTime(tm.last, granted, gone)
		w := peerWait{total: gone.Sub(created), beforeGrant: granted.Sub(created), term: released.Sub(granted), giveBack: gone.Sub(released)}
		if w.total > longest.total {
			longest = w
		}
	}
	return longest, n
}

// cohortTerm is one grant of a cohort's node as its holders saw it: the
// first holder's grant, the last holder's release, the longest hold, and
// the longest release (a pass returns at once; the last holder's waits
// for the node's deletion).
type cohortTerm struct {
	first, last    time.Time
	hold, giveBack time.Duration
}

// add takes one hold of the grant (nil: none yet), from start to end, its
// release taking release.
func (c *cohortTerm) add(start, end time.Time, release time.Duration) *cohortTerm {
	if c == nil {
		c = &cohortTerm{first: start, last: end}
	}
	if start.Before(c.first) {
		c.first = start
	}
	if end.After(c.last) {
		c.last = end
	}
	c.hold, c.giveBack = max(c.hold, end.Sub(start)), max(c.giveBack, release)
	return c
}

// clampTime is t, or lo if t is before lo, or hi if after hi.
func clampTime(t, lo, hi time.Time) time.Time {
	switch {
	case t.Before(lo):
		return lo
	case t.After(hi):
		return hi
	}
	return t
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
