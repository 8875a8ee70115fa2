package queue

// Decision is a recipe's verdict for one contender on one listing: the
// predicates' answer, and what an engine.Decider returns.
type Decision struct {
	Holds bool // self holds the lock
	// Watch is, when !Holds, the one child whose departure may let self in.
	// It always sorts before self. It is "" only when Missing or
	// WatchChildren.
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
	//
	// An engine hands a lock over on Next (a waiter behind a holder of the
	// same engine is granted on the holder's delete, without listing again:
	// the local handoff) only when, besides, the departing node is
	// exclusive by its name and no contender of that engine with a
	// borrowed sequence number (engine.Request.Seq) is alive on the path;
	// otherwise it lists again, which is always safe. A Decider of its own
	// sets Next only if it knows, by its recipe and the departing node's,
	// that nothing else can keep self out; when in doubt, false.
	Next bool
	// WatchChildren: when !Holds, any child's departure may let self in, so
	// watch the lock path's children instead of one node. No predicate of
	// this package sets it; it is for recipes where a single waiter watches
	// at a time (a semaphore's lease path, guarded by its mutex), or it
	// would wake a herd.
	WatchChildren bool
}
