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
	nodes, foreign := parseNodes(children)
	return &Listing{children: children, nodes: nodes, foreign: foreign, wrapped: wrapped(nodes)}
}

// listingOf is the Listing of nodes already parsed, sorting a copy only if
// they are out of queue order. It serves the predicates that take a slice.
func listingOf(nodes []Node) *Listing {
	if !slices.IsSortedFunc(nodes, compare) {
		nodes = slices.Clone(nodes)
		sortNodes(nodes)
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
//
// A nil Listing lists nothing: no nodes, and every predicate reports self
// Missing.
func (l *Listing) Wrapped() bool { return l != nil && l.wrapped }

// Nodes returns the lock nodes in queue order (by sequence number, then name). The slice is
// shared: do not change it.
func (l *Listing) Nodes() []Node {
	if l == nil {
		return nil
	}
	return l.nodes
}

// Foreign returns, in listing order, the children that are not lock nodes
// of any known family: no predicate sees them. The slice is shared: do not
// change it.
func (l *Listing) Foreign() []string {
	if l == nil {
		return nil
	}
	return l.foreign
}

// Index returns the position of the lock node named name in [Listing.Nodes],
// or -1 if there is none: the name is not listed, or is no lock node. It
// costs a parse of name and a binary search.
func (l *Listing) Index(name string) int {
	if l == nil {
		return -1
	}
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
	if l == nil {
		return false
	}
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

// Mutex decides, on this listing, for an exclusive lock: self holds iff no lock node of any
// kind queues before it, and otherwise watches the one just before it. This
// is Curator's InterProcessMutex (StandardLockInternalsDriver with one
// lease), go-zookeeper's Lock and kazoo's WriteLock; it is [Semaphore] with
// one permit.
func (l *Listing) Mutex(self string) Decision { return l.Semaphore(self, 1) }

// Semaphore decides, on this listing, for a semaphore of n permits: self holds iff fewer than
// n lock nodes queue before it. Otherwise it watches the node n places
// ahead, the holder-to-be whose slot self will inherit: each such node is
// watched by exactly one waiter, so a release wakes one. This is Curator's
// StandardLockInternalsDriver with n leases (InterProcessSemaphore).
//
// One watch cannot see every slot: when a node between the watched one and
// self leaves first, self may be entitled to a slot it is not told about
// until the watched node leaves too. That delays, never deadlocks, because
// the watched node sorts before self and is itself served in turn.
//
// n below 1 is treated as 1: a semaphore no one can hold would strand every
// contender with nothing to watch.
//
// Curator's InterProcessSemaphoreV2 ("lease-" nodes) works differently: it
// serialises acquirers through a mutex at "<path>/locks" and admits while
// "<path>/leases" has at most n children. Its lease nodes parse and count
// here, but a V2 client does not follow this predicate.
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

// Write decides, on this listing, for the write side of a read-write lock: self holds iff no
// lock node queues before it, and otherwise watches the one just before it,
// whatever its kind. This is Curator's InterProcessReadWriteLock write lock
// (a mutex over every "__READ__" and "__WRIT__" node) and kazoo's WriteLock.
//
// The one exception is a read node carrying self's own sequence number:
// that is the read node self's owner creates to downgrade (Curator 5.5,
// CURATOR-621), which may sort before self by name. It never blocks self.
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

// Read decides, on this listing, for the read side of a read-write lock: self holds iff no
// exclusive node (anything but a read node) has a lower sequence number, so
// readers share. Otherwise it watches the last such node before it: the
// writer whose release is the earliest moment self could hold. It never
// watches a reader, and never a node queued after it, which would be waiting
// for self (the deadlock kazoo fixed for issue #649).
//
// Curator's own read predicate asks the same question but watches the first
// writer in the queue rather than the last one before the reader; when that
// one goes, every waiting reader wakes, even those still behind another
// writer. Watching the
// nearest one is the ZooKeeper shared-lock recipe and kazoo's choice.
//
// An exclusive node with self's own sequence number does not block: that is
// the write node of a downgrading owner, whose read node (self) was created
// with the writer's number precisely so it would be let in (Curator 5.5,
// CURATOR-621). Before 5.5, Curator let such a reader in by asking whether
// the current thread owned the write lock, which no listing can show.
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

// Latch decides, on this listing, for a leader election: self leads iff no latch node
// queues before it, and otherwise watches the latch node just before it, so
// that a leader's departure wakes its successor only. This is Curator's
// LeaderLatch.
//
// Only latch nodes are candidates: any other node under the election path
// (an observer's, say) neither blocks nor is watched. Curator agrees: it
// orders the children by the text after "latch-", which for any other name
// is the whole name, and that sorts after every ten-digit sequence.
//
// The scan back passes over the nodes
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
