package election

import (
	"fmt"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// Pure tests of what candidates and observers decide from one listing.

func named(k queue.Kind, seq int) string {
	return queue.ProtectedPrefix(fmt.Sprintf("00000000-0000-4000-8000-%012d", seq), k) + queue.FormatSeq(int64(seq))
}

func latch(seq int) string    { return named(queue.KindLatch, seq) }
func observer(seq int) string { return named(queue.KindObserver, seq) }

func TestCandidateDecision(t *testing.T) {
	mutex := named(queue.KindMutex, 1)
	children := []string{latch(7), observer(2), latch(4), mutex, latch(9), observer(8)}
	for _, tc := range []struct {
		self string
		want engine.Decision
	}{
		{latch(4), engine.Decision{Holds: true}}, // the lowest latch node, whatever sorts before it
		{latch(7), engine.Decision{Watch: latch(4), Next: true}},
		{latch(9), engine.Decision{Watch: latch(7), Next: true}}, // its predecessor, past an observer
		{latch(5), engine.Decision{Missing: true}},
		{observer(2), engine.Decision{Missing: true}}, // an observer is no candidate
	} {
		if got := decideCandidate(queue.NewListing(children), tc.self); got != tc.want {
			t.Errorf("decide(%s) = %+v, want %+v", tc.self, got, tc.want)
		}
	}
}

func TestObserverDecision(t *testing.T) {
	for _, tc := range []struct {
		children []string
		leader   string
		want     engine.Decision
	}{
		{[]string{observer(1), latch(5), latch(3)}, latch(3), engine.Decision{Watch: latch(3)}},
		{[]string{named(queue.KindMutex, 1), latch(2)}, latch(2), engine.Decision{Watch: latch(2)}},
		// No candidate: the next to arrive leads, so watch them all.
		{[]string{observer(1), named(queue.KindMutex, 2), "foreign"}, "", engine.Decision{WatchChildren: true}},
		{nil, "", engine.Decision{WatchChildren: true}},
	} {
		nodes, _ := queue.Nodes(tc.children)
		leader, d := leaderOf(nodes)
		if leader != tc.leader || d != tc.want {
			t.Errorf("leaderOf(%v) = %q, %+v; want %q, %+v", tc.children, leader, d, tc.leader, tc.want)
		}
	}
}
