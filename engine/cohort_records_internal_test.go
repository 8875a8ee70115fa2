package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/cohort"
	"github.com/turnstile-go/turnstile/internal/future"
	"github.com/turnstile-go/turnstile/queue"
)

// Adversarial checks of the cohort shell's claims: a node record gone
// (lost, given back, its slot reused) is never acted on; a loss before the
// grant reaches the shell strands nobody; a release racing the carrier's
// loss never leaves a holder unlost on a lost node.

// cohortEngineWith is cohortEngine with cohorting bounds of the test's:
// MaxHold an hour, so that no bound depends on how fast the test runs.
func cohortEngineWith(t testing.TB, c CohortConfig) *Engine {
	cfg, err := Config{Servers: []string{"127.0.0.1:1"}, Cohort: c}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(cfg)
	e.rt.goroutine = func(func()) {}
	e.rt.afterDone = context.AfterFunc // as a started engine's: a waiter's context is followed
	e.trust.Handshake(e.trust.clock(), 0x10, hourMs)
	t.Cleanup(func() { e.trust.stop() })
	return e
}

func holdsAlways(*queue.Listing, string) queue.Decision { return queue.Decision{Holds: true} }

// seated counts the node records of e's cohorts, and those seated in a slot.
func seated(e *Engine) (records, inSlots int) {
	cs := &e.cohorts
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for n := range cs.nodes.All() {
		records++
		if n.slot != 0 && cs.nodes.Seated(n.slot) == n {
			inSlots++
		}
	}
	return records, inSlots
}

// The carrier lost between its admission (the loop) and the cohort's
// hearing of the grant: the loss finds the node not granted yet and leaves
// it; the grant then finds the lease lost. Nobody is handed the lost node,
// its record goes, and the waiters, in their order, queue the next node.
func TestCohortLossBeforeTheGrantReachesTheShell(t *testing.T) {
	e := cohortEngineWith(t, CohortConfig{MaxHold: time.Hour})
	req := Request{Path: "/p", Kind: queue.KindMutex, Cohort: true, Decide: holdsAlways}
	first := e.Acquire(context.Background(), req)
	second := e.Acquire(context.Background(), req)
	acquires, _ := commands(e)
	if len(acquires) != 1 {
		t.Fatalf("%d acquisitions, want 1", len(acquires))
	}
	cmd := acquires[0]
	l := &Lease{eng: e, id: carrierIDs | cmd.node, path: cmd.req.Path, node: cmd.req.Path + "/_c_x-lock-0000000001", token: 1 << cohort.PassBits}
	if !e.trust.admit(l, 0x10) {
		t.Fatal("not admitted")
	}
	e.LapseTrust() // the watchdog loses it, under its lock, before the loop tells the cohort
	if !errors.Is(l.Err(), ErrLost) {
		t.Fatalf("carrier err %v", l.Err())
	}
	e.trust.Handshake(e.trust.clock(), 0x10, hourMs) // trust back for the next grant
	e.acquired(cmd, l, nil)
	if _, ok, _ := first.Result(); ok {
		t.Fatal("the first waiter was handed a node lost before its grant reached the cohort")
	}
	if n := e.cohortNode(cmd.node); n != nil {
		t.Fatalf("the lost node's record stays: %+v", n)
	}
	acquires, releases := commands(e)
	if len(acquires) != 1 || len(releases) != 0 {
		t.Fatalf("after the lost grant: %d acquisitions, %d releases; want the next node asked for, nothing given back", len(acquires), len(releases))
	}
	grantNode(t, e, acquires[0], 2)
	h := resolved(t, first)
	if _, ok, _ := second.Result(); ok || h.Err() != nil || h.carrier() == nil {
		t.Fatalf("first waiter after the next grant: err %v, carrier %v; second resolved %v", h.Err(), h.carrier(), ok)
	}
	if records, inSlots := seated(e); records != 1 || inSlots != 1 {
		t.Fatalf("%d node records, %d seated; want the one held", records, inSlots)
	}
}

// Inputs about a node gone, stepped with its stale record as the hint
// (the listing its AskWatch asked, its linger timer, its watch firing),
// while the slot it had seats the next node: they change nothing of the
// next node. Under YieldToOthers a foreign child in that stale listing,
// taken for the new node's, would give the node back instead of passing.
func TestCohortStaleNodeInputsLeaveTheSlotsNextNode(t *testing.T) {
	e := cohortEngineWith(t, CohortConfig{MaxHold: time.Hour, YieldToOthers: true})
	carrierA, stale, req := holding(t, e, "/p", queue.KindMutex, 1)
	attemptA := carrierA.id &^ carrierIDs
	nodeA := e.cohortNode(attemptA)
	next := e.Acquire(context.Background(), req)

	e.LapseTrust() // node A lost, its holder with it
	e.trust.Handshake(e.trust.clock(), 0x10, hourMs)
	if !errors.Is(stale.Err(), ErrLost) || e.cohortNode(attemptA) != nil {
		t.Fatalf("holder of the lost node: err %v; record kept %v", stale.Err(), e.cohortNode(attemptA) != nil)
	}
	acquires, _ := commands(e)
	if len(acquires) != 1 {
		t.Fatalf("%d acquisitions, want 1", len(acquires))
	}
	carrierB := grantNode(t, e, acquires[0], 2)
	held := resolved(t, next)
	nodeB := e.cohortNode(acquires[0].node)
	if nodeB.slot != nodeA.slot {
		t.Fatalf("slots %d then %d: want the slot reused, so that this test tells", nodeA.slot, nodeB.slot)
	}
	third := e.Acquire(context.Background(), req) // asks B's listing (YieldToOthers)
	e.cohorts.stepNode(e, &cohort.Input{Kind: cohort.Watched, Attempt: nodeB.attempt, Self: "_c_x-lock-0000000002",
		Children: []string{"_c_x-lock-0000000002"}}, nodeB, nil, nil) // nobody else on B's
	fired := make(chan zk.Event)
	close(fired)
	e.cohorts.stepNode(e, &cohort.Input{Kind: cohort.Watched, Attempt: attemptA, Self: "_c_x-lock-0000000001",
		Children: []string{"_c_x-lock-0000000001", "_c_x-lock-0000000009"}}, nodeA, nil, fired)
	e.cohorts.stepNode(e, &cohort.Input{Kind: cohort.Wake, Attempt: attemptA, Timer: true}, nodeA, nil, nil)
	e.cohorts.stepNode(e, &cohort.Input{Kind: cohort.Wake, Attempt: attemptA}, nodeA, nil, nil)
	if _, others := e.cohorts.m.Known("/p"); others || e.CohortSeesOthers("/p") {
		t.Fatal("node B takes node A's stale listing or watch for its own")
	}
	if a, r := commands(e); len(a)+len(r) != 0 || held.Err() != nil || held.carrier() != carrierB {
		t.Fatalf("after the stale inputs: %d commands, holder err %v; want nothing sent, B held", len(a)+len(r), held.Err())
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	h3 := resolved(t, third)
	if a, r := commands(e); len(a)+len(r) != 0 || h3.Token() != carrierB.Token()+1 {
		t.Fatalf("B's holder's release: %d commands, token %d after %d; want a pass", len(a)+len(r), h3.Token(), carrierB.Token())
	}
	// The stale holder's release finds B in its slot, and is no holder's.
	if _, ok, err := stale.ReleaseAsync().Result(); !ok || !errors.Is(err, ErrLost) {
		t.Fatalf("stale release: resolved %v, err %v", ok, err)
	}
	if h3.Err() != nil || h3.carrier() != carrierB {
		t.Fatalf("B's holder after the stale release: err %v", h3.Err())
	}
}

// A holder's release racing its carrier's loss, on two goroutines, the
// loss the watchdog's (under its lock) or the loop's (forgotten, then
// marked): whichever comes first, every lease handed on the lost node is
// lost once the loss returns, the release resolves, and the waiter left is
// either handed a lost lease or queued for the next node, never stranded.
func TestCohortReleaseRacingTheCarriersLoss(t *testing.T) {
	const rounds = 300
	outcomes := map[string]int{}
	for i := range rounds {
		e := cohortEngineWith(t, CohortConfig{MaxHold: time.Hour})
		carrier, held, req := holding(t, e, "/p", queue.KindMutex, 1)
		waiter := e.Acquire(context.Background(), req)
		var wg sync.WaitGroup
		var released *Future[struct{}]
		start := make(chan struct{})
		wg.Go(func() { <-start; released = held.ReleaseAsync() })
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				e.LapseTrust()
			} else {
				e.trust.forget(carrier)
				carrier.markLost(ErrLost)
			}
		})
		close(start)
		wg.Wait()
		acquires, releases := commands(e)
		for _, r := range releases { // the loop refuses a lost lease's release with its loss
			e.released(r, r.lease.Err())
		}
		if _, ok, err := released.Result(); !ok || err != nil && !errors.Is(err, ErrLost) {
			t.Fatalf("round %d: release resolved %v, err %v", i, ok, err)
		}
		select {
		case <-held.Lost():
		default:
			if _, _, err := released.Result(); err != nil {
				t.Fatalf("round %d: release reported %v, Lost open", i, err)
			}
		}
		h, ok, err := waiter.Result()
		switch {
		case ok && err == nil:
			select {
			case <-h.Lost():
			default:
				t.Fatalf("round %d: the waiter holds a lease on the lost node, Lost open (err %v)", i, h.Err())
			}
			if len(acquires) != 0 {
				t.Fatalf("round %d: handed the lost node and queued another: %d acquisitions", i, len(acquires))
			}
			outcomes["passed, then lost"]++
		case ok:
			t.Fatalf("round %d: waiter failed: %v", i, err)
		case len(acquires) != 1:
			t.Fatalf("round %d: the waiter waits, with %d acquisitions posted: stranded", i, len(acquires))
		default:
			outcomes["queued for the next node"]++
		}
		for _, l := range e.CohortLeases() {
			t.Fatalf("round %d: the cohorts still list holder %#x (err %v)", i, l.id, l.Err())
		}
		if records, inSlots := seated(e); inSlots != 0 || records != len(acquires) {
			t.Fatalf("round %d: %d node records (%d seated), want only the %d pending", i, records, inSlots, len(acquires))
		}
		e.trust.stop()
	}
	t.Logf("outcomes over %d rounds: %v", rounds, outcomes)
}

// A node given up while its acquisition was in flight, granted all the
// same, goes back with no release waiting on it: its future is nil, and
// a failed deletion is logged, not resolved. The same when its lease is
// already lost as it goes back (resolved at once, on the caller).
func TestCohortGiveBackWithNobodyWaiting(t *testing.T) {
	for _, lostFirst := range []bool{false, true} {
		e := cohortEngineWith(t, CohortConfig{MaxHold: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		f := e.Acquire(ctx, Request{Path: "/p", Kind: queue.KindMutex, Cohort: true, Decide: holdsAlways})
		acquires, _ := commands(e)
		cancel()
		if _, err := future.Await(f.impl()); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter: %v", err)
		}
		cmd := acquires[0]
		l := &Lease{eng: e, id: carrierIDs | cmd.node, path: cmd.req.Path, node: cmd.req.Path + "/_c_x-lock-0000000001", token: 1 << cohort.PassBits}
		if !e.trust.admit(l, 0x10) {
			t.Fatal("not admitted")
		}
		if lostFirst {
			// lost after the grant's reply, before the shell gives it back: the
			// grant sees it lost and takes the record; nothing is sent.
			e.LapseTrust()
		}
		e.acquired(cmd, l, nil)
		_, releases := commands(e)
		if records, _ := seated(e); records != 0 {
			t.Fatalf("lost first %v: %d node records left", lostFirst, records)
		}
		if lostFirst {
			if len(releases) != 0 {
				t.Fatalf("a lost node given back: %d releases", len(releases))
			}
			continue
		}
		if len(releases) != 1 || releases[0].fut != nil || releases[0].passed != nil {
			t.Fatalf("%d releases; want the node given back with no future", len(releases))
		}
		e.released(releases[0], ErrNoAuth) // logged, nothing resolved: no panic
	}
}
