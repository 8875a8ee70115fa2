package metrics

import "github.com/turnstile-go/turnstile/queue"

// The recipe label's values. A recipe is told by its node's name: turnstile
// names nodes as Curator does, and the name's marker says what the node
// asks for.
const (
	recipeMutex     = "mutex"     // "lock-": Mutex, ReentrantMutex, a Semaphore's own mutex
	recipeRead      = "read"      // "__READ__": RWMutex's reader
	recipeWrite     = "write"     // "__WRIT__": RWMutex's writer
	recipeSemaphore = "semaphore" // "lease-": a Semaphore's lease
	recipeElection  = "election"  // "latch-": an election candidate
	recipeOther     = "other"     // a node named by a Request of one's own
)

// recipeOf tells a lease's recipe by its node's name. A Semaphore takes a
// mutex on <path>/locks while it acquires a lease, so each of its grants
// is counted twice: once as a mutex, once as a semaphore lease.
func recipeOf(node string) string {
	n, ok := queue.Parse(node)
	if !ok {
		return recipeOther
	}
	return recipeOfKind(n.Kind)
}

// recipeOfKind tells an acquisition's recipe by the kind of node it makes
// (events.Report.NodeKind), before it has a node.
func recipeOfKind(k queue.Kind) string {
	switch k {
	case queue.KindMutex:
		return recipeMutex
	case queue.KindRead:
		return recipeRead
	case queue.KindWrite:
		return recipeWrite
	case queue.KindLease:
		return recipeSemaphore
	case queue.KindLatch:
		return recipeElection
	}
	return recipeOther
}
