package engine

import (
	"context"
	"errors"
	"testing"
	"time"

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
	c := e.cohorts.find(e, "/p", Request{Path: "/p", Prefix: queue.WritePrefix, Cohort: true}, true)
	carrier := &Lease{eng: e, path: "/p", node: "/p/_c_x-__WRIT__0000000001"}
	c.carrier, c.holder, c.watchKnown = carrier, c.view(carrier, 0), true
	c.push(&waiter{fut: newFuture[*Lease]()})
	if tr := c.next(true, 0); tr.waiter == nil {
		t.Fatal("no pass to the waiter before the downgrade: the test's cohort is wrong")
	}
	c.holder = c.view(carrier, c.passes)
	c.push(&waiter{fut: newFuture[*Lease]()})

	read := Request{Path: "/p", Prefix: queue.ReadPrefix, Seq: "0000000001",
		Decide: func(*queue.Listing, string) Decision { return Decision{Holds: true} }}
	e.Acquire(context.Background(), read)
	c.holder = nil
	tr := c.next(true, 0)
	if tr.waiter != nil || tr.back != carrier || tr.start == nil {
		t.Fatalf("after a downgrade's Acquire: pass to a waiter %v, node back %v, next node asked %v; want the node back and the waiter queued on a node of its own",
			tr.waiter != nil, tr.back == carrier, tr.start != nil)
	}
	tr.start.cancel()
}
