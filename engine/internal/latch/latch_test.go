package latch

import "testing"

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A latch's channel is open until Fire and closed after, whether it was
// asked for before Fire or only after; Fire twice closes it once.
func TestLatch(t *testing.T) {
	var asked Latch
	done := asked.Done()
	if isClosed(done) || asked.Fired() {
		t.Fatal("a new latch has fired")
	}
	asked.Fire()
	asked.Fire()
	if !isClosed(done) || !asked.Fired() || asked.Done() != done {
		t.Fatal("a latch asked for before Fire: its channel is not the one closed")
	}

	var late Latch
	late.Fire()
	if !isClosed(late.Done()) {
		t.Fatal("a latch asked for after Fire: its channel is open")
	}
	var never Latch
	never.Fire()
	if never.ch != nil {
		t.Fatal("Fire made a channel no one asked for")
	}
}
