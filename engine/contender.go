package engine

import (
	"fmt"
	"strings"

	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/queue"
)

// The contender state machine: one per acquisition. It is pure: step takes
// one input and returns the effects the loop must carry out. It does no I/O,
// starts no goroutine and reads no clock; the loop is the only goroutine
// that touches it. The shape mirrors the recipe's callback chain:
//
//	create ─▶ list ─▶ decide ─┬─▶ held ─▶ delete ─▶ released
//	   ▲                      └─▶ watch predecessor ─▶ (fired) ─▶ list …
//	   └── parents missing: create parent containers, then create again
//
// One invariant keeps recovery simple: at most one request of a contender
// is in flight at a time, and a contender never issues a new request before
// the reply to the last one has been stepped. So a create whose outcome is
// unknown is always resolved (by a recovery read that looks for the
// protected id) before anything else is sent.

type phase int

const (
	phaseNew      phase = iota
	phaseCreating       // create in flight
	phaseParents        // parent-container creation in flight
	phaseListing        // waiting for a listing of the lock path
	phaseWatching       // watch on the predecessor in flight
	phaseWaiting        // watch armed; nothing in flight
	phaseHeld           // granted; nothing in flight
	phaseDeleting       // delete of our node in flight
	phaseParked         // a request failed on a connection loss; waiting to retry
	phaseDone           // terminal
)

var phaseNames = [...]string{"new", "creating", "parents", "listing", "watching", "waiting", "held", "deleting", "parked", "done"}

func (p phase) String() string { return phaseNames[p] }

// outcome classifies a ZooKeeper reply for the state machine (the
// runtime's classify), so that the machine need not know the client
// library's error values.
type outcome = events.Outcome

const (
	outOK         = events.OK
	outNoNode     = events.NoNode
	outNodeExists = events.NodeExists
	outConnLoss   = events.ConnLoss
	outClosing    = events.Closing
	outFailed     = events.Refused
)

type inputKind int

const (
	inStart        inputKind = iota
	inCreated                // reply to create: name, or outcome
	inParents                // reply to parent creation
	inListed                 // a listing of the lock path
	inWatchSet               // reply to the watch request
	inWatchFired             // the watched predecessor changed or vanished
	inDeleted                // reply to delete
	inRelease                // the holder releases
	inCancel                 // the caller gave up (context done) or the engine closes
	inDisconnected           // connection dropped, session may live
	inReconnected            // connection back, same session
	inExpired                // the session is gone, and with it our node
	inUntrusted              // the server may already have expired us: no word from it for too long
	inRetry                  // time to retry what a connection loss interrupted
	inHandoff                // the node we wait for was released by our engine; pzxid is the token
	inTrusted                // the same session answers again, in time
	inRefused                // the grant just made was refused: the session stopped being trusted first
)

var inputNames = [...]string{"start", "created", "parents", "listed", "watch-set", "watch-fired", "deleted", "release", "cancel", "disconnected", "reconnected", "expired", "untrusted", "retry", "handoff", "trusted", "refused"}

func (k inputKind) String() string { return inputNames[k] }

type input struct {
	kind     inputKind
	outcome  outcome
	err      error    // the reply's error, or the cancel's reason
	name     string   // inCreated: the node created; inListed: ours, found by a recovery read
	children []string // inListed
	pzxid    int64    // inListed
	closing  bool     // inCancel: the engine is closing, so a held lease goes too
	// inWatchSet: the reply to a children watch, with children and pzxid.
	childWatch bool
	// inListed, the reply to a recovery read: a node carries our id but
	// another session owns it.
	foreign bool
	// inRefused: the grant was refused because the session that answered
	// has ended, not because the current one is untrusted.
	sessionEnded bool
	// listing is children parsed and sorted once per reply and shared by
	// every contender the reply is handed to (inListed, and inWatchSet of a
	// children watch); nil when the engine left it to parsed.
	listing *queue.Listing
}

// parsed is the reply's children as a listing: the engine parses a listing
// shared by many contenders once, and a reply for one contender alone is
// parsed here, when needed.
func (in *input) parsed() *queue.Listing {
	if in.listing == nil {
		in.listing = queue.NewListing(in.children)
	}
	return in.listing
}

type effectKind int

const (
	effCreate        effectKind = iota // create an ephemeral sequential node: path is the full prefix path
	effCreateParents                   // create the lock path (and its ancestors) as containers
	effList                            // list the lock path's children
	effRecover                         // recovery read: sync path, list it, find the node carrying id and its owner
	effWatch                           // set a data watch on path
	effDelete                          // delete path
	effGrant                           // resolve the acquisition with a lease
	effFail                            // resolve the acquisition with err
	effReleased                        // resolve the release with err (nil: released)
	effSuspend                         // the lease's session is disconnected
	effResume                          // the lease's session is back
	effLost                            // the lease is lost, with err
	effPark                            // wait for inRetry; err: the unexpected refusal to retry, if any
	effDone                            // terminal: forget the contender; err: why our node was left to the session's end, if it was
)

var effectNames = [...]string{"create", "create-parents", "list", "recover", "watch", "delete", "grant", "fail", "released", "suspend", "resume", "lost", "park", "done"}

func (k effectKind) String() string { return effectNames[k] }

type effect struct {
	kind      effectKind
	path      string
	id        string // effRecover: the protected id to look for
	token     int64
	err       error
	children  bool // effWatch: watch path's children, not its data
	suspended bool // effGrant: the connection is down, so the lease starts suspended
}

func (e effect) String() string {
	switch {
	case e.path != "":
		return e.kind.String() + " " + e.path
	case e.err != nil:
		return e.kind.String() + ": " + e.err.Error()
	case e.kind == effGrant && e.suspended:
		return fmt.Sprintf("grant token=%d suspended", e.token)
	case e.kind == effGrant:
		return fmt.Sprintf("grant token=%d", e.token)
	}
	return e.kind.String()
}

// retryAction is what a parked contender does when it may retry.
type retryAction int

const (
	retryNone    retryAction = iota
	retryRecover             // a create's fate is unknown: look for our protected id (effRecover)
	retryParents
	retryList
	retryDelete
)

// contender is one acquisition's state.
type contender struct {
	lockPath string
	prefix   string        // node name prefix after the protected id, e.g. "lock-"
	newID    func() string // fresh protected ids; injected so tests are deterministic
	decide   Decider       // the recipe: who holds, whom a waiter watches
	tryOnly  bool          // TryAcquire: give up rather than wait
	failExp  bool          // fail, rather than re-enqueue, when the session expires
	fixedSeq string        // a non-sequential node with this number (downgrade), or ""

	phase phase
	id    string // protected id of the node we create or created
	node  string // our node's name once known
	full  string // our node's full path once known
	watch string // full path of the node we watch

	retry      retryAction // what a parked contender redoes
	resolved   bool        // the acquisition's future has been resolved
	granted    bool        // we hold (or held) the lock
	cancelled  bool        // the caller gave up, or the engine closes: clean up and end
	closing    bool        // the engine closes: a held lease is released too
	recovering bool        // our create's fate is unknown: the recovery read looks for our id
	fired      bool        // the watch fired while the watch request was in flight
	next       bool        // the recipe found us Next behind the watched node (see Decision.Next)
	stale      bool        // the session expired while a request was in flight: its reply proves nothing
	connected  bool        // the session is connected, as far as the inputs told
	untrusted  bool        // the server may have expired the session: grant no one (only the watchdog's inputs change it)
	lost       bool        // the lease was declared lost
	wouldBlock bool        // tryOnly found the lock taken: fail once our node is gone
	misjudged  bool        // the Decider called our listed node missing: fail once it is gone
}

// errBorrowedPlaceGone fails a contender whose node has a borrowed
// sequence number (Request.Seq) when that node is gone, or may never have
// been made at a moment it could be: such a node is made once, never again.
var errBorrowedPlaceGone = fmt.Errorf("%w: the node holding its place in the queue is gone", ErrLost)

// lenderListed reports whether a node with a borrowed number may be
// granted on listing l: the node whose number it took, an exclusive node
// other than ours with the same number, is listed beside it. Always true
// for a node of our own number. Downgrades are rare, so a scan is cheap.
func (c *contender) lenderListed(l *queue.Listing) bool {
	if c.fixedSeq == "" {
		return true
	}
	self, ok := queue.Parse(c.node)
	if !ok {
		return false
	}
	for _, n := range l.Nodes() {
		if n.Seq == self.Seq && n.Name != c.node && n.Kind != queue.KindRead {
			return true
		}
	}
	return false
}

func newContender(lockPath, prefix string, decide Decider, newID func() string) *contender {
	return &contender{lockPath: lockPath, prefix: prefix, decide: decide, newID: newID, connected: true}
}

func (c *contender) nodePath() string { return c.full }

// requeuesOnExpiry reports whether a contender not yet granted queues again
// under a new session when its session expires; otherwise it fails with
// ErrSessionExpired. One asked to fail (Config.FailOnExpiry, or a recipe's
// Request.FailOnExpiry) does not, and neither does a node with a borrowed
// sequence number, which in a new session would jump the queue.
func (c *contender) requeuesOnExpiry() bool { return !c.failExp && c.fixedSeq == "" }

// setNode records our node. Its full path is kept once, and the name and
// protected id are slices of it, so that a waiter keeps one string.
func (c *contender) setNode(name string) {
	c.full = c.lockPath + "/" + name
	c.node = c.full[len(c.full)-len(name):]
	if i := strings.Index(c.node, c.id); c.id != "" && i >= 0 {
		c.id = c.node[i : i+len(c.id)]
	}
}

func (c *contender) clearNode() { c.node, c.full = "", "" }

func (c *contender) createPath() string {
	return c.lockPath + "/_c_" + c.id + "-" + c.prefix + c.fixedSeq
}

// inFlight reports whether a request of this contender awaits its reply.
func (c *contender) inFlight() bool {
	switch c.phase {
	case phaseCreating, phaseParents, phaseListing, phaseWatching, phaseDeleting:
		return true
	}
	return false
}

// step advances the machine by one input.
func (c *contender) step(in input) []effect {
	if c.phase == phaseDone {
		return nil
	}
	switch in.kind {
	case inStart:
		return c.create()
	case inCreated:
		return c.onCreated(in)
	case inParents:
		return c.onParents(in)
	case inListed:
		return c.onListed(in)
	case inWatchSet:
		return c.onWatchSet(in)
	case inWatchFired:
		return c.onWatchFired()
	case inDeleted:
		return c.onDeleted(in)
	case inRelease:
		return c.onRelease()
	case inCancel:
		return c.onCancel(in)
	case inDisconnected:
		c.connected = false
		if c.phase == phaseHeld && !c.lost {
			return []effect{{kind: effSuspend}}
		}
		return nil
	case inReconnected:
		return c.onReconnected()
	case inExpired:
		return c.onExpired()
	case inUntrusted:
		return c.onUntrusted()
	case inTrusted:
		c.untrusted = false
		return nil
	case inRefused:
		return c.onRefused(in)
	case inRetry:
		return c.onRetry()
	case inHandoff:
		return c.onHandoff(in)
	}
	return nil
}

// onHandoff: the holder we were next behind is gone, by its own release
// through our engine, so we hold without listing again.
func (c *contender) onHandoff(in input) []effect {
	switch {
	case c.phase == phaseWaiting && c.next && !c.cancelled:
		return c.grant(in.pzxid)
	case c.phase == phaseWaiting:
		return c.list()
	case c.phase == phaseWatching:
		c.fired = true
	}
	return nil
}

// create starts a fresh node under a fresh protected id: a node of an
// earlier id belongs to an earlier attempt and is never adopted.
func (c *contender) create() []effect {
	c.id = c.newID()
	c.clearNode()
	c.recovering = false
	c.phase = phaseCreating
	return []effect{{kind: effCreate, path: c.createPath()}}
}

// list asks for a listing of the lock path. While a create's fate is
// unknown, that is the recovery read, whatever asked for it (a retry, a
// cleanup, a reconnect): the executor syncs the lock path first, since the
// server answering may be a follower that has not applied the create yet,
// and a listing without it would have us create a second node while the
// first, made, waits ahead of us with no owner watching it. It also checks
// who owns a node carrying our id: only one of this session is ours.
func (c *contender) list() []effect {
	c.phase = phaseListing
	if c.recovering {
		return []effect{{kind: effRecover, path: c.lockPath, id: c.id}}
	}
	return []effect{{kind: effList, path: c.lockPath}}
}

func (c *contender) park(a retryAction) []effect {
	c.phase = phaseParked
	c.retry = a
	return []effect{{kind: effPark}}
}

// fail resolves the acquisition with err (once) and cleans up.
func (c *contender) fail(err error) []effect {
	c.cancelled = true
	var effs []effect
	if !c.resolved {
		c.resolved = true
		effs = append(effs, effect{kind: effFail, err: err})
	}
	return append(effs, c.cleanup()...)
}

// cleanup deletes our node if we have or may have one, then ends.
func (c *contender) cleanup() []effect {
	switch {
	case c.node != "":
		c.phase = phaseDeleting
		return []effect{{kind: effDelete, path: c.nodePath()}}
	case c.recovering:
		return c.list() // find our node by its protected id, then delete it
	}
	return c.finish()
}

func (c *contender) finish() []effect {
	c.phase = phaseDone
	var effs []effect
	switch {
	case c.resolved:
	case c.wouldBlock:
		c.resolved = true
		effs = append(effs, effect{kind: effFail, err: ErrWouldBlock})
	case c.misjudged:
		c.resolved = true
		effs = append(effs, effect{kind: effFail, err: fmt.Errorf("%w: it called this contender's node on %s missing", ErrBadDecision, c.lockPath)})
	}
	return append(effs, effect{kind: effDone})
}

// unstale handles the reply to a request that was in flight when the
// session expired. Our node, if we had one, is gone; only a create may have
// made a new one (sent late, in the new session), so a create's reply is
// still followed.
func (c *contender) unstale() []effect {
	c.stale = false
	c.clearNode()
	if c.cancelled {
		return c.cleanup()
	}
	if !c.requeuesOnExpiry() {
		return c.fail(ErrSessionExpired)
	}
	return c.create()
}

func (c *contender) onCreated(in input) []effect {
	if c.phase != phaseCreating {
		return nil
	}
	if c.stale && in.outcome != outOK && in.outcome != outConnLoss {
		// The create failed: no node exists. Start again under the new session.
		return c.unstale()
	}
	switch in.outcome {
	case outOK:
		c.setNode(in.name)
		if c.stale && !c.requeuesOnExpiry() {
			// Made under the new session by a create sent late: with a
			// borrowed number it would jump the queue, and a contender
			// that fails on expiry must not queue again. Remove it and
			// give up.
			c.stale = false
			return c.fail(ErrSessionExpired)
		}
		c.stale = false // the listing below tells whether this node lives
		if c.cancelled {
			return c.cleanup()
		}
		return c.list()
	case outNoNode:
		if c.cancelled {
			return c.finish()
		}
		if c.fixedSeq != "" {
			// The lock path is gone, and with it the node whose place in
			// the queue ours was to take.
			return c.fail(errBorrowedPlaceGone)
		}
		c.phase = phaseParents
		return []effect{{kind: effCreateParents, path: c.lockPath}}
	case outConnLoss:
		c.recovering = true
		if c.stale && !c.requeuesOnExpiry() {
			// Whatever this made, it made in the new session, where it
			// has no place: find it, remove it, give up.
			c.stale = false
			return c.fail(ErrSessionExpired)
		}
		c.stale = false // recovery lists under whatever session comes next
		return c.park(retryRecover)
	case outClosing:
		return c.fail(ErrClosed)
	}
	return c.fail(refused("create in", c.lockPath, in.err))
}

func (c *contender) onParents(in input) []effect {
	if c.phase != phaseParents {
		return nil
	}
	if c.stale {
		return c.unstale() // no node of ours exists; start under the new session
	}
	switch in.outcome {
	case outOK, outNodeExists:
		if c.cancelled {
			return c.finish()
		}
		return c.create()
	case outConnLoss:
		if c.cancelled {
			return c.finish()
		}
		return c.park(retryParents)
	case outClosing:
		return c.fail(ErrClosed)
	}
	return c.fail(refused("create", c.lockPath, in.err))
}

func (c *contender) onListed(in input) []effect {
	if c.phase != phaseListing {
		return nil
	}
	if c.stale {
		return c.unstale()
	}
	switch in.outcome {
	case outOK:
	case outNoNode:
		in.children, in.listing = nil, nil // the lock path is gone, and our node with it
	case outConnLoss:
		return c.park(retryList)
	case outClosing:
		return c.fail(ErrClosed)
	default:
		err := refused("list", c.lockPath, in.err)
		switch {
		case c.recovering && noAuth(in.err):
			// The lock path is no longer readable to us: every read would
			// be refused for as long as the session lives. Our node, if
			// the lost create made one, is left to the session's end.
			c.recovering = false
			effs := c.fail(err)
			effs[len(effs)-1].err = err // effDone: the engine logs it
			return effs
		case c.recovering:
			// Our node may exist, and only this read can find it to delete
			// it: give up the acquisition, never the node. Read again
			// after a backoff, as a refused delete is sent again; at once,
			// a refusal that persists would repeat as fast as the server
			// answers.
			c.cancelled = true
			var effs []effect
			if !c.resolved {
				c.resolved = true
				effs = append(effs, effect{kind: effFail, err: err})
			}
			park := c.park(retryRecover)
			park[0].err = err
			return append(effs, park...)
		}
		return c.fail(err)
	}

	if c.recovering {
		// The reply to our recovery read: the listing was synced, and the
		// node carrying our id, if any, checked to be this session's.
		c.recovering = false
		switch {
		case in.name != "":
			c.setNode(in.name)
		case c.cancelled:
			return c.finish() // the create never happened: nothing to clean
		case c.fixedSeq != "":
			// A node with a borrowed number is made only while the node
			// it borrows from is there, and that may be gone by now: the
			// watchdog may have lost that lease, and the engine deleted
			// its node on reconnecting, before this read was answered.
			// Made now, ours could take a place a writer queued behind
			// has already been granted. The create is never sent again.
			return c.fail(errBorrowedPlaceGone)
		case in.foreign:
			// Another session owns a node with our id: never ours to
			// adopt or delete. Our id is taken; start under a fresh one.
			return c.create()
		default:
			c.phase = phaseCreating // the create never happened: send it again
			return []effect{{kind: effCreate, path: c.createPath()}}
		}
	}
	if c.cancelled {
		return c.cleanup()
	}

	l := in.parsed()
	if l.Wrapped() {
		return c.fail(fmt.Errorf("%w: %s", ErrSequenceWrapped, c.lockPath))
	}
	d := c.decide(l, c.node)
	switch {
	case d.Missing && l.Has(c.node):
		// The recipe cannot see a node that is there. Creating another
		// would leave this one behind, once per listing: delete it, and
		// fail once it is gone.
		c.misjudged = true
		c.cancelled = true
		return c.cleanup()
	case d.Missing:
		// Our node vanished without the session expiring (deleted by
		// someone else): our place in the queue is gone.
		if c.tryOnly {
			c.clearNode()
			c.wouldBlock = true
			return c.finish()
		}
		if c.fixedSeq != "" {
			// A node with a borrowed number keeps its place only while it
			// exists: it is never made again.
			c.clearNode()
			return c.fail(errBorrowedPlaceGone)
		}
		return c.create()
	case d.Holds && !c.lenderListed(l):
		// A borrowed number admits us only beside the node we borrowed it
		// from: created after that node left (a downgrade whose writer was
		// released before the read lease was granted, its create sent
		// after the writer's delete), ours would sort ahead of writers
		// granted meanwhile. Delete it and give up.
		return c.fail(errBorrowedPlaceGone)
	case d.Holds:
		return c.grant(in.pzxid)
	case c.tryOnly:
		c.wouldBlock = true
		c.cancelled = true
		return c.cleanup()
	}
	c.fired = false
	c.next = d.Next
	c.phase = phaseWatching
	if d.WatchChildren {
		c.watch = c.lockPath
		return []effect{{kind: effWatch, path: c.watch, children: true}}
	}
	c.watch = c.lockPath + "/" + d.Watch
	return []effect{{kind: effWatch, path: c.watch}}
}

// grant admits us, unless the session is untrusted. The engine may still
// refuse the grant (inRefused) when the watchdog lapsed after the loop last
// heard from it, so the grant is one effect, applied whole or not at all.
func (c *contender) grant(token int64) []effect {
	if c.untrusted {
		// The listing was answered, but the session may already be
		// expired: ask again once it is trusted.
		return c.park(retryList)
	}
	c.phase = phaseHeld
	c.granted = true
	c.resolved = true
	return []effect{{kind: effGrant, token: token, suspended: !c.connected}}
}

// onRefused undoes the grant just made: the session stopped being trusted
// before the lease was handed out, or the reply that decided it came from
// a session that has ended since, so we wait, unresolved, as before it.
// In the second case the current session may well be trusted: the expiry,
// which the loop hears of next, queues us again.
func (c *contender) onRefused(in input) []effect {
	if c.phase != phaseHeld || c.lost {
		return nil
	}
	if !in.sessionEnded {
		c.untrusted = true
	}
	c.granted = false
	c.resolved = false
	return c.park(retryList)
}

func (c *contender) onWatchSet(in input) []effect {
	if c.phase != phaseWatching {
		return nil
	}
	if c.stale {
		return c.unstale()
	}
	if c.cancelled {
		return c.cleanup()
	}
	switch in.outcome {
	case outOK:
		if c.fired {
			return c.list()
		}
		if in.childWatch {
			// A children watch answers with the children: the holder that
			// left between our listing and the watch is not missed.
			l := in.parsed()
			if l.Wrapped() {
				return c.fail(fmt.Errorf("%w: %s", ErrSequenceWrapped, c.lockPath))
			}
			d := c.decide(l, c.node)
			switch {
			case d.Missing:
				return c.list()
			case d.Holds && !c.lenderListed(l):
				return c.fail(errBorrowedPlaceGone)
			case d.Holds:
				return c.grant(in.pzxid)
			}
		}
		c.phase = phaseWaiting
		return nil
	case outNoNode:
		return c.list() // the predecessor left before the watch was set: look again
	case outConnLoss:
		return c.park(retryList)
	case outClosing:
		return c.fail(ErrClosed)
	}
	return c.fail(refused("watch", c.watch, in.err))
}

func (c *contender) onWatchFired() []effect {
	switch c.phase {
	case phaseWatching:
		c.fired = true
	case phaseWaiting:
		return c.list()
	}
	return nil
}

func (c *contender) onRelease() []effect {
	if c.phase != phaseHeld {
		return nil
	}
	c.cancelled = true
	c.phase = phaseDeleting
	return []effect{{kind: effDelete, path: c.nodePath()}}
}

func (c *contender) onDeleted(in input) []effect {
	if c.phase != phaseDeleting {
		return nil
	}
	if c.stale {
		// Our node went with the expired session.
		c.stale = false
		c.clearNode()
		return c.afterDelete()
	}
	switch in.outcome {
	case outOK, outNoNode:
		c.clearNode()
		return c.afterDelete()
	case outConnLoss:
		return c.park(retryDelete)
	case outClosing:
		// Closing the session removes the ephemeral node.
		c.clearNode()
		return c.afterDelete()
	}
	if noAuth(in.err) {
		// The lock path's ACL denies us the deletion of our own node (it
		// was changed, or made by another client, after our create). That
		// is no passing fault: asking again would be refused for as long
		// as the session lives. Give up: the node stays until the session
		// ends, and a release reports why.
		err := refused("delete", c.nodePath(), in.err)
		c.clearNode()
		var effs []effect
		if c.granted && !c.lost {
			effs = append(effs, effect{kind: effReleased, err: err})
		}
		effs = append(effs, c.finish()...)
		effs[len(effs)-1].err = err // effDone: the engine logs the node left behind
		return effs
	}
	// Refused for a reason of its own. None is expected (the node is ours,
	// ephemeral, deleted at any version), and giving up would leave it
	// blocking the lock path for every client until the session ends: try
	// again after a backoff, for as long as the session lives.
	effs := c.park(retryDelete)
	effs[0].err = fmt.Errorf("turnstile: delete %s: %w", c.nodePath(), in.err)
	return effs
}

func (c *contender) afterDelete() []effect {
	if c.granted && !c.lost {
		return append([]effect{{kind: effReleased}}, c.finish()...)
	}
	return c.finish()
}

func (c *contender) onCancel(in input) []effect {
	if in.closing {
		c.closing = true
	}
	if c.phase == phaseHeld {
		if !c.closing {
			return nil // granted before the cancel: the lease stands
		}
		c.lost = true
		c.cancelled = true
		c.phase = phaseDeleting
		return []effect{{kind: effLost, err: in.err}, {kind: effDelete, path: c.nodePath()}}
	}
	if c.cancelled && c.resolved {
		return nil // cleaning up already
	}
	c.cancelled = true
	var effs []effect
	if !c.resolved {
		c.resolved = true
		effs = append(effs, effect{kind: effFail, err: in.err})
	}
	switch c.phase {
	case phaseNew:
		return append(effs, c.finish()...)
	case phaseWaiting:
		return append(effs, c.cleanup()...)
	case phaseParked:
		if c.closing && !c.connected {
			// No server to talk to: closing the session removes our node.
			return append(effs, c.finish()...)
		}
	}
	// A request is in flight, or we wait to retry: its reply (or the retry)
	// continues the cleanup.
	return effs
}

func (c *contender) onReconnected() []effect {
	c.connected = true
	switch c.phase {
	case phaseHeld:
		if !c.lost {
			return []effect{{kind: effResume}}
		}
	case phaseWaiting:
		// The watch survives a reconnect, but a notification may have been
		// missed in between: look again.
		return c.list()
	case phaseParked:
		return c.onRetry()
	}
	return nil
}

func (c *contender) onExpired() []effect {
	c.connected = false
	if c.granted {
		switch {
		case c.phase == phaseHeld:
			c.lost = true
			c.clearNode()
			c.phase = phaseDone
			return []effect{{kind: effLost, err: ErrSessionExpired}, {kind: effDone}}
		case c.inFlight():
			c.stale = true
			return nil
		}
		// Parked after a lost lease or during release: the node is gone.
		c.clearNode()
		return c.afterDelete()
	}
	if c.inFlight() {
		c.stale = true
		return nil
	}
	c.clearNode()
	if c.phase == phaseParked && c.retry == retryRecover {
		// A create of the old session whose fate was unknown: whatever it
		// made is gone with that session.
		c.recovering = false
	}
	if c.cancelled {
		return c.finish()
	}
	if !c.requeuesOnExpiry() {
		return c.fail(ErrSessionExpired)
	}
	// Re-enqueue under the new session; the create waits in the client until
	// that session exists.
	return c.create()
}

func (c *contender) onUntrusted() []effect {
	c.untrusted = true
	if c.phase == phaseHeld && !c.lost {
		// The server may expire us at any moment and grant the lock to
		// someone else: the holder must stop now. Our node is deleted once
		// the connection is back, should the session survive.
		c.lost = true
		return append([]effect{{kind: effLost, err: ErrLost}}, c.park(retryDelete)...)
	}
	return nil
}

func (c *contender) onRetry() []effect {
	if c.phase != phaseParked {
		return nil
	}
	a := c.retry
	c.retry = retryNone
	switch a {
	case retryRecover:
		return c.list()
	case retryParents:
		c.phase = phaseParents
		return []effect{{kind: effCreateParents, path: c.lockPath}}
	case retryList:
		if c.cancelled {
			return c.cleanup()
		}
		return c.list()
	case retryDelete:
		c.phase = phaseDeleting
		return []effect{{kind: effDelete, path: c.nodePath()}}
	}
	return nil
}
