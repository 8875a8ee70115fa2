// Package core is the engine's deterministic core; package engine is its
// runtime. It imports no client, network, clock, goroutine, context or
// logger, and nothing of package engine: TestPure holds it to that by its
// dependencies.
package core

import (
	"maps"
	"slices"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/cancelgroup"
	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// Core is the engine's deterministic heart: every contender, every watch,
// listing, batch, timer and session flag the engine keeps, and every
// decision made on them. It is single-threaded and reaches nothing outside
// itself: no goroutine, no ZooKeeper client, no clock, no timer, no
// logger, no future or lease. Events go in through Step, one at a time;
// what the core decided comes out of Ready as plain values keyed by
// contender ids, for the runtime to carry out (requests to send, timers
// to arm or stop, cancel groups to follow, notices to users, log records,
// counts, the engine's state). The shape is etcd raft's RawNode: Step in,
// Ready out.
//
// The runtime (package engine, runtime.go) owns the core and runs it on
// the loop goroutine; it keeps, by contender id, the futures, leases and
// contexts the core's decisions are about. The simulator (engine's
// sim_test.go) runs the same runtime with every seam of the outside world
// replaced, so a seed replays a whole run.
//
// The core asks the outside world one question, synchronously: whether the
// session is still trusted as a lease is granted (see Admitter). The
// answer cannot travel as an event, because the watchdog that gives it
// closes the Lost channels of admitted leases on its own timer, whatever
// the loop is doing, and "admitted before the lapse" must be decided under
// the watchdog's lock.
type Core struct {
	cfg      Config
	watchdog Admitter

	rd Ready // what the core decided since the runtime last took it
	// spare is the Ready handed over last: its lists are the next one's,
	// once the runtime is done with them (see Ready).
	spare Ready

	contenders map[uint64]*entry
	watchers   map[string][]uint64 // node path → contenders watching it on the server
	localWatch map[string][]uint64 // our node path → our contenders waiting for it to go
	nodes      map[string]uint64   // our own nodes' paths → their contenders
	// lastID is the last acquisition or attempt id given or taken (see
	// acquire).
	lastID  uint64
	coh     cohorting // lock cohorting (cohorts.go)
	cancels cancelgroup.Set[uint64]
	// followers counts, per cancel group, the kinds of acquisition with a
	// member in it (see cancel.go's follow).
	followers map[uint64]int
	listings  map[string]*listing // lock path → shared listing
	revokers  map[string]uint64   // held node path → its revocable contender
	// Revocable holders whose revocation watch failed on a connection loss.
	retryRevoke []uint64
	deleted     deletion // the delete reply being handled
	// borrowed counts, per lock path, the live contenders whose node has a
	// borrowed sequence number (Acquire.Seq): while there is one, no local
	// handoff happens on the path (see Decision.Next).
	borrowed map[string]int

	commit groupCommit // requests decided and not yet sent, and the bound on those in flight
	// views are what the core knows of the lock paths it may cycle on
	// without listing, and their pins (see prediction.go); pinTimer sweeps
	// them.
	views    map[string]*pathView
	pinTimer uint64
	// strayPins are pins that may exist though no view names them: a
	// pin's create answered after an expiry forgot its view (sent before
	// the expiry, or held by group commit and sent under the next
	// session), made or with its outcome unknown. The sweep deletes each
	// until a delete is answered; the value is whether one is in flight.
	strayPins map[string]bool
	// changing counts, per lock path, this engine's creates and deletes of
	// its children in flight (pins included).
	changing map[string]int
	// warm are lock paths known to exist lately (see cold.go).
	warm warmSet
	// made are the contenders whose node was made with its lock path; kept
	// out of entry, which every waiter pays for.
	made map[uint64]struct{}

	timers     map[uint64]struct{} // armed, not yet fired or stopped
	nextTimer  uint64
	closeTimer uint64
	retryAt    map[uint64]uint64 // timer id → contender to retry
	// stopAt: timer id → contender whose lease a lapse lost, to be told its
	// holder has had stopMargin to stop (contender.AwaitStop).
	stopAt map[uint64]uint64
	// stopMargin is the watchdog's lost margin at the latest lapse: how
	// long after Lost() the server could not yet have expired the session.
	stopMargin time.Duration

	session   int64
	connected bool
	// untrusted: the watchdog last said the server may have expired the
	// session; contenders are told so as they are made.
	untrusted bool
	// lapsed: untrusted because the session went unanswered too long
	// (not because there is no session yet, or the server expired it):
	// StateLapsed, as the session may live on.
	lapsed    bool
	everReady bool
	closing   bool
	exited    bool
	state     State // the state last put in Ready

	// wrapLogged holds the lock paths whose wrapped sequence numbers were
	// logged (see parseListing); made on first use.
	wrapLogged map[string]struct{}
	// foreignLogged holds the children of lock paths, no lock node, that
	// were logged (see noteForeign); made on first use.
	foreignLogged map[string]struct{}
}

// Config is what the core needs of the engine's configuration, as
// plain values.
type Config struct {
	// CloseTimeout bounds how long Close waits for nodes to be deleted.
	CloseTimeout time.Duration
	// MaxInFlight bounds the requests outstanding at once.
	MaxInFlight int
	// ACLBytes is the encoded size of the ACL a create at path carries
	// (Config.ACL, or Config.ACLFor's choice for the path); nil counts
	// none, as the scripts do.
	ACLBytes func(path string) int
	// FailOnExpiry fails every waiter when the session expires.
	FailOnExpiry bool
	// NoPin turns the listing-free cycle off (see prediction.go).
	NoPin bool
	// Prune lets a node's delete take the lock path made with it (see
	// cold.go, prunes): the engine's Config.DeleteLockPaths, off by
	// default. A kazoo lock makes sure of its path once and then only
	// creates under it, so a path deleted after kazoo saw it fails kazoo's
	// next acquire (NoNodeError); the server's reaping, an empty
	// container's checkIntervalMs later, leaves it far fewer chances.
	Prune bool
	// PinIdle is how long a pinned lock path may go without a contender
	// of the engine before its pin is deleted (0: DefaultPinIdle).
	PinIdle time.Duration
	// Observe: an observer wants reports.
	Observe bool
	// Root is the engine's namespace, taken off the paths the core logs.
	Root string
	// NewID makes a contender's protected id (random in production,
	// seeded in the simulator).
	NewID func() string
	// Debug reports whether debug records are wanted now (the logger's
	// level may change while the engine runs); nil: never.
	Debug func() bool
	// CancelErrs are the errors, beside contender.ErrClosed, with which an
	// acquisition ends as cancelled rather than failed (the contexts'
	// own: context.Canceled, context.DeadlineExceeded).
	CancelErrs []error
	// Cohort bounds lock cohorting (see cohorts.go); its errors and ids
	// are the core's own.
	Cohort CohortConfig
}

// Admitter is the session watchdog as the core sees it, keyed by
// contender id: the runtime maps each id to its lease.
type Admitter interface {
	// Admit registers the lease g, about to be granted under session, so
	// that a lapse of trust closes its Lost channel; false, and nothing
	// registered, when the session is not trusted now or is not the one
	// the watchdog follows. The lease is whole from here on: whoever reads
	// the engine's leases sees it granted, before its notice reaches the
	// user.
	Admit(g Grant, session int64) bool
	// Forget unregisters the lease of acquisition id: it ended.
	Forget(id uint64)
	// Follows reports whether the watchdog follows session.
	Follows(session int64) bool
	// Vouches reports whether the watchdog holds the lease of id, admitted
	// and not lost, and trusts the session now: a cohort's pass is a
	// grant, and asks it before the machine decides one (see Admit for
	// the grant itself). now is the watchdog's clock, which the machine's
	// bounds are measured on.
	Vouches(id uint64) (trusted bool, now time.Duration)
}

// Grant is a lease the core is about to grant: acquisition ID's, on the
// node at Node (a child of the lock path Path), with fencing token Token
// (the zxid of the node's grant), as pass Pass of a cohort's node (0: the
// node's own grant; see engine.Lease.Token).
type Grant struct {
	ID         uint64
	Path, Node string
	Token      int64
	Pass       int
	// Carrier, for a cohort's member, is the acquisition whose node the
	// member holds (the cohort's attempt); 0 for any other.
	Carrier uint64
}

// entry is the core's record of one contender.
//
// Thousands of waiters each keep one, so its size is watched: 256 bytes
// (a size class) with the contender inside.
type entry struct {
	id    uint64
	c     contender.Machine
	req   *Acquire // the acquisition it runs: its node's data, its Ref
	node  string   // the leased node's path, once granted (see leased)
	token int64    // the grant's token, once granted
	// cancelOn is its place in its cancel group while followed (nil:
	// none), made only then: held inline, a member's links would take the
	// entry past its size class, and a context that never ends needs none.
	cancelOn *cancelgroup.Member[uint64]
	watching string
	attempts uint8 // consecutive parks, for backoff (at most 20)
	// releasing: a release waits for its outcome.
	releasing bool
	// revocable: a held lease watches its node for revocation requests;
	// revokeWatch: such a watch is registered in revokers; revoked: a
	// request came, and no more watch is needed; ended: the lease was
	// told it ended (lost or released).
	revocable, revokeWatch, revoked, ended bool
	local                                  bool // watching is one of our own nodes (see localWatch)
	carrier                                bool // it acquires a cohort's node (see cohorts.go)
}

// leased reports whether the contender was granted: the runtime keeps a
// lease for it.
func (en *entry) leased() bool { return en.node != "" }

// New makes a core that has no contender and no session yet.
func New(cfg Config, trust Admitter) *Core {
	if cfg.PinIdle == 0 {
		cfg.PinIdle = DefaultPinIdle
	}
	if cfg.ACLBytes == nil {
		cfg.ACLBytes = func(string) int { return 0 }
	}
	c := &Core{
		cfg:        cfg,
		watchdog:   trust,
		contenders: make(map[uint64]*entry),
		watchers:   make(map[string][]uint64),
		localWatch: make(map[string][]uint64),
		nodes:      make(map[string]uint64),
		listings:   make(map[string]*listing),
		revokers:   make(map[string]uint64),
		borrowed:   make(map[string]int),
		views:      make(map[string]*pathView),
		strayPins:  make(map[string]bool),
		changing:   make(map[string]int),
		commit:     groupCommit{maxInFlight: cfg.MaxInFlight, aclBytes: cfg.ACLBytes},
		timers:     make(map[uint64]struct{}),
		retryAt:    make(map[uint64]uint64),
		stopAt:     make(map[uint64]uint64),
		followers:  make(map[uint64]int),
		untrusted:  true,         // until the first session's handshake is answered
		state:      StateExpired, // as the runtime's state starts
	}
	cfg.Cohort.NewID = c.newID // one id space: see cohorts.go
	c.coh = newCohorts(cfg.Cohort, cfg.FailOnExpiry)
	return c
}

// Step handles one event.
func (c *Core) Step(ev input.Event) {
	switch ev := ev.(type) {
	case input.Command:
		c.handleCommand(ev.Payload)
	case input.OpDone:
		c.handleOpDone(ev)
	case input.RequestDone:
		c.commit.done(ev.Write, ev.Ops)
	case input.WatchFired:
		c.watchFired(ev)
	case input.SessionChanged:
		c.handleSession(ev)
	case input.TrustChanged:
		c.handleTrust(ev)
	case input.TimerFired:
		c.handleTimer(ev.ID)
	}
}

// EndTurn ends a batch of events: it sends the creates and deletes the
// batch decided, as few requests as group commit allows, and the requests
// the in-flight bound held back; and it shuts the core down once it is
// closing and nothing is left, stopping every timer still armed.
func (c *Core) EndTurn() {
	c.commit.flush(&c.rd)
	if c.closing && len(c.contenders) == 0 && !c.exited {
		c.exited = true
		c.rd.Exit = true
		c.setState(StateClosed)
		c.stopTimers()
	}
}

// Ready hands over what the core decided since the last call. Its lists
// hold until the next call to Ready, by which the runtime has carried them
// out: the core then fills them again, so that a busy loop makes no list
// per event.
func (c *Core) Ready() Ready {
	rd := c.rd
	c.rd = Ready{Logs: recycle(c.spare.Logs), Requests: recycle(c.spare.Requests), Timers: recycle(c.spare.Timers),
		Contexts: recycle(c.spare.Contexts), Notices: recycle(c.spare.Notices), Loopback: recycle(c.spare.Loopback)}
	c.spare = rd
	return rd
}

// maxRecycled bounds the lists Ready reuses: a burst's (a reconnect with
// thousands of waiters) is let go.
const maxRecycled = 256

// recycle empties a list of a Ready the runtime is done with, for reuse.
func recycle[T any](s []T) []T {
	if cap(s) > maxRecycled {
		return nil
	}
	clear(s)
	return s[:0]
}

// Contenders is the number of contenders the core keeps.
func (c *Core) Contenders() int { return len(c.contenders) }

// EachContender calls f with the id of every live contender and its
// machine, for reading: the simulator's checker looks at them.
func (c *Core) EachContender(f func(id uint64, m *contender.Machine)) {
	for id, en := range c.contenders {
		f(id, &en.c)
	}
}

// byID returns the contenders in the order of their ids, which the
// core gives in the order acquisitions, and cohorts' attempts, reach it. Steps that
// visit every contender go in this order, not the map's random one, so
// that the requests they send, and so a whole run, follow from the events
// alone (the simulator replays a run from its seed). It costs a sort on
// rare events: a session change, a lapse of trust, Close.
func (c *Core) byID() []*entry {
	ids := slices.Sorted(maps.Keys(c.contenders))
	ens := make([]*entry, len(ids))
	for i, id := range ids {
		ens[i] = c.contenders[id]
	}
	return ens
}

// setState puts the engine's state in Ready when it changed.
func (c *Core) setState(s State) {
	if s != c.state {
		c.state = s
		c.rd.State, c.rd.StateChanged = s, true
	}
}

// publishState derives the engine's state from the session flags.
func (c *Core) publishState() {
	if c.exited {
		return
	}
	s := StateConnected
	switch {
	case c.session == 0 || c.untrusted && !c.lapsed:
		s = StateExpired
	case c.untrusted:
		s = StateLapsed
	case !c.connected:
		s = StateSuspended
	}
	c.setState(s)
}
