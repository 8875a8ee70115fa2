package engine

import (
	"errors"
	"testing"
	"time"
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
	if !tr.vouches(carrier) {
		t.Fatal("no pass under a trusted carrier")
	}
	if tr.vouches(stranger) {
		t.Fatal("a pass under a lease the watchdog never admitted")
	}
	clock.set(48 * time.Minute) // the deadline; the timer has not run
	if tr.vouches(carrier) {
		t.Fatal("a pass at the deadline")
	}
	if !errors.Is(carrier.Err(), ErrLost) || !tr.lapsed {
		t.Fatalf("deadline passed unnoticed: carrier err %v, lapsed %v; want it lost and trust ended", carrier.Err(), tr.lapsed)
	}
}
