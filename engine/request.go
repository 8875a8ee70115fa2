package engine

import (
	"fmt"

	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// MaxDataLen bounds Request.Data, in bytes. A lock node is made by one
// create request, and the server refuses any request longer than its
// jute.maxbuffer, 0xfffff bytes by default, by resetting the connection:
// every request in flight fails and every lease of the session is
// suspended. The rest of a create takes at most 1,134 bytes (its header;
// the longest node path a valid Request makes, MaxPathLen plus the node
// name; the ACL; the flags): 2 KiB are kept for it.
const MaxDataLen = 1<<20 - 2<<10

// validate reports why req cannot be acquired, or nil. Every field is
// checked before anything is sent: a request that cannot work fails at
// once, with no request and no node, rather than looping against the
// server. Path errors wrap ErrInvalidPath, the rest ErrInvalidRequest.
func (req Request) validate() error {
	if err := ValidatePath(req.Path); err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
	}
	switch {
	case req.Decide == nil:
		return bad("no Decider")
	case nodename.Marker(req.Kind) == "":
		// The node's name must read back as a lock node carrying our id,
		// or no Decider (nor any other client) sees it, and its contender
		// would find itself missing for ever.
		return bad("Kind %v is none of queue's kinds of node", req.Kind)
	case len(req.Data) > MaxDataLen:
		return bad("Data of %d bytes, more than MaxDataLen (%d)", len(req.Data), MaxDataLen)
	case req.Cohort && req.Kind != queue.KindMutex && req.Kind != queue.KindWrite:
		// A shared lease passed on would leave its fellow holders out of
		// the count: passing is for exclusive nodes only.
		return bad("Cohort with Kind %v, not an exclusive kind of node (a mutex's or a writer's)", req.Kind)
	}
	if req.Seq != "" {
		if n, ok := queue.Parse(nodename.Marker(req.Kind) + req.Seq); !ok || nodename.FormatSeq(n.Seq) != req.Seq {
			return bad("Seq %q is not a sequence number as ZooKeeper writes one (ten digits)", req.Seq)
		}
	}
	return nil
}
