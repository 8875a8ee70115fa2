// Package queue knows what a lock queue looks like on the wire: the names of
// the ephemeral sequential children under a lock path, the order they form,
// and the predicates that decide, from one listing of those children, whether
// a contender holds the lock and which single child it must watch if not.
//
// Everything here is a pure function of its arguments. The package knows
// nothing of ZooKeeper connections; the engine lists children, parses them
// once into a [Listing], asks the Listing's predicate for every contender
// the listing was for, and acts on each [Decision]. The predicates that take
// a slice of nodes give the same verdicts, at a cost of O(n) or more per
// call.
//
// # Names
//
// turnstile creates names in Apache Curator 5's protected form, so that Go,
// Java (Curator) and Python (kazoo) clients can queue on one lock path and
// still exclude each other. Three naming families are understood:
//
//	Curator        _c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-lock-0000000012
//	               lock-0000000012                   (unprotected)
//	go-zookeeper   _c_8eb60557ba51e0da67eefc47467d3f34-lock-0000000031
//	kazoo          514e5a831836450cb1a56c741e990fd8__lock__0000000032
//
// Curator's protected prefix is "_c_", the 36-character text form of a UUID,
// and "-". go-zookeeper's CreateProtectedEphemeralSequential uses the same
// "_c_" and "-" around 32 bare hex digits; kazoo puts uuid4().hex directly
// before its marker. The marker names the recipe (see the *Prefix constants),
// and ZooKeeper appends the parent's child version formatted as "%010d".
//
// # Order
//
// Contenders are ordered by that sequence number, which ZooKeeper keeps per
// parent, so nodes of different families on one path are comparable. The
// sequence is compared as a number, not as text; the two agree for every
// non-negative sequence, which is all a lock path sees before 2^31 child
// changes. Past that the counter wraps to negative numbers, and while nodes
// from both sides of the wrap are listed, numeric order is not creation
// order: [Listing.Wrapped] tells, and the engine grants nothing then.
//
// # Predicates
//
// A predicate sees only nodes that parse; anything else under the lock path
// (another recipe's bookkeeping, a stray node) neither blocks nor is watched.
// Each waiter watches exactly one node that sorts before it, so a release
// wakes one waiter rather than the herd, and the chain of watches can never
// form a cycle.
//
// Which earlier nodes block a contender:
//
//	Mutex         every lock node
//	Write         every lock node but a read node with self's sequence number
//	Read          every node that is not a read node and has a lower sequence
//	Semaphore(n)  every lock node, once n of them are earlier
//	Latch         every latch node (a leader election's candidates), and
//	              nothing else: an observer node never blocks a candidate
//
// A node that blocks later readers must itself wait for earlier readers, or
// a reader and that node could hold at once. kazoo names its exclusive Lock
// and its WriteLock alike ("__lock__"), so readers must treat every mutex
// node as a writer, and so every mutex must wait for earlier readers too.
// That is also what Curator's InterProcessMutex and go-zookeeper's Lock do:
// they count every child before them. The read-node exception is Curator
// 5.5's write-to-read downgrade; see [Read] and [Write].
//
// turnstile waits for other clients' nodes whatever they are; whether they
// wait for turnstile's depends on them. kazoo looks only for its own markers
// unless given extra_lock_patterns (e.g. "lock-", "__WRIT__", "__READ__"),
// and its plain Lock ignores "__rlock__" readers even then. go-zookeeper's
// Lock counts every child, and fails on one it cannot read a number from.
package queue
