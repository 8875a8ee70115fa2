package engine

import (
	"fmt"
	"strings"

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

// seqProbe stands for the sequence number the server appends to a node's
// name: ten digits, as it always writes a non-negative one.
const seqProbe = "0000000000"

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
	case req.Prefix == "":
		return bad("empty Prefix")
	case strings.Contains(req.Prefix, "/"):
		// The node would be made under a child of the lock path that does
		// not exist, again and again.
		return bad("Prefix %q contains '/'", req.Prefix)
	case len(req.Data) > MaxDataLen:
		return bad("Data of %d bytes, more than MaxDataLen (%d)", len(req.Data), MaxDataLen)
	}
	// The node's name must read back as a lock node carrying our id, or no
	// Decider (nor any other client) sees it, and its contender would find
	// itself missing for ever.
	n, ok := parseNodeName(req.Prefix, seqProbe)
	if !ok {
		return bad("Prefix %q makes node names no recipe reads (want a marker such as %q)", req.Prefix, queue.MutexPrefix)
	}
	if req.Cohort && n.Kind != queue.KindMutex && n.Kind != queue.KindWrite {
		// A shared lease passed on would leave its fellow holders out of
		// the count: passing is for exclusive nodes only.
		return bad("Cohort with Prefix %q, not an exclusive kind of node (a mutex's or a writer's)", req.Prefix)
	}
	if req.Seq != "" {
		if n, ok := parseNodeName(req.Prefix, req.Seq); !ok || queue.FormatSeq(n.Seq) != req.Seq {
			return bad("Seq %q is not a sequence number as ZooKeeper writes one (ten digits)", req.Seq)
		}
	}
	return nil
}

// parseNodeName parses the name of a node made with prefix and numbered
// seq, under a protected id, as a Decider would.
func parseNodeName(prefix, seq string) (queue.Node, bool) {
	const id = "00000000-0000-4000-8000-000000000000"
	n, ok := queue.Parse("_c_" + id + "-" + prefix + seq)
	return n, ok && n.ID == id
}
