package engine

import (
	"sync"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// Many producers put while the consumer drains in batches: every event
// arrives exactly once and each producer's events keep their order.
func TestInboxLosesNothingAndKeepsOrderPerProducer(t *testing.T) {
	const producers, each = 8, 5000
	in := newInbox()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				in.Put(input.TimerFired{ID: uint64(p)<<32 | uint64(i)})
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	next := make([]uint64, producers)
	var buf []input.Event
	total := 0
	consume := func() {
		buf = in.Drain(buf)
		for _, e := range buf {
			id := e.(input.TimerFired).ID
			p, i := id>>32, id&(1<<32-1)
			if i != next[p] {
				t.Fatalf("producer %d: got event %d, want %d", p, i, next[p])
			}
			next[p]++
			total++
		}
	}
	for {
		select {
		case <-in.Wake():
			consume()
			continue
		case <-done:
		}
		break
	}
	consume() // whatever was put after the last signal
	if total != producers*each {
		t.Fatalf("received %d events, want %d", total, producers*each)
	}
	if n := in.Len(); n != 0 {
		t.Fatalf("Len after draining everything = %d", n)
	}
}

// Put must never block, even when nobody drains: it runs on the ZooKeeper
// client's receive goroutine.
func TestInboxPutNeverBlocks(t *testing.T) {
	in := newInbox()
	finished := make(chan struct{})
	go func() {
		for range 100000 {
			in.Put(input.WatchFired{Type: input.NodeDeleted, Path: "/x"})
		}
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		t.Fatal("Put blocked with no consumer")
	}
	if n := in.Len(); n != 100000 {
		t.Fatalf("Len = %d, want 100000", n)
	}
	got := in.Drain(nil)
	if len(got) != 100000 {
		t.Fatalf("drained %d", len(got))
	}
}
