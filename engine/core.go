package engine

import (
	"log/slog"
	"maps"
	"slices"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// core is the engine's deterministic heart: every contender, every watch,
// listing, batch, timer and session flag the engine keeps, and every
// decision made on them. It is single-threaded and reaches nothing outside
// itself: no goroutine, no ZooKeeper client, no clock, no timer. Events go
// in through step, one at a time; what the core decided comes out of ready
// as actions for the runtime to carry out (requests to send, timers to arm
// or stop, contexts to follow, futures to resolve, leases to mark, reports,
// the engine's state). The shape is etcd raft's RawNode: Step in, Ready out.
//
// The runtime (runtime.go) owns the core and runs it on the loop goroutine;
// the simulator (sim_test.go) runs the same runtime with every seam of the
// outside world replaced, so a seed replays a whole run.
//
// The core asks the outside world one question, synchronously: whether the
// session is still trusted as a lease is granted (see admitter). The
// answer cannot travel as an event, because the watchdog that gives it
// closes the Lost channels of admitted leases on its own timer, whatever
// the loop is doing, and "admitted before the lapse" must be decided under
// the watchdog's lock.
type core struct {
	cfg   Config
	log   *slog.Logger
	trust admitter
	// newID makes a contender's protected id; newLease makes the Lease
	// handed to a granted contender. Both are data constructors supplied by
	// the runtime (ids are random in production, seeded in the simulator).
	newID    func() string
	newLease func(id uint64, path, node string, token int64) *Lease
	// count and gauges are the figures Stats, Sessions and the metrics
	// read from other goroutines: atomics the core only adds to.
	count  *counters
	gauges *gauges

	rd ready // what the core decided since the runtime last took it

	nextID     uint64
	contenders map[uint64]*entry
	watchers   map[string][]uint64 // node path → contenders watching it on the server
	localWatch map[string][]uint64 // our node path → our contenders waiting for it to go
	nodes      map[string]uint64   // our own nodes' paths → their contenders
	cancels    map[<-chan struct{}]*cancelGroup
	listings   map[string]*listing // lock path → shared listing
	parents    map[string][]uint64 // lock path → contenders awaiting its creation
	revokers   map[string]uint64   // held node path → its revocable contender
	// Revocable holders whose revocation watch failed on a connection loss.
	retryRevoke []uint64
	deleted     deletion // the delete reply being handled
	// borrowed counts, per lock path, the live contenders whose node has a
	// borrowed sequence number (Request.Seq): while there is one, no local
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

	timers     map[uint64]struct{} // armed, not yet fired or stopped
	nextTimer  uint64
	closeTimer uint64
	retryAt    map[uint64]uint64 // timer id → contender to retry

	session   int64
	connected bool
	// untrusted: the watchdog last said the server may have expired the
	// session; contenders are told so as they are made.
	untrusted bool
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

// admitter is the session watchdog as the core sees it (sessionTrust in
// production and in the simulator).
type admitter interface {
	// admit registers a lease about to be granted under session, so that a
	// lapse of trust closes its Lost channel; false, and nothing
	// registered, when the session is not trusted now or is not the one
	// the watchdog follows.
	admit(l *Lease, session int64) bool
	// forget unregisters a lease that ended.
	forget(l *Lease)
	// follows reports whether the watchdog follows session.
	follows(session int64) bool
}

// entry is the core's record of one contender.
//
// Thousands of waiters each keep one, so its size is watched: 256 bytes
// (a size class) with the contender inside.
type entry struct {
	id       uint64
	c        contender.Machine
	data     []byte // the node's data
	acquired *Future[*Lease]
	lease    *Lease
	released *Future[struct{}]
	cancelOn <-chan struct{} // the acquisition context's Done, while watched
	watching string
	attempts uint16 // consecutive parks, for backoff
	// revocable: a held lease watches its node for revocation requests;
	// revokeWatch: such a watch is registered in revokers; revoked: a
	// request came, and no more watch is needed; ended: the lease was
	// told it ended (lost or released).
	revocable, revokeWatch, revoked, ended bool
	local                                  bool // watching is one of our own nodes (see localWatch)
}

func newCore(cfg Config, trust admitter, count *counters, gauges *gauges) *core {
	return &core{
		cfg:        cfg,
		log:        cfg.Logger,
		trust:      trust,
		count:      count,
		gauges:     gauges,
		contenders: make(map[uint64]*entry),
		watchers:   make(map[string][]uint64),
		localWatch: make(map[string][]uint64),
		nodes:      make(map[string]uint64),
		cancels:    make(map[<-chan struct{}]*cancelGroup),
		listings:   make(map[string]*listing),
		parents:    make(map[string][]uint64),
		revokers:   make(map[string]uint64),
		borrowed:   make(map[string]int),
		views:      make(map[string]*pathView),
		strayPins:  make(map[string]bool),
		changing:   make(map[string]int),
		commit:     groupCommit{maxInFlight: cfg.MaxInFlight, aclBytes: aclSize(cfg.ACL)},
		timers:     make(map[uint64]struct{}),
		retryAt:    make(map[uint64]uint64),
		untrusted:  true,         // until the first session's handshake is answered
		state:      StateExpired, // as stateWatch starts
	}
}

// step handles one event.
func (c *core) step(ev input.Event) {
	switch ev := ev.(type) {
	case input.Command:
		c.handleCommand(ev.Payload)
	case input.OpDone:
		c.handleOpDone(ev)
	case input.RequestDone:
		c.commit.done(ev.Write)
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

// endTurn ends a batch of events: it sends the creates and deletes the
// batch decided, as few requests as group commit allows, and the requests
// the in-flight bound held back; and it shuts the core down once it is
// closing and nothing is left.
func (c *core) endTurn() {
	c.commit.flush(&c.rd)
	if c.closing && len(c.contenders) == 0 && !c.exited {
		c.exited = true
		c.rd.Exit = true
		c.setState(StateClosed)
	}
}

// ready hands over what the core decided since the last call.
func (c *core) ready() ready {
	rd := c.rd
	c.rd = ready{}
	return rd
}

// byID returns the contenders in the order they were made. Steps that
// visit every contender go in this order, not the map's random one, so
// that the requests they send, and so a whole run, follow from the events
// alone (the simulator replays a run from its seed). It costs a sort on
// rare events: a session change, a lapse of trust, Close.
func (c *core) byID() []*entry {
	ids := slices.Sorted(maps.Keys(c.contenders))
	ens := make([]*entry, len(ids))
	for i, id := range ids {
		ens[i] = c.contenders[id]
	}
	return ens
}

// setState puts the engine's state in Ready when it changed.
func (c *core) setState(s State) {
	if s != c.state {
		c.state = s
		c.rd.State, c.rd.StateChanged = s, true
	}
}

// publishState derives the engine's state from the session flags.
func (c *core) publishState() {
	if c.exited {
		return
	}
	s := StateConnected
	switch {
	case c.session == 0 || c.untrusted:
		s = StateExpired
	case !c.connected:
		s = StateSuspended
	}
	c.setState(s)
}
