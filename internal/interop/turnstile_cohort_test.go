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
// deletion): the peer's wait is a term and a give-back, plus the peer's
// own listing after the deletion and, before the term, the handoff into
// the node.
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

	pr, err := start(ctx, interop.PeerConfig{Connect: zookeeper(t), Path: p, Recipe: "mutex", Workers: 1,
		Iterations: iterations, Hold: time.Millisecond, Witness: witness, Timeout: peerTimeout, Bench: true})
	if err != nil {
		close(peerDone)
		workers.Wait()
		t.Fatal(err)
	}
	res := waitAll(t, pr)
	timing.Store(false)
	close(peerDone)
	workers.Wait()
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

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
