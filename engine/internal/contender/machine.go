// Package contender is the state machine of one acquisition of a lock:
// create a node, list the lock path, ask the recipe, hold or watch, delete.
// It is pure: Step takes one input and returns the effects the engine's
// core must carry out. It does no I/O, starts no goroutine and reads no
// clock; the core is the only one that touches it, and it reads the
// machine only through its methods: nothing outside this package writes
// a machine's fields (TestPure holds the package to its imports). The
// shape mirrors the recipe's callback chain:
//
//	create ─▶ list ─▶ decide ─┬─▶ held ─▶ delete ─▶ released
//	   ▲                      └─▶ watch predecessor ─▶ (fired) ─▶ list …
//	   └── lock path missing: create again, with the path (Effect.Cold)
//
// One invariant keeps recovery simple: at most one request of a contender
// is in flight at a time, and a contender never issues a new request before
// the reply to the last one has been stepped. So a create whose outcome is
// unknown is always resolved (by a recovery read that looks for the
// protected id) before anything else is sent.
package contender

import (
	"fmt"
	"strings"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/queue"
)

// Config is what a machine is made with: the acquisition's request, and
// the session as the core knows it at that moment.
type Config struct {
	LockPath string
	Prefix   string        // node name prefix after the protected id, e.g. "lock-"
	Decide   Decider       // the recipe: who holds, whom a waiter watches
	NewID    func() string // fresh protected ids; injected so that runs are reproducible
	// Seq, when not empty, is a borrowed sequence number: the node is made
	// without the sequential flag, with this ten-digit number (a
	// downgrade's read node takes its writer's place in the queue so).
	Seq string
	// Lender, with Seq, is the name of the engine's own held node whose
	// number Seq is (a downgrade's writer): a node of Seq is granted only
	// beside that very node. "" when the engine holds none, and then beside
	// any exclusive node of that number.
	Lender       string
	TryOnly      bool // give up rather than wait
	FailOnExpiry bool // fail, rather than queue again, when the session expires
	// Connected and Untrusted are the session as the core last heard of
	// it; later changes come as inputs (Disconnected, Reconnected,
	// Untrusted, Trusted).
	Connected bool
	Untrusted bool
}

// Machine is one acquisition's state.
//
// The engine keeps one per waiter, thousands of them, inside its own
// record of the contender, so New returns it by value and its fields are
// as few and as small as they can be.
type Machine struct {
	lockPath string
	prefix   string        // node name prefix after the protected id, e.g. "lock-"
	newID    func() string // fresh protected ids
	decide   Decider       // the recipe: who holds, whom a waiter watches
	tryOnly  bool          // TryAcquire: give up rather than wait
	failExp  bool          // fail, rather than re-enqueue, when the session expires
	// borrowed, for a non-sequential node (a downgrade's), is the name of
	// the node whose number it takes (Config.Lender), or that number
	// alone (Config.Seq); "" for a sequential node. One field, not two: a
	// waiter's record is kept small.
	borrowed string

	phase Phase
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
	peeking    bool        // tryOnly watches the node ahead, which may be lingering (see onWatchSet)
	misjudged  bool        // the Decider called our listed node missing: fail once it is gone
	// stopping: a lapse of trust lost the lease, and its holder may still
	// be stopping (see AwaitStop): the node's delete waits for Stopped, or
	// for the engine's close, however soon the session answers again.
	stopping bool
}

// New returns a machine for one acquisition, in phase Unstarted: Start
// sets it going.
func New(cfg Config) Machine {
	if cfg.Lender != "" {
		cfg.Seq = cfg.Lender
	}
	return Machine{
		lockPath:  cfg.LockPath,
		prefix:    cfg.Prefix,
		decide:    cfg.Decide,
		newID:     cfg.NewID,
		borrowed:  cfg.Seq,
		tryOnly:   cfg.TryOnly,
		failExp:   cfg.FailOnExpiry,
		connected: cfg.Connected,
		untrusted: cfg.Untrusted,
	}
}

// Phase is where the machine stands.
func (c *Machine) Phase() Phase { return c.phase }

// LockPath is the lock path the machine contends for.
func (c *Machine) LockPath() string { return c.lockPath }

// Prefix is the node name's prefix after the protected id: the recipe's
// kind of node.
func (c *Machine) Prefix() string { return c.prefix }

// Node is the name of the machine's node, once known and while it exists
// as far as the machine knows; "" otherwise.
func (c *Machine) Node() string { return c.node }

// NodePath is the full path of Node; "" when Node is.
func (c *Machine) NodePath() string { return c.full }

// CreatePath is the path the machine's create names: the lock path, the
// protected id of its current attempt and the prefix, and the borrowed
// number if any (the server appends one otherwise).
func (c *Machine) CreatePath() string {
	return c.lockPath + "/_c_" + c.id + "-" + c.prefix + c.borrowedSeq()
}

// borrowedSeq is the borrowed number, "" for a sequential node.
func (c *Machine) borrowedSeq() string {
	if n, ok := queue.Parse(c.borrowed); ok {
		return fmt.Sprintf("%010d", n.Seq) // as the server wrote it in the lender's name
	}
	return c.borrowed
}

// Granted reports whether the machine holds, or held, the lock.
func (c *Machine) Granted() bool { return c.granted }

// Next reports whether the recipe, at the machine's last listing, found
// it Next behind the node it watches (see Decision.Next): the departure
// of that node, once a holder's, grants it without listing again.
func (c *Machine) Next() bool { return c.next }

// TryOnly reports whether the machine gives up rather than wait.
func (c *Machine) TryOnly() bool { return c.tryOnly }

// Borrowed reports whether the machine's node has a borrowed sequence
// number (Config.Seq).
func (c *Machine) Borrowed() bool { return c.borrowed != "" }

// ShareWatch hands the machine path, a string equal to the path of the
// node it watches, to keep instead of its own copy: the core shares the
// path of a node of its own among the waiters that watch it, so that a
// queue of thousands keeps one string per node. Any other path is
// ignored.
func (c *Machine) ShareWatch(path string) {
	if path == c.watch {
		c.watch = path
	}
}

// ForceEnd ends the machine without stepping it, as the engine does with
// what is left when closing runs out of time: it is Done, and its
// acquisition counts as resolved. It reports whether the acquisition was
// unresolved until then, for the caller to resolve it.
func (c *Machine) ForceEnd() (unresolved bool) {
	unresolved = !c.resolved
	c.resolved = true
	c.phase = Done
	return unresolved
}

// retryAction is what a parked contender does when it may retry.
type retryAction int

const (
	retryNone    retryAction = iota
	retryRecover             // a create's fate is unknown: look for our protected id (Recover)
	retryList
	retryDelete
)

// lenderListed reports whether a node with a borrowed number may be
// granted on listing l: the node whose number it took is listed beside it,
// that very node when the engine named it (Config.Lender), else any
// exclusive node other than ours with the same number. Always true for a
// node of our own number. Downgrades are rare, so a scan is cheap.
func (c *Machine) lenderListed(l *queue.Listing) bool {
	if c.borrowed == "" {
		return true
	}
	if _, named := queue.Parse(c.borrowed); named {
		// The very node we borrowed from: another node of that number is
		// another incarnation's of the path (ours went, the path was
		// reaped and made again), and ours would take its place.
		return l.Has(c.borrowed)
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

// requeuesOnExpiry reports whether a contender not yet granted queues again
// under a new session when its session expires; otherwise it fails with
// ErrSessionExpired. One asked to fail (Config.FailOnExpiry: the engine's
// setting, or the request's) does not, and neither does a node with a
// borrowed sequence number, which in a new session would jump the queue.
func (c *Machine) requeuesOnExpiry() bool { return !c.failExp && c.borrowed == "" }

// setNode records our node. Its full path is kept once, and the name and
// protected id are slices of it, so that a waiter keeps one string.
func (c *Machine) setNode(name string) {
	c.full = c.lockPath + "/" + name
	c.node = c.full[len(c.full)-len(name):]
	if i := strings.Index(c.node, c.id); c.id != "" && i >= 0 {
		c.id = c.node[i : i+len(c.id)]
	}
}

func (c *Machine) clearNode() { c.node, c.full = "", "" }

// inFlight reports whether a request of this contender awaits its reply.
func (c *Machine) inFlight() bool {
	switch c.phase {
	case Creating, Listing, Watching, Deleting:
		return true
	}
	return false
}

// Step advances the machine by one input and returns the effects the
// core must carry out, in order. A Done machine ignores every input.
func (c *Machine) Step(in Input) []Effect {
	if c.phase == Done {
		return nil
	}
	switch in.Kind {
	case Start:
		if c.phase != Unstarted {
			return nil // started once
		}
		return c.create()
	case Created:
		return c.onCreated(in)
	case Listed:
		return c.onListed(in)
	case WatchSet:
		return c.onWatchSet(in)
	case WatchFired:
		return c.onWatchFired()
	case Deleted:
		return c.onDeleted(in)
	case Release:
		return c.onRelease()
	case Cancel:
		return c.onCancel(in)
	case Disconnected:
		c.connected = false
		if c.phase == Held && !c.lost {
			return []Effect{{Kind: Suspend}}
		}
		return nil
	case Reconnected:
		return c.onReconnected()
	case Expired:
		return c.onExpired()
	case Untrusted:
		return c.onUntrusted()
	case Trusted:
		c.untrusted = false
		return nil
	case GrantRefused:
		return c.onRefused(in)
	case Retry:
		return c.onRetry()
	case Handoff:
		return c.onHandoff(in)
	case Stopped:
		return c.onStopped()
	}
	return nil
}

// onHandoff: the holder we were next behind is gone, by its own release
// through our engine, so we hold without listing again.
func (c *Machine) onHandoff(in Input) []Effect {
	switch {
	case c.phase == Waiting && c.next && !c.cancelled:
		return c.grant(in.Pzxid)
	case c.phase == Waiting:
		return c.list()
	case c.phase == Watching:
		c.fired = true
	}
	return nil
}

// create starts a fresh node under a fresh protected id: a node of an
// earlier id belongs to an earlier attempt and is never adopted.
func (c *Machine) create() []Effect {
	c.id = c.newID()
	c.clearNode()
	c.recovering = false
	c.phase = Creating
	return []Effect{{Kind: Create, Path: c.CreatePath()}}
}

// list asks for a listing of the lock path. While a create's fate is
// unknown, that is the recovery read, whatever asked for it (a retry, a
// cleanup, a reconnect): the executor syncs the lock path first, since the
// server answering may be a follower that has not applied the create yet,
// and a listing without it would have us create a second node while the
// first, made, waits ahead of us with no owner watching it. It also checks
// who owns a node carrying our id: only one of this session is ours.
func (c *Machine) list() []Effect {
	c.phase = Listing
	if c.recovering {
		return []Effect{{Kind: Recover, Path: c.lockPath, ID: c.id}}
	}
	return []Effect{{Kind: List, Path: c.lockPath}}
}

func (c *Machine) park(a retryAction) []Effect {
	c.phase = Parked
	c.retry = a
	return []Effect{{Kind: Park}}
}

// fail resolves the acquisition with err (once) and cleans up.
func (c *Machine) fail(err error) []Effect {
	c.cancelled = true
	var effs []Effect
	if !c.resolved {
		c.resolved = true
		effs = append(effs, Effect{Kind: Fail, Err: err})
	}
	return append(effs, c.cleanup()...)
}

// cleanup deletes our node if we have or may have one, then ends.
func (c *Machine) cleanup() []Effect {
	switch {
	case c.node != "":
		c.phase = Deleting
		return []Effect{{Kind: Delete, Path: c.full}}
	case c.recovering:
		return c.list() // find our node by its protected id, then delete it
	}
	return c.finish()
}

func (c *Machine) finish() []Effect {
	c.phase = Done
	var effs []Effect
	switch {
	case c.resolved:
	case c.wouldBlock:
		c.resolved = true
		effs = append(effs, Effect{Kind: Fail, Err: ErrWouldBlock})
	case c.misjudged:
		c.resolved = true
		effs = append(effs, Effect{Kind: Fail, Err: fmt.Errorf("%w: it called this contender's node on %s missing", ErrBadDecision, c.lockPath)})
	}
	return append(effs, Effect{Kind: Forget})
}

// unstale handles the reply to a request that was in flight when the
// session expired. Our node, if we had one, is gone; only a create may have
// made a new one (sent late, in the new session), so a create's reply is
// still followed.
func (c *Machine) unstale() []Effect {
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

func (c *Machine) onCreated(in Input) []Effect {
	if c.phase != Creating {
		return nil
	}
	if c.stale && in.Outcome != input.OK && in.Outcome != input.ConnLoss {
		// The create failed: no node exists. Start again under the new session.
		return c.unstale()
	}
	switch in.Outcome {
	case input.OK:
		c.setNode(in.Name)
		stale := c.stale
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
		if in.Fresh && !stale {
			// Made with its lock path, the path's first child: the
			// children at the create were this node alone, which a
			// listing would only tell again. Not after an expiry heard
			// of meanwhile: the reply may come from the session that
			// ended, and the node be gone with it; a listing tells.
			c.phase = Listing
			return c.onListed(Input{Kind: Listed, Children: []string{c.node}, Pzxid: in.Pzxid, Predicted: true})
		}
		return c.list()
	case input.NoNode:
		if c.cancelled {
			return c.finish()
		}
		if c.borrowed != "" {
			// The lock path is gone, and with it the node whose place in
			// the queue ours was to take.
			return c.fail(errBorrowedPlaceGone)
		}
		// The lock path is missing: the next create makes it in the same
		// request, so a path made is never left without the node that
		// would let the server reap it.
		effs := c.create()
		effs[0].Cold = true
		return effs
	case input.ConnLoss:
		c.recovering = true
		if c.stale && !c.requeuesOnExpiry() {
			// Whatever this made, it made in the new session, where it
			// has no place: find it, remove it, give up.
			c.stale = false
			return c.fail(ErrSessionExpired)
		}
		c.stale = false // recovery lists under whatever session comes next
		return c.park(retryRecover)
	case input.Closing:
		return c.fail(ErrClosed)
	}
	return c.fail(refused("create in", c.lockPath, in))
}

func (c *Machine) onListed(in Input) []Effect {
	if c.phase != Listing {
		return nil
	}
	if c.stale {
		return c.unstale()
	}
	switch in.Outcome {
	case input.OK:
	case input.NoNode:
		in.Children, in.Listing = nil, nil // the lock path is gone, and our node with it
	case input.ConnLoss:
		return c.park(retryList)
	case input.Closing:
		return c.fail(ErrClosed)
	default:
		err := refused("list", c.lockPath, in)
		switch {
		case c.recovering && in.Outcome == input.NoAuth:
			// The lock path is no longer readable to us: every read would
			// be refused for as long as the session lives. Our node, if
			// the lost create made one, is left to the session's end.
			c.recovering = false
			effs := c.fail(err)
			effs[len(effs)-1].Err = err // Forget: the engine logs it
			return effs
		case c.recovering:
			// Our node may exist, and only this read can find it to delete
			// it: give up the acquisition, never the node. Read again
			// after a backoff, as a refused delete is sent again; at once,
			// a refusal that persists would repeat as fast as the server
			// answers.
			c.cancelled = true
			var effs []Effect
			if !c.resolved {
				c.resolved = true
				effs = append(effs, Effect{Kind: Fail, Err: err})
			}
			park := c.park(retryRecover)
			park[0].Err = err
			return append(effs, park...)
		}
		return c.fail(err)
	}

	if c.recovering {
		// The reply to our recovery read: the listing was synced, and the
		// node carrying our id, if any, checked to be this session's.
		c.recovering = false
		switch {
		case in.Name != "":
			c.setNode(in.Name)
		case c.cancelled:
			return c.finish() // the create never happened: nothing to clean
		case c.borrowed != "":
			// A node with a borrowed number is made only while the node
			// it borrows from is there, and that may be gone by now: the
			// watchdog may have lost that lease, and the engine deleted
			// its node on reconnecting, before this read was answered.
			// Made now, ours could take a place a writer queued behind
			// has already been granted. The create is never sent again.
			return c.fail(errBorrowedPlaceGone)
		case in.Foreign:
			// Another session owns a node with our id: never ours to
			// adopt or delete. Our id is taken; start under a fresh one.
			return c.create()
		default:
			c.phase = Creating // the create never happened: send it again
			return []Effect{{Kind: Create, Path: c.CreatePath()}}
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
		if c.borrowed != "" {
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
		return c.grant(in.Pzxid)
	case c.tryOnly && in.Predicted:
		// A try never waits, so nothing would ever show it a child of the
		// prediction gone: another client's delete moves no count, and a
		// holder that left long ago would keep every later try out. Fail
		// only on children the server shows after the try began.
		return c.list()
	case c.tryOnly && !d.WatchChildren && mayLinger(d.Watch):
		// The node ahead may be another engine's, lingering, held by no
		// one: watched, its reply tells (Lingering), and the try waits for
		// it to go, or fails when it is held.
		c.peeking = true
	case c.tryOnly:
		c.wouldBlock = true
		c.cancelled = true
		return c.cleanup()
	}
	c.fired = false
	c.next = d.Next
	c.phase = Watching
	if d.WatchChildren {
		c.watch = c.lockPath
		return []Effect{{Kind: Watch, Path: c.watch, Children: true}}
	}
	c.watch = c.lockPath + "/" + d.Watch
	return []Effect{{Kind: Watch, Path: c.watch}}
}

// grant admits us, unless the session is untrusted. The engine may still
// refuse the grant (GrantRefused) when the watchdog lapsed after the loop
// last heard from it, so the grant is one effect, applied whole or not at
// all.
func (c *Machine) grant(token int64) []Effect {
	if c.untrusted {
		// The listing was answered, but the session may already be
		// expired: ask again once it is trusted.
		return c.park(retryList)
	}
	c.phase = Held
	c.granted = true
	c.resolved = true
	return []Effect{{Kind: Grant, Token: token, Suspended: !c.connected}}
}

// onRefused undoes the grant just made: the session stopped being trusted
// before the lease was handed out, or the reply that decided it came from
// a session that has ended since, so we wait, unresolved, as before it.
// In the second case the current session may well be trusted: the expiry,
// which the loop hears of next, queues us again.
func (c *Machine) onRefused(in Input) []Effect {
	if c.phase != Held || c.lost {
		return nil
	}
	if !in.SessionEnded {
		c.untrusted = true
	}
	c.granted = false
	c.resolved = false
	return c.park(retryList)
}

func (c *Machine) onWatchSet(in Input) []Effect {
	if c.phase != Watching {
		return nil
	}
	if c.stale {
		return c.unstale()
	}
	if c.cancelled {
		return c.cleanup()
	}
	peeked := c.peeking
	c.peeking = false
	switch in.Outcome {
	case input.OK:
		if c.fired {
			return c.list()
		}
		if peeked && (!Lingering(in.Version) || in.Revoked) {
			// Held (or our own engine's, which sends a lingering node
			// back before a try): the try fails. The watch fires in vain.
			c.wouldBlock = true
			c.cancelled = true
			return c.cleanup()
		}
		if in.ChildWatch {
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
				return c.grant(in.Pzxid)
			}
		}
		c.phase = Waiting
		return nil
	case input.NoNode:
		return c.list() // the predecessor left before the watch was set: look again
	case input.ConnLoss:
		return c.park(retryList)
	case input.Closing:
		return c.fail(ErrClosed)
	}
	return c.fail(refused("watch", c.watch, in))
}

// mayLinger reports whether the node named may be a cohort's node, kept
// after its last holder (mutex and write nodes: the kinds cohorts take).
func mayLinger(name string) bool {
	n, ok := queue.Parse(name)
	return ok && (n.Kind == queue.KindMutex || n.Kind == queue.KindWrite)
}

func (c *Machine) onWatchFired() []Effect {
	switch c.phase {
	case Watching:
		c.fired = true
	case Waiting:
		return c.list()
	}
	return nil
}

func (c *Machine) onRelease() []Effect {
	if c.phase != Held {
		return nil
	}
	c.cancelled = true
	c.phase = Deleting
	return []Effect{{Kind: Delete, Path: c.full}}
}

func (c *Machine) onDeleted(in Input) []Effect {
	if c.phase != Deleting {
		return nil
	}
	if c.stale {
		// Our node went with the expired session.
		c.stale = false
		c.clearNode()
		return c.afterDelete()
	}
	switch in.Outcome {
	case input.OK, input.NoNode:
		c.clearNode()
		return c.afterDelete()
	case input.ConnLoss:
		return c.park(retryDelete)
	case input.Closing:
		// Closing the session removes the ephemeral node.
		c.clearNode()
		return c.afterDelete()
	}
	if in.Outcome == input.NoAuth {
		// The lock path's ACL denies us the deletion of our own node (it
		// was changed, or made by another client, after our create). That
		// is no passing fault: asking again would be refused for as long
		// as the session lives. Give up: the node stays until the session
		// ends, and a release reports why.
		err := refused("delete", c.full, in)
		c.clearNode()
		var effs []Effect
		if c.granted && !c.lost {
			effs = append(effs, Effect{Kind: Released, Err: err})
		}
		effs = append(effs, c.finish()...)
		effs[len(effs)-1].Err = err // Forget: the engine logs the node left behind
		return effs
	}
	// Refused for a reason of its own. None is expected (the node is ours,
	// ephemeral, deleted at any version), and giving up would leave it
	// blocking the lock path for every client until the session ends: try
	// again after a backoff, for as long as the session lives.
	effs := c.park(retryDelete)
	effs[0].Err = fmt.Errorf("turnstile: delete %s: %w", c.full, in.Err)
	return effs
}

func (c *Machine) afterDelete() []Effect {
	if c.granted && !c.lost {
		return append([]Effect{{Kind: Released}}, c.finish()...)
	}
	return c.finish()
}

func (c *Machine) onCancel(in Input) []Effect {
	if in.Closing {
		c.closing = true
	}
	if in.Closing && c.stopping {
		// The engine closes: closing the session removes the node anyway,
		// so the wait for the holder to stop ends here, as the user chose.
		c.cancelled = true
		if !c.connected {
			return c.finish()
		}
		return c.onStopped()
	}
	if c.phase == Held {
		if !c.closing {
			return nil // granted before the cancel: the lease stands
		}
		c.lost = true
		c.cancelled = true
		c.phase = Deleting
		return []Effect{{Kind: Lost, Err: in.Err}, {Kind: Delete, Path: c.full}}
	}
	if c.cancelled && c.resolved {
		return nil // cleaning up already
	}
	c.cancelled = true
	var effs []Effect
	if !c.resolved {
		c.resolved = true
		effs = append(effs, Effect{Kind: Fail, Err: in.Err})
	}
	switch c.phase {
	case Unstarted:
		return append(effs, c.finish()...)
	case Waiting:
		return append(effs, c.cleanup()...)
	case Parked:
		if c.closing && !c.connected {
			// No server to talk to: closing the session removes our node.
			return append(effs, c.finish()...)
		}
	}
	// A request is in flight, or we wait to retry: its reply (or the retry)
	// continues the cleanup.
	return effs
}

// onStopped: the holder of the lease a lapse lost has had its margin to
// stop; the node may go.
func (c *Machine) onStopped() []Effect {
	if !c.stopping {
		return nil
	}
	c.stopping = false
	if c.phase == Parked && c.connected {
		return c.onRetry()
	}
	return nil // the reconnect retries the delete
}

func (c *Machine) onReconnected() []Effect {
	c.connected = true
	switch c.phase {
	case Held:
		if !c.lost {
			return []Effect{{Kind: Resume}}
		}
	case Waiting:
		// The watch survives a reconnect, but a notification may have been
		// missed in between: look again.
		return c.list()
	case Parked:
		return c.onRetry()
	}
	return nil
}

func (c *Machine) onExpired() []Effect {
	c.connected = false
	if c.granted {
		switch {
		case c.phase == Held:
			c.lost = true
			c.clearNode()
			c.phase = Done
			return []Effect{{Kind: Lost, Err: ErrSessionExpired}, {Kind: Forget}}
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
	if c.phase == Parked && c.retry == retryRecover {
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

func (c *Machine) onUntrusted() []Effect {
	c.untrusted = true
	if c.phase == Held && !c.lost {
		// The server may expire us at any moment and grant the lock to
		// someone else: the holder must stop now. Should the session
		// survive, our node is deleted once the connection is back and the
		// holder's margin to stop has passed: a delete sooner would let the
		// next holder in while this one may still be stopping.
		c.lost = true
		c.stopping = true
		return append([]Effect{{Kind: Lost, Err: ErrLost}, {Kind: AwaitStop}}, c.park(retryDelete)...)
	}
	return nil
}

func (c *Machine) onRetry() []Effect {
	if c.phase != Parked || c.stopping && c.retry == retryDelete {
		return nil
	}
	a := c.retry
	c.retry = retryNone
	switch a {
	case retryRecover:
		return c.list()
	case retryList:
		if c.cancelled {
			return c.cleanup()
		}
		return c.list()
	case retryDelete:
		c.phase = Deleting
		return []Effect{{Kind: Delete, Path: c.full}}
	}
	return nil
}
