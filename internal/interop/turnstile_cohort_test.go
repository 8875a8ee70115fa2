package interop_test

import (
	"errors"
	"path"
	"path/filepath"
	"slices"
	"sync"
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
// YieldToOthers: the times are figures, not assertions.
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
				if err := l.Release(ctx); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	eventually(t, ctx, "turnstile passing", func() bool { return eng.CohortStats().Passes > before.Passes })

	pr, err := start(ctx, interop.PeerConfig{Connect: zookeeper(t), Path: p, Recipe: "mutex", Workers: 1,
		Iterations: iterations, Hold: time.Millisecond, Witness: witness, Timeout: peerTimeout, Bench: true})
	if err != nil {
		close(peerDone)
		workers.Wait()
		t.Fatal(err)
	}
	res := waitAll(t, pr)
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
}
