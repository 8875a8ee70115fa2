package fence

import (
	"context"
	"fmt"
	"path"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/seam"
	"github.com/turnstile-go/turnstile/queue"
)

// Holds reports whether node (Lease.Node: the lock path, a slash and the
// node's name, relative to the engine's Config.Root) holds the lock at
// lockPath now, by the rule of the node's kind (mutex, read or write):
// one read of lockPath's children, on eng's session. It is Chubby's
// CheckSequencer, for a resource that does not trust its callers: a
// caller that names a node that is a waiter's, or gone, is not the holder,
// whatever token it sends.
//
// What it proves is weaker than it looks. The node's name is readable by
// anyone who can list the lock path, so a caller that knows the holder's
// node passes; and the answer is stale at once: the holder can lose the
// lock right after the read. Holds keeps out callers that never held the
// lock, or no longer do at the time of the read; the token's order,
// checked by the fence, keeps out the writes of a holder that lost it
// after. A semaphore's nodes are never reported as holding: the number of
// its leases is not stored in ZooKeeper.
func Holds(ctx context.Context, eng *engine.Engine, lockPath, node string) (bool, error) {
	if eng == nil || ctx == nil {
		return false, fmt.Errorf("%w: fence: Holds needs an engine and a context", engine.ErrInvalidRequest)
	}
	if path.Dir(node) != lockPath {
		return false, nil
	}
	children, err := seam.Children(eng, ctx, lockPath)
	if err != nil {
		return false, fmt.Errorf("fence: list %s: %w", lockPath, err)
	}
	name := path.Base(node)
	n, ok := queue.Parse(name)
	if !ok {
		return false, nil
	}
	l := queue.NewListing(children)
	switch n.Kind {
	case queue.KindMutex:
		return l.Mutex(name).Holds, nil
	case queue.KindWrite:
		return l.Write(name).Holds, nil
	case queue.KindRead:
		return l.Read(name).Holds, nil
	}
	return false, nil
}
