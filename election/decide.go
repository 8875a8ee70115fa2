package election

import (
	"github.com/turnstile-go/turnstile/queue"
)

// The engine hands a recipe each listing of the election path parsed once,
// and the same listing to every candidate and observer of the reply.

// decideCandidate is the engine.Decider of a candidate: Curator's
// LeaderLatch. The lowest latch node leads; any other watches the latch
// node just ahead of it.
//
// Next holds when that node was created before self: once it has led and is
// gone, no candidate can be ahead of self (sequence numbers only grow and
// latch nodes never borrow one), so when this engine deletes it, self may
// be elected on the deletion's reply.
func decideCandidate(l *queue.Listing, self string) queue.Decision {
	d := l.Latch(self)
	out := queue.Decision{Holds: d.Holds, Watch: d.Watch, Missing: d.Missing}
	if d.Watch != "" {
		nodes := l.Nodes()
		out.Next = nodes[l.Index(d.Watch)].Seq < nodes[l.Index(self)].Seq
	}
	return out
}

// leaderOf returns the leader among nodes, sorted in queue order, or "",
// and what an observer of the election watches until the next change: the
// leader's node, since while it leads its departure is the only way
// leadership can pass (a later candidate never sorts before it); with no
// leader, the children, since the next candidate to arrive will lead.
//
// An observer never holds and is never Missing: its own node only gives it
// a place from which to watch, and the watch works as well without it
// should someone delete it.
func leaderOf(nodes []queue.Node) (leader string, d queue.Decision) {
	for _, n := range nodes {
		if n.Kind == queue.KindLatch {
			return n.Name, queue.Decision{Watch: n.Name}
		}
	}
	return "", queue.Decision{WatchChildren: true}
}
