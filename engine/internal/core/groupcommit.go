package core

import (
	"slices"
	"strings"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// Group commit and the in-flight bound: which requests the core sends, when,
// and which creates and deletes travel together in one multi request.

// Op is one request to send.
type Op struct {
	Batch []Op // creates and deletes sent as one multi request; nothing else set
	Kind  input.OpKind
	ID    uint64 // the contender; 0 for shared listings
	Path  string
	Data  []byte
	Fixed bool // OpCreate: a non-sequential node
	// Cold, with OpCreate: the lock path may not exist (see cold.go):
	// the request makes it, and any missing ancestor, as containers
	// before the node, in one multi.
	Cold bool
	// Prune, with OpDelete: delete the lock path too, once the node is
	// gone, if nothing else is on it (see cold.go).
	Prune bool
	Write bool   // counted in the writes in flight
	Find  string // OpRecover: the protected id to look for
}

func (o Op) String() string {
	if o.Batch == nil {
		return o.Kind.String() + " " + o.Path
	}
	parts := make([]string, len(o.Batch))
	for i, b := range o.Batch {
		parts[i] = b.String()
	}
	return "multi [" + strings.Join(parts, ", ") + "]"
}

const (
	maxBatch  = 64 // creates and deletes in one multi request
	maxWrites = 2  // write requests in flight at once

	// maxBatchBytes caps the encoded size of one multi request. A count cap
	// alone does not bound it: node data is the caller's, up to MaxDataLen
	// per create. Past the client's 1.5 MiB buffer the multi cannot even be
	// encoded and fails as a whole; past the server's jute.maxbuffer
	// (0xfffff bytes by default) the server resets the connection, which
	// fails every request in flight and suspends every lease. The leader
	// also forwards a multi to each follower as one proposal under the same
	// limit, and every request queued behind it waits for its log write.
	// Group commit gains nothing from size: 64 typical creates (a few
	// hundred bytes each) weigh about 20 KiB, so the count cap still binds
	// for them, and an eighth of the server's limit keeps any batch far from
	// it. A single write larger than this goes alone.
	maxBatchBytes = 128 << 10
)

// groupCommit holds the requests the core decided and has not sent yet.
// Creates and deletes go out at most maxWrites requests at a time: those
// issued while the server is busy with earlier ones wait and then go
// together as one multi request, one proposal and one log write on the
// server instead of one each. An idle engine sends a write at once (at the
// end of the turn that decided it). Every request counts against
// Config.MaxInFlight until the runtime reports it done.
//
// Creates on one lock path keep the order they were issued in, which is
// the order of the lock's queue: the runtime runs each request on a
// goroutine of its own, so two requests in flight reach the server in
// either order. A create therefore waits while a create on its path is in
// flight in another request, and goes with the next batch; creates on one
// path inside one multi keep their order.
type groupCommit struct {
	maxInFlight int
	aclBytes    func(path string) int // the encoded size of the ACL of a create at path
	inFlight    int                   // requests sent and not done
	writing     int                   // write requests in flight
	writes      []Op                  // creates and deletes waiting to be sent
	backlog     []Op                  // requests held back by the in-flight bound
	// creating counts, per lock path, the creates sent (or held back by
	// the in-flight bound) and not answered.
	creating map[string]int
}

// submit queues a create or a delete for the end of the turn, and sends
// anything else now if the in-flight bound allows.
func (g *groupCommit) submit(rd *Ready, o Op) {
	if o.Kind == input.OpCreate || o.Kind == input.OpDelete {
		g.writes = append(g.writes, o)
		return
	}
	g.send(rd, o)
}

// send sends o now if the bound allows and nothing waits before it.
func (g *groupCommit) send(rd *Ready, o Op) {
	if len(g.backlog) == 0 && g.inFlight < g.maxInFlight {
		g.inFlight++
		rd.Requests = append(rd.Requests, o)
		return
	}
	g.backlog = append(g.backlog, o)
}

// done: a request came back.
func (g *groupCommit) done(write bool) {
	g.inFlight--
	if write {
		g.writing--
	}
}

// flush sends the queued creates and deletes, in order, as batches bounded
// by count and encoded size, then the requests held back while the bound
// allows.
func (g *groupCommit) flush(rd *Ready) {
	for len(g.writes) > 0 && g.writing < maxWrites {
		batch := g.takeBatch()
		if len(batch) == 0 {
			break // every create queued waits for one on its path
		}
		o := Op{Batch: batch}
		if len(batch) == 1 {
			o = batch[0]
		}
		o.Write = true
		g.send(rd, o)
		g.writing++
	}
	if len(g.writes) == 0 {
		g.writes = nil
	}
	n := 0
	for n < len(g.backlog) && g.inFlight < g.maxInFlight {
		g.inFlight++
		rd.Requests = append(rd.Requests, g.backlog[n])
		n++
	}
	switch {
	case n == len(g.backlog):
		g.backlog = nil // let a burst's backing array go
	case n > 0:
		clear(g.backlog[:n])
		g.backlog = g.backlog[n:]
	}
}

// takeBatch takes from the queued writes, in order, as many as one request
// may carry: by count and encoded size, and leaving in the queue, in order,
// every create whose lock path has a create in flight in another request,
// or one that did not fit this batch.
func (g *groupCommit) takeBatch() []Op {
	var (
		batch   []Op
		size    = multiEnvelopeSize
		held    map[string]bool // lock paths whose creates stay queued
		kept    = g.writes[:0]
		started = false
	)
	for i, o := range g.writes {
		lockPath := ""
		if o.Kind == input.OpCreate {
			lockPath = o.Path[:strings.LastIndexByte(o.Path, '/')]
		}
		s := multiOpSize(o, g.aclBytes)
		full := len(batch) == maxBatch || (started && size+s > maxBatchBytes)
		if full || held[lockPath] || (lockPath != "" && g.creating[lockPath] > 0 && !slices.ContainsFunc(batch, func(b Op) bool {
			return b.Kind == input.OpCreate && strings.HasPrefix(b.Path, lockPath+"/")
		})) {
			if lockPath != "" {
				if held == nil {
					held = make(map[string]bool)
				}
				held[lockPath] = true
			}
			if full {
				kept = append(kept, g.writes[i:]...)
				break
			}
			kept = append(kept, o)
			continue
		}
		started = true
		size += s
		batch = append(batch, o)
		if lockPath != "" {
			if g.creating == nil {
				g.creating = make(map[string]int)
			}
			g.creating[lockPath]++
		}
	}
	clear(g.writes[len(kept):])
	g.writes = kept
	return batch
}

// createAnswered: a create on lockPath came back.
func (g *groupCommit) createAnswered(lockPath string) {
	if g.creating[lockPath]--; g.creating[lockPath] <= 0 {
		delete(g.creating, lockPath)
	}
}

// Encoded sizes, in bytes, of the parts of a multi request in ZooKeeper's
// wire format (jute): an int is 4 bytes, a bool 1, a string or a byte
// buffer its length as an int and then its bytes, a list its count as an
// int and then its elements.
const (
	multiHeaderSize = 4 + 1 + 4 // each op's header: type, done, error
	// multiEnvelopeSize: the request header (xid, opcode) and the header
	// that ends the list of ops.
	multiEnvelopeSize = 4 + 4 + multiHeaderSize
)

// multiOpSize is the encoded size of a create (with an ACL of
// aclBytes(path) bytes) or a delete inside a multi.
func multiOpSize(o Op, aclBytes func(path string) int) int {
	if o.Kind == input.OpCreate {
		n := multiHeaderSize + 4 + len(o.Path) + 4 + len(o.Data) + aclBytes(o.Path) + 4 // path, data, acl, flags
		if o.Cold {
			// The lock path's container create; missing ancestors, rare,
			// are left to the margin below the server's limit.
			lockPath := o.Path[:strings.LastIndexByte(o.Path, '/')]
			n += multiHeaderSize + 4 + len(lockPath) + 4 + aclBytes(lockPath) + 4
		}
		return n
	}
	n := multiHeaderSize + 4 + len(o.Path) + 4 // path, version
	if o.Prune {
		n *= 2 // the lock path's delete, a shorter path
	}
	return n
}
