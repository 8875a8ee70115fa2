package queue

import (
	"slices"
	"sort"
	"sync"
)

// Listing is one listing of a lock path's children, parsed and put in
// queue order once.
//
// One listing is handed to every contender that waited for it: on a busy
// path, thousands of them, and all of them again at every reconnect. If
// each parsed and sorted the children itself, one listing would cost
// O(n² log n) and stall whatever runs the contenders. A Listing does the
// work that depends on the listing alone once (parsing, sorting, and, on
// first use by a read-write predicate, one backward pass), and each
// contender's verdict then costs O(log n): a binary search for its own node
// and constant work.
//
// A Listing is never changed once built and is safe for concurrent use.
type Listing struct {
	children []string // as listed: never changed, never reordered
	nodes    []Node   // the lock nodes, in queue order
	foreign  []string // the other children, in listing order
	wrapped  bool     // see Wrapped

	foreignOnce   sync.Once
	foreignSorted []string // foreign, sorted for Has; built on first use

	exclusiveOnce sync.Once
	// lastExclusive[i] is the position of the last node before position i
	// that is not a read node, or -1: what a reader, and a writer looking
	// past its own downgrade, must wait for. It is built on first use, so
	// that a path with mutexes only never pays for it. (A position fits in
	// an int32: ZooKeeper numbers children with one.)
	lastExclusive []int32
}

// NewListing parses children, one listing of a lock path, and puts its lock
// nodes in queue order. The slice is kept as it is, not copied: the caller
// must not change it afterwards.
func NewListing(children []string) *Listing {
	nodes, foreign := Nodes(children)
	return &Listing{children: children, nodes: nodes, foreign: foreign, wrapped: wrapped(nodes)}
}

// listingOf is the Listing of nodes already parsed, sorting a copy only if
// they are out of queue order. It serves the predicates that take a slice.
func listingOf(nodes []Node) *Listing {
	if !slices.IsSortedFunc(nodes, compare) {
		nodes = slices.Clone(nodes)
		Sort(nodes)
	}
	return &Listing{nodes: nodes, wrapped: wrapped(nodes)}
}

// wrapAt is how far apart two sequence numbers of one listing must be for
// their order to be in doubt: half the int32 circle. ZooKeeper numbers a
// child with its parent's child version, a signed 32-bit counter that every
// create and delete of a child moves on, so after 2^31 changes of a path
// that never empties the numbers wrap from 2147483647 to -2147483648, and
// the newest node sorts first. Nodes alive together lie on an arc of the
// circle; while that arc is shorter than half of it, numeric order is
// creation order, unless the arc crosses the wrap, which makes the numbers
// at least half the circle apart.
const wrapAt = 1 << 31

func wrapped(nodes []Node) bool {
	return len(nodes) > 1 && nodes[len(nodes)-1].Seq-nodes[0].Seq >= wrapAt
}

// Wrapped reports whether the sequence numbers of this listing's lock nodes
// lie at least 2^31 apart: ZooKeeper's counter wrapped past 2^31-1 while
// nodes created before remained (or so many changes passed that nobody can
// tell which came first). Numeric order, which the predicates follow, is
// then not creation order: a node created after the wrap sorts first and
// would be let in beside the holder. Nothing should be granted on such a
// listing; once the nodes created before the wrap are gone, the order is
// sound again.
func (l *Listing) Wrapped() bool { return l.wrapped }

// Children returns the children as listed. The slice is shared: do not
// change it.
func (l *Listing) Children() []string { return l.children }

// Nodes returns the lock nodes in queue order (see [Less]). The slice is
// shared: do not change it.
func (l *Listing) Nodes() []Node { return l.nodes }

// Foreign returns, in listing order, the children that are not lock nodes
// of any known family: no predicate sees them. The slice is shared: do not
// change it.
func (l *Listing) Foreign() []string { return l.foreign }

// Index returns the position of the lock node named name in [Listing.Nodes],
// or -1 if there is none: the name is not listed, or is no lock node. It
// costs a parse of name and a binary search.
func (l *Listing) Index(name string) int {
	n, ok := Parse(name)
	if !ok {
		return -1
	}
	i, found := slices.BinarySearchFunc(l.nodes, n, compare)
	if !found {
		return -1
	}
	return i
}

// Has reports whether name is among the children, lock node or not, in
// O(log n).
func (l *Listing) Has(name string) bool {
	if l.Index(name) >= 0 {
		return true
	}
	l.foreignOnce.Do(func() {
		l.foreignSorted = slices.Clone(l.foreign)
		slices.Sort(l.foreignSorted)
	})
	_, found := slices.BinarySearch(l.foreignSorted, name)
	return found
}

// Mutex is [Mutex] over this listing.
func (l *Listing) Mutex(self string) Decision { return l.Semaphore(self, 1) }

// Semaphore is [Semaphore] over this listing.
func (l *Listing) Semaphore(self string, n int) Decision {
	i := l.Index(self)
	if i < 0 {
		return Decision{Missing: true}
	}
	n = max(n, 1)
	switch {
	case i < n:
		return Decision{Holds: true}
	case n == 1:
		return l.waitFor(i-1, i)
	}
	// One of the n-1 nodes between the watched one and self may still
	// hold when the watched one goes: never Next.
	return Decision{Watch: l.nodes[i-n].Name}
}

// Write is [Write] over this listing.
func (l *Listing) Write(self string) Decision {
	i := l.Index(self)
	if i < 0 {
		return Decision{Missing: true}
	}
	// Of the nodes sharing self's number, only read nodes (a downgrade's)
	// let self by; every node with a lower number blocks it.
	first := l.firstWithSeq(i)
	if j := l.lastExclusiveBefore(i); j >= first {
		return l.waitFor(j, i)
	}
	if first > 0 {
		return l.waitFor(first-1, i)
	}
	return Decision{Holds: true}
}

// Read is [Read] over this listing.
func (l *Listing) Read(self string) Decision {
	i := l.Index(self)
	if i < 0 {
		return Decision{Missing: true}
	}
	if j := l.lastExclusiveBefore(l.firstWithSeq(i)); j >= 0 {
		return l.waitFor(j, i)
	}
	return Decision{Holds: true}
}

// Latch is [Latch] over this listing. The scan back passes over the nodes
// of other kinds between two candidates: at most one observer per engine
// watching the election, so it is short.
func (l *Listing) Latch(self string) Decision {
	i := l.Index(self)
	if i < 0 || l.nodes[i].Kind != KindLatch {
		return Decision{Missing: true}
	}
	for j := i - 1; j >= 0; j-- {
		if l.nodes[j].Kind == KindLatch {
			return Decision{Watch: l.nodes[j].Name}
		}
	}
	return Decision{Holds: true}
}

// waitFor is the verdict for the node at position i, waiting on the one at
// position w, when nothing between them blocks it (see [Decision].Next).
func (l *Listing) waitFor(w, i int) Decision {
	watch := l.nodes[w]
	exclusive := watch.Kind == KindMutex || watch.Kind == KindWrite
	alone := (w == 0 || l.nodes[w-1].Seq != watch.Seq) && (w+1 == len(l.nodes) || l.nodes[w+1].Seq != watch.Seq)
	return Decision{Watch: watch.Name, Next: exclusive && alone && watch.Seq < l.nodes[i].Seq}
}

// firstWithSeq is the first position holding the sequence number of the
// node at position i. Numbers are shared only by a downgrade's pair, but a
// binary search keeps it O(log n) whatever the listing holds.
func (l *Listing) firstWithSeq(i int) int {
	seq := l.nodes[i].Seq
	return sort.Search(i, func(j int) bool { return l.nodes[j].Seq >= seq })
}

// lastExclusiveBefore is the position of the last node before position i
// that is not a read node, or -1.
func (l *Listing) lastExclusiveBefore(i int) int {
	l.exclusiveOnce.Do(func() {
		l.lastExclusive = make([]int32, len(l.nodes))
		last := int32(-1)
		for j, n := range l.nodes {
			l.lastExclusive[j] = last
			if n.Kind != KindRead {
				last = int32(j)
			}
		}
	})
	return int(l.lastExclusive[i])
}
