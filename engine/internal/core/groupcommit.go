package core

import (
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
	maxWrites = 2  // write requests in flight at once, whatever they carry

	// Past maxWrites, a write request still goes at once when waiting
	// gains little: when it carries at least extraBatch creates and
	// deletes, or when the write requests in flight carry fewer than
	// lightOps in all. Waiting for a slot costs a create the round trip
	// of a request already in flight, a whole log write of the server's
	// when that request is still queued behind another's, where a client
	// that sends every request at once has its request in the server's
	// next log write. What waiting buys is fewer requests, each carrying
	// more: it pays where the server's work per request binds, which is
	// under a load that keeps many creates and deletes in flight. So a
	// light load (fewer than lightOps in flight: an open loop, where
	// nearly every write goes alone) sends at once; and a backlog (a slow
	// log write, a stalled server, a burst) leaves in requests of at
	// least extraBatch as it forms, all in the server's next log write,
	// instead of 2×maxBatch per round trip (which fell behind a 40-ms
	// round trip at 1,910 acquisitions/s). 64 workers in a closed loop
	// keep about forty in flight, twenty a request, and batch as before.
	extraBatch = 16
	lightOps   = 16

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
// Creates and deletes go out at most maxWrites requests at a time, but for
// the batches extraBatch and lightOps let go beyond that: those issued
// while the server is busy with earlier ones wait and then go together as
// one multi request, one proposal on the server instead of one each. An
// idle engine sends a write at once (at the end of the turn that decided
// it). Every request counts against Config.MaxInFlight until the runtime
// reports it done; a write past maxWrites goes only within that bound, or
// waits with the writes, where it may still grow.
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
	writeOps    int                   // the creates and deletes they carry
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

// done: a request came back; a write one carried ops creates and deletes.
func (g *groupCommit) done(write bool, ops int) {
	g.inFlight--
	if write {
		g.writing--
		g.writeOps -= ops
	}
}

// flush sends the queued creates and deletes, in order, as batches bounded
// by count and encoded size, while the writes in flight allow (see
// extraBatch), then the requests held back while the bound allows.
func (g *groupCommit) flush(rd *Ready) {
	for len(g.writes) > 0 {
		least := 0
		if g.writing >= maxWrites {
			if len(g.backlog) > 0 || g.inFlight >= g.maxInFlight {
				break
			}
			if g.writeOps >= lightOps {
				least = extraBatch
			}
		}
		batch := g.takeBatch(least)
		if len(batch) == 0 {
			break // every create queued waits for one on its path, or too few for a request past maxWrites
		}
		o := Op{Batch: batch}
		if len(batch) == 1 {
			o = batch[0]
		}
		o.Write = true
		g.send(rd, o)
		g.writing++
		g.writeOps += len(batch)
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
// or one that did not fit this batch. It takes nothing when the batch
// would carry fewer than least ops and is not full.
func (g *groupCommit) takeBatch(least int) []Op {
	var (
		take    = make([]bool, len(g.writes))
		n       int
		size    = multiEnvelopeSize
		full    bool
		held    map[string]bool // lock paths whose creates stay queued
		inBatch map[string]bool // lock paths with a create in this batch
	)
	for i, o := range g.writes {
		lockPath := ""
		if o.Kind == input.OpCreate {
			lockPath = o.Path[:strings.LastIndexByte(o.Path, '/')]
		}
		s := multiOpSize(o, g.aclBytes)
		if n == maxBatch || (n > 0 && size+s > maxBatchBytes) {
			full = true
			break
		}
		if held[lockPath] || (lockPath != "" && g.creating[lockPath] > 0 && !inBatch[lockPath]) {
			if held == nil {
				held = make(map[string]bool)
			}
			held[lockPath] = true
			continue
		}
		size += s
		take[i] = true
		n++
		if lockPath != "" {
			if inBatch == nil {
				inBatch = make(map[string]bool)
			}
			inBatch[lockPath] = true
		}
	}
	if n == 0 || (n < least && !full && n < maxBatch) {
		return nil
	}
	batch := make([]Op, 0, n)
	kept := g.writes[:0]
	for i, o := range g.writes {
		if !take[i] {
			kept = append(kept, o)
			continue
		}
		batch = append(batch, o)
		if o.Kind == input.OpCreate {
			if g.creating == nil {
				g.creating = make(map[string]int)
			}
			g.creating[o.Path[:strings.LastIndexByte(o.Path, '/')]]++
		}
	}
	clear(g.writes[len(kept):])
	g.writes = kept
	return batch
}

// createReturned: a create on lockPath came back, whatever its outcome, and
// no longer holds back the next creates of its path.
func (g *groupCommit) createReturned(lockPath string) {
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
