package queue

// Decision is a predicate's verdict for one contender on one listing.
type Decision struct {
	Holds bool // self holds the lock
	// Watch is, when !Holds, the one child whose departure may let self in.
	// It always sorts before self. It is "" only when Missing.
	Watch   string
	Missing bool // self is not among the nodes: its node is gone, create it again
	// Next reports that Watch is the last node of this listing that can
	// keep self out: once Watch has held the lock and is gone, self holds,
	// with no need to list again. It is set only when Watch is exclusive (a
	// mutex or write node, kazoo's "__lock__" included) and no other node
	// shares its sequence number. An exclusive node holds only when every
	// node before it is gone (but, for a write node, its own downgrade's
	// read node, which shares its number: hence the second condition), and
	// every node between Watch and self is one self's predicate lets by.
	//
	// What no listing can show is a node created after it without the
	// sequential flag, which may take a number at or below Watch's: a
	// downgrade's read node takes its writer's. Only whoever creates such
	// nodes can tell, so Next holds only if nobody has since this listing.
	Next bool
}

// Mutex decides for an exclusive lock: self holds iff no lock node of any
// kind queues before it, and otherwise watches the one just before it. This
// is Curator's InterProcessMutex (StandardLockInternalsDriver with one
// lease), go-zookeeper's Lock and kazoo's WriteLock; it is [Semaphore] with
// one permit.
//
// Like every predicate, Mutex accepts nodes in any order (it sorts a copy if
// they are not in [Sort] order) and ignores nothing among them: pass only
// parsed lock nodes, as [Nodes] returns them. self is the contender's own
// node name. Each call costs O(n) at least; to decide for many contenders
// on one listing, build a [Listing] once and ask its methods, which give
// the same verdicts.
func Mutex(nodes []Node, self string) Decision {
	return listingOf(nodes).Mutex(self)
}

// Write decides for the write side of a read-write lock: self holds iff no
// lock node queues before it, and otherwise watches the one just before it,
// whatever its kind. This is Curator's InterProcessReadWriteLock write lock
// (a mutex over every "__READ__" and "__WRIT__" node) and kazoo's WriteLock.
//
// The one exception is a read node carrying self's own sequence number:
// that is the read node self's owner creates to downgrade (Curator 5.5,
// CURATOR-621), which may sort before self by name. It never blocks self.
func Write(nodes []Node, self string) Decision {
	return listingOf(nodes).Write(self)
}

// Read decides for the read side of a read-write lock: self holds iff no
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
func Read(nodes []Node, self string) Decision {
	return listingOf(nodes).Read(self)
}

// Semaphore decides for a semaphore of n permits: self holds iff fewer than
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
func Semaphore(nodes []Node, self string, n int) Decision {
	return listingOf(nodes).Semaphore(self, n)
}

// Latch decides for a leader election: self leads iff no latch node
// queues before it, and otherwise watches the latch node just before it, so
// that a leader's departure wakes its successor only. This is Curator's
// LeaderLatch.
//
// Only latch nodes are candidates: any other node under the election path
// (an observer's, say) neither blocks nor is watched. Curator agrees: it
// orders the children by the text after "latch-", which for any other name
// is the whole name, and that sorts after every ten-digit sequence.
func Latch(nodes []Node, self string) Decision {
	return listingOf(nodes).Latch(self)
}
