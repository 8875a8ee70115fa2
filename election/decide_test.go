package election

import (
	"fmt"
	"testing"

	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// Pure tests of what candidates and observers decide from one listing.

func named(k queue.Kind, seq int) string {
	return nodename.Protected(fmt.Sprintf("00000000-0000-4000-8000-%012d", seq), k) + nodename.FormatSeq(int64(seq))
}

func latch(seq int) string    { return named(queue.KindLatch, seq) }
func observer(seq int) string { return named(queue.KindObserver, seq) }

func TestCandidateDecision(t *testing.T) {
	mutex := named(queue.KindMutex, 1)
	children := []string{latch(7), observer(2), latch(4), mutex, latch(9), observer(8)}
	for _, tc := range []struct {
		self string
		want queue.Decision
	}{
		{latch(4), queue.Decision{Holds: true}}, // the lowest latch node, whatever sorts before it
		{latch(7), queue.Decision{Watch: latch(4), Next: true}},
		{latch(9), queue.Decision{Watch: latch(7), Next: true}}, // its predecessor, past an observer
		{latch(5), queue.Decision{Missing: true}},
		{observer(2), queue.Decision{Missing: true}}, // an observer is no candidate
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
		want     queue.Decision
	}{
		{[]string{observer(1), latch(5), latch(3)}, latch(3), queue.Decision{Watch: latch(3)}},
		{[]string{named(queue.KindMutex, 1), latch(2)}, latch(2), queue.Decision{Watch: latch(2)}},
		// No candidate: the next to arrive leads, so watch them all.
		{[]string{observer(1), named(queue.KindMutex, 2), "foreign"}, "", queue.Decision{WatchChildren: true}},
		{nil, "", queue.Decision{WatchChildren: true}},
	} {
		nodes := queue.NewListing(tc.children).Nodes()
		leader, d := leaderOf(nodes)
		if leader != tc.leader || d != tc.want {
			t.Errorf("leaderOf(%v) = %q, %+v; want %q, %+v", tc.children, leader, d, tc.leader, tc.want)
		}
	}
}
