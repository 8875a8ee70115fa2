package engine

import "testing"

// A signal's channel is open until Fire and closed after, whether it was
// asked for before Fire or only after; Fire twice closes it once.
func TestSignal(t *testing.T) {
	var asked signal
	done := asked.Done()
	if closedChan(done) || asked.Fired() {
		t.Fatal("a new signal has fired")
	}
	asked.Fire()
	asked.Fire()
	if !closedChan(done) || !asked.Fired() || asked.Done() != done {
		t.Fatal("a signal asked for before Fire: its channel is not the one closed")
	}

	var late signal
	late.Fire()
	if !closedChan(late.Done()) {
		t.Fatal("a signal asked for after Fire: its channel is open")
	}
	var never signal
	never.Fire()
	if never.ch != nil {
		t.Fatal("Fire made a channel no one asked for")
	}
}
