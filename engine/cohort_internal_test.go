package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/queue"
)

// A local pass asks the watchdog what a grant asks: the carrier admitted in
// the trusted session, not lost, and the deadline not passed, by the clock
// read then. A deadline passed before the timer ran ends trust there, and
// loses the carrier, as admit does.
func TestCohortPassAsksTheWatchdog(t *testing.T) {
	var clock fakeClock
	var lapses []bool
	tr := newTestTrust(&clock, &lapses)
	defer tr.stop()
	tr.handshake(0, 0x10, hourMs)
	carrier, stranger := &Lease{}, &Lease{}
	if !tr.admit(carrier, 0x10) {
		t.Fatal("carrier not admitted")
	}
	if ok, _ := tr.vouches(carrier); !ok {
		t.Fatal("no pass under a trusted carrier")
	}
	if ok, _ := tr.vouches(stranger); ok {
		t.Fatal("a pass under a lease the watchdog never admitted")
	}
	clock.set(48 * time.Minute) // the deadline; the timer has not run
	if ok, _ := tr.vouches(carrier); ok {
		t.Fatal("a pass at the deadline")
	}
	if !errors.Is(carrier.Err(), ErrLost) || !tr.lapsed {
		t.Fatalf("deadline passed unnoticed: carrier err %v, lapsed %v; want it lost and trust ended", carrier.Err(), tr.lapsed)
	}
}

// A downgrade's read node takes the number of the node it comes from, so
// that node may not pass on: the Acquire of a borrowed number seals the
// cohorts of its path, and the holder's release gives the node back with
// the waiters still queued. On a real server the cohort's watch sees the
// read node too and yields (TestCohortDowngradeEndsThePasses); this is
// what holds where there is no watch to fire, as in the simulator's
// client.
func TestCohortBorrowedNumberSealsTheNode(t *testing.T) {
	cfg, err := Config{Servers: []string{"127.0.0.1:1"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(cfg) // never started: Acquire only queues its command
	c := e.cohorts.find(e, "/p", Request{Path: "/p", Kind: queue.KindWrite, Cohort: true}, true)
	carrier := &Lease{eng: e, path: "/p", node: "/p/_c_x-__WRIT__0000000001"}
	c.carrier, c.holder, c.watchKnown = carrier, c.view(carrier, 0), true
	c.push(&waiter{fut: newFuture[*Lease]()})
	if tr := c.next(true, 0); tr.waiter == nil {
		t.Fatal("no pass to the waiter before the downgrade: the test's cohort is wrong")
	}
	c.holder = c.view(carrier, c.passes)
	c.push(&waiter{fut: newFuture[*Lease]()})

	read := Request{Path: "/p", Kind: queue.KindRead, Seq: "0000000001",
		Decide: func(*queue.Listing, string) queue.Decision { return queue.Decision{Holds: true} }}
	e.Acquire(context.Background(), read)
	c.holder = nil
	tr := c.next(true, 0)
	if tr.waiter != nil || tr.back != carrier || tr.start == nil {
		t.Fatalf("after a downgrade's Acquire: pass to a waiter %v, node back %v, next node asked %v; want the node back and the waiter queued on a node of its own",
			tr.waiter != nil, tr.back == carrier, tr.start != nil)
	}
	tr.start.cancel()
}

// A holder that lets go while the node is being lost is told of the loss
// as a lease of the loop is: its Lost closes and Err reports it, as its
// release does. The loop forgets a lost lease in the watchdog (so the
// release finds it untrusted and gives the node back, with no pass) before
// it marks it lost; the carrier's follower then finds the node given back
// already, and only the release's outcome can tell the holder.
func TestCohortHolderReleasingDuringTheLossIsLost(t *testing.T) {
	cfg, err := Config{Servers: []string{"127.0.0.1:1"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(cfg) // never started: the test plays the loop's part
	defer e.trust.stop()
	e.trust.handshake(e.trust.clock(), 0x10, hourMs)
	c := e.cohorts.find(e, "/p", Request{Path: "/p", Kind: queue.KindMutex, Cohort: true}, true)
	carrier := &Lease{eng: e, id: 1, path: "/p", node: "/p/_c_x-lock-0000000001"}
	if !e.trust.admit(carrier, 0x10) || !carrier.followLoss(func(cause error) { c.lost(carrier, cause) }) {
		t.Fatal("the test's carrier was not admitted")
	}
	held := c.view(carrier, 0)
	c.carrier, c.holder, c.watchKnown = carrier, held, true
	c.push(&waiter{fut: newFuture[*Lease]()})

	e.trust.forget(carrier) // the loop's step that loses the contender
	released := held.ReleaseAsync()
	carrier.markLost(ErrLost) // the loop carrying that step out
	for _, ev := range e.inbox.Drain(nil) {
		cmd, ok := ev.(input.Command)
		if !ok {
			continue // the watchdog's news
		}
		switch cmd := cmd.Payload.(type) {
		case releaseCmd: // the loop refuses a lost lease's release with its loss
			cmd.fut.resolve(struct{}{}, cmd.lease.Err())
		case acquireCmd: // the next waiter's node
			cmd.fut.resolve(nil, ErrClosed)
		}
	}
	if _, err := released.wait(); !errors.Is(err, ErrLost) {
		t.Fatalf("release during the loss: %v, want ErrLost", err)
	}
	select {
	case <-held.Lost():
	default:
		t.Fatalf("the release reported the loss, but the lease's Lost is open (Err %v)", held.Err())
	}
	if !errors.Is(held.Err(), ErrLost) {
		t.Fatalf("lease's Err %v, want ErrLost", held.Err())
	}
}
