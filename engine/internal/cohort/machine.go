// Package cohort is lock cohorting's state machine (Dice, Marathe and
// Shavit, PPoPP 2012): when acquisitions of one engine queue for the same
// lock, one of them, the carrier, queues a node on ZooKeeper; the others
// wait here, in FIFO order, without a node. Once the carrier's node is
// granted, the lease passes from holder to holder among them, each pass a
// few memory operations and no request, until a bound is reached (passes,
// or time since the grant with another client waiting); then the node goes
// back (is deleted), and the next local waiter queues a node of its own,
// behind whoever came meanwhile, with the rest still waiting here behind
// it.
//
// The machine holds every cohort of one engine and every decision on
// them; it is stepped by inputs (Step) and says what to do in effects
// (Ready), in ids and plain values. It reaches nothing: the engine's core
// steps it on the loop, as it steps contenders (see the core's
// cohorts.go): it names waiters, attempts and cancel groups, feeds it the
// watchdog's verdict and the clock as values, and carries the effects out
// (grants, acquisitions and releases of nodes, watches, timers). It is not
// safe for concurrent use.
//
// Passing goes on while another client waits, up to the bound: that
// client waits at most MaxHold from the grant (or from the notification
// that tells of it, if later) and the hold of the pass that started
// last, and the
// bounded unfairness buys the batch of passes that makes a lock contended
// across processes fast. Whoever waits is known from one listing of the
// lock path with a watch (AskWatch), asked once per grant of the node when
// a second local acquisition makes a pass possible: any other lock node in
// its reply (Watched), or the watch firing (a Release with Fired), says
// another client waits. Past MaxHold, passing goes on only while neither
// has (Stats.Renewed counts the grants that did): a give-back then would
// queue the next node behind nobody, and a client that queues later is
// heard of within one notification, after which the bound holds. No pass
// past MaxHold happens before that listing's reply. Config.YieldToOthers
// keeps the stricter policy
// instead: another client seen waiting ends the passing, after the
// current holder. It is known to wait from the listing that granted the
// node (Granted's Listed and Nodes) and, when that one showed nobody,
// from the listing with a watch. Until that reply is in, no pass happens
// under YieldToOthers: one could overtake a client queued since the
// grant. A grant with no local waiter asks nothing, so
// an uncontended lock costs what it did.
//
// Linger (Config.Linger, off by default) keeps a node after its last local
// release, for at most Linger and never past MaxHold from its grant, while
// no other client is seen waiting: the core arms a timer (Linger) and
// steps Wake when it fires, and on the watch's firing; a re-acquisition
// meanwhile is a pass (Vouch asks the watchdog's verdict first). Another
// client seen, the watchdog's trust gone, the node lost or the time up: the
// node goes back at once. So a client arriving at a lingering node waits
// for the watch's notification and the node's deletion, no longer.
//
// A try of another client cannot wait for what it cannot see: a node that
// lingers is marked (Mark) as it starts to, and unmarked (Unmark) once
// another client is seen while a holder of this engine has it again, so
// a try that finds a marked node ahead waits for the give-back or the
// unmark, one notification and one write away, and fails only on a node
// held (see contender's try).
package cohort

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/cancelgroup"
	"github.com/turnstile-go/turnstile/queue"
)

// PassBits is how many low bits of a fencing token number the local
// passes of one grant: token = zxid<<PassBits | pass.
const PassBits = 12

// The bounds on passing: the most a token can number, and the defaults a
// zero bound takes.
const (
	MaxPasses        = 1<<PassBits - 1
	DefaultMaxPasses = 1000
	DefaultMaxHold   = 100 * time.Millisecond
)

// Config is what bounds the passing of one node, and how losses end
// waiters.
type Config struct {
	// StrictFIFO turns cohorting off: no acquisition joins a cohort.
	StrictFIFO bool
	MaxPasses  int // the most local passes under one grant of a node
	// MaxHold: no pass starts this long after the grant while another
	// client is known to wait, or may (the listing with a watch not yet
	// answered).
	MaxHold time.Duration
	// Linger keeps a node after its last local release for up to this
	// long (and never past MaxHold from its grant) while no other client
	// is seen waiting, so that a re-acquisition is a pass; 0: off.
	Linger time.Duration
	// YieldToOthers ends the passing as soon as another client is seen
	// waiting (the node goes back after the current holder), and no pass
	// starts before the listing that tells is answered. Off, passing goes
	// on to the bound whoever waits.
	YieldToOthers bool
	// FailOnExpiry: an expiry of the session fails the waiters of every
	// cohort (the engine's Config.FailOnExpiry), not only of those whose
	// Key says so.
	FailOnExpiry bool
	// Closed and Expired are the errors (as errors.Is finds them) that
	// say a node was lost because the engine closed, or because the
	// session expired.
	Closed, Expired error
	// WouldBlock fails a try that joined a lingering node and could not
	// have it passed (see Join's Try).
	WouldBlock error
	// NewID gives each node's attempt its id (Start's Carrier): the
	// engine's core names the attempt's contender by it, so that waiters,
	// attempts and contenders share one id space. nil: the machine counts
	// its own.
	NewID func() uint64
}

// WithDefaults checks the bounds and gives zero ones their defaults.
func (c Config) WithDefaults() (Config, error) {
	switch {
	case c.MaxPasses < 0 || c.MaxHold < 0 || c.Linger < 0:
		return c, errors.New("negative Cohort bound")
	case c.MaxPasses > MaxPasses:
		return c, fmt.Errorf("Cohort.MaxPasses %d above the most a token can number (%d)", c.MaxPasses, MaxPasses)
	}
	if c.MaxPasses == 0 {
		c.MaxPasses = DefaultMaxPasses
	}
	if c.MaxHold == 0 {
		c.MaxHold = DefaultMaxHold
	}
	return c, nil
}

// Key is what the members of one cohort asked alike: the lock path (as
// the caller gave it), the kind of node, its data, and whether an expiry
// fails them.
type Key struct {
	Path         string
	Kind         queue.Kind
	Data         []byte
	FailOnExpiry bool
}

// InputKind says what happened.
type InputKind uint8

const (
	// Join: waiter Waiter, under cancel group Group (0: none), asks Key;
	// Data is the core's, kept with the waiter and handed back in its Hand
	// or Fail (its future), never read. Validated: its request was checked, so it may make a cohort (Req is
	// then what the cohort's nodes are acquired with, kept and handed back
	// in Start, never read). An unchecked one joins only a cohort that
	// exists, whose members asked the same and were checked. Try: it
	// fails rather than wait, and joins only a lingering node nobody else
	// waits for, so as not to find its own engine's node in its way: it is
	// passed the node, or fails with WouldBlock.
	Join InputKind = iota
	// Granted: the node of Carrier was granted, at Now, with Seen what the
	// listing that granted it showed. Lost (with Err): it was lost before
	// the core took it.
	Granted
	// Failed: the acquisition of Carrier's node failed with Err.
	Failed
	// Release: the holder Waiter of Cohort ends its turn, at Now; Trusted,
	// whether the watchdog vouched for the node's lease then; CarrierLost,
	// that lease is lost; Fired, the cohort's watch fired.
	Release
	// Watched: the listing AskWatch asked for the node of Carrier, with
	// Children (Failed: it failed), Self the node's own name; Trusted, Now,
	// CarrierLost and Fired as for Release.
	Watched
	// Lost: the node of Carrier was lost, for Err.
	Lost
	// Cancel: the contexts of cancel group Group ended, for Err.
	Cancel
	// Seal: a node with a borrowed number (a downgrade's) is made on Path:
	// no node of Path may pass on; each goes back at its holder's release.
	Seal
	// Wake: the node of Carrier may linger no more: Timer, the timer a
	// Linger effect armed fired; else a Vouch is answered or the watch
	// fired. Trusted, Now, CarrierLost and Fired as for Release.
	Wake
	// Clear: an acquisition of Path that is no cohort's member (a try of
	// another recipe) is about to queue a node of its own: every node of
	// Path that lingers, with no holder and no waiter, goes back now
	// (GiveBack, Yield), so that the acquisition finds it gone rather than
	// in its way. A lingering node is held by no one.
	Clear
	// Refused: the Hand of Carrier's node to Waiter (with its Data and
	// Group, as the Hand had them; Try, it joined as a try) was
	// refused as it was carried out (the watchdog's trust lapsed after the
	// verdict the machine decided on): the waiter queues again at the
	// head, and the node goes back, since nothing granted under it now
	// can be trusted.
	Refused
	// MarkFailed: a Mark or Unmark of Carrier's node was refused, or its
	// fate is unknown (the connection dropped): the parity of the node's
	// data version no longer tells other clients whether it lingers. It
	// lingers no more under this grant, and is not marked again.
	MarkFailed
)

// Input is one event. The fields each kind reads are named at the kind.
type Input struct {
	Kind                      InputKind
	Waiter, CohortID, Carrier uint64
	Group                     uint64
	Key                       Key
	Validated                 bool
	Req, Data                 any
	Now                       time.Duration
	Trusted, CarrierLost      bool
	Fired, Failed, Timer      bool
	Try                       bool
	Seen                      Seen
	Children                  []string
	Self, Path                string
	Err                       error
	Lost                      bool
}

// Seen is what the listing that granted a node showed, as Note noted it:
// Listed, that one did (not a deletion's reply: a local handoff), and
// Nodes, the lock nodes it held.
type Seen struct {
	Listed bool
	Nodes  int
}

// Note wraps decide, the recipe a cohort's node is acquired with, so that
// the listing that grants the node is noted in s: it is an exclusive
// holder's, so any other lock node in it waits behind this one. The
// wrapped recipe runs where the recipe would (the engine's loop), and s is
// read once the grant is told.
func Note(decide func(*queue.Listing, string) queue.Decision, s *Seen) func(*queue.Listing, string) queue.Decision {
	return func(l *queue.Listing, self string) queue.Decision {
		d := decide(l, self)
		if d.Holds {
			s.Listed, s.Nodes = true, len(l.Nodes())
		}
		return d
	}
}

// EffectKind says what to do.
type EffectKind uint8

const (
	// NotJoined: Waiter (under Group) found no cohort to join unchecked;
	// nothing of it is kept.
	NotJoined EffectKind = iota
	// Start: acquire a node for CohortID, as Carrier, with Req.
	Start
	// Abandon: nobody waits for Carrier's node any more: give its
	// acquisition up (a node granted all the same is released, see
	// GiveBack).
	Abandon
	// Hand: Waiter (with its Data, of cancel group Group) holds Cohort's
	// node, Carrier's, as pass Pass.
	Hand
	// Fail: Waiter's acquisition (with its Data) ends with Err.
	Fail
	// Ended: Waiter's turn ended: its release succeeds now.
	Ended
	// NotHolder: Waiter released, but does not hold (its node was lost):
	// its release reports its lease's loss.
	NotHolder
	// LoseHolder: Waiter's lease is lost with its node, Carrier's, for Err.
	LoseHolder
	// GiveBack: release Carrier's node; Waiter, when not 0, is the holder
	// whose release ends with the node's deletion. Yield: another client
	// waits for the node, and nothing of this engine's goes with its
	// deletion (no holder's release, no node of the cohort's next waiter),
	// so the deletion may leave at once, ahead of the engine's other
	// requests.
	GiveBack
	// AskWatch: list the path of Carrier's node with a watch, once.
	AskWatch
	// Follow and Unfollow: the first waiter of cancel group Group joined;
	// its last left (or the group ended).
	Follow
	Unfollow
	// Linger: Carrier's node lingers with no holder: step Wake with Timer
	// for it once After has passed.
	Linger
	// Vouch: a waiter joined Carrier's lingering node: step Wake for it
	// with the watchdog's verdict.
	Vouch
	// Mark and Unmark: write Carrier's node's data again (Req's, unchanged)
	// to mark it lingering, or held again, for other clients' tries: each
	// write moves its data version by one, and an odd version says it
	// lingers (queue.Lingering).
	Mark
	Unmark
)

// Effect is one thing to do. The fields each kind reads are named at the
// kind.
type Effect struct {
	Kind                      EffectKind
	Waiter, CohortID, Carrier uint64
	Group                     uint64
	Pass                      int
	Yield                     bool
	After                     time.Duration
	Err                       error
	Req, Data                 any
	// Path is a Fail's waiter's lock path, for its report.
	Path string
}

// Stats counts what the machine did (see engine.CohortStats).
type Stats struct {
	Carriers, Passes, Yielded, Bounded, Renewed uint64
	Waiting                                     int64
}

// Machine is every cohort of one engine.
type Machine struct {
	cfg      Config
	byPath   map[string][]*cohort
	cohorts  map[uint64]*cohort       // by id
	attempts map[uint64]*cohort       // by the attempt pending or carrying its node
	groups   cancelgroup.Set[*waiter] // the waiters queued under each cancel group
	last     uint64                   // the last cohort or attempt id given
	stats    Stats
	effects  []Effect
	// spare is waiter records popped, kept for the next joins (linked by
	// next, at most maxSpare): a hot lock's every turn joins one and pops
	// one, and reuses a record rather than making one.
	spare  *waiter
	spares int
	// found is the cohort the last join found: a hot lock's joins find
	// it without a lookup by path.
	found *cohort
}

// maxSpare bounds the waiter records kept for reuse.
const maxSpare = 64

// cohort is the acquisitions of one engine that pass one lock among them.
// Between two steps it is in one of three states: idle (forgotten), an
// attempt pending with waiters, or a carrier held by holder with waiters
// or none.
type cohort struct {
	id         uint64
	key        Key
	req        any
	head, tail *waiter // FIFO
	waiting    int
	// tries are the waiters queued that joined as tries: most give-backs
	// find none, and so need not walk the queue for them.
	tries int

	pending uint64 // the attempt acquiring the next node
	carrier uint64 // the attempt whose node is held
	holder  uint64 // the waiter holding it now
	passes  int    // local passes under carrier
	// grantedAt is when carrier was granted, on the watchdog's clock.
	grantedAt time.Duration
	// sealed: a node with this node's number is being made (a downgrade),
	// so the node may not pass on: the holder's release gives it back.
	sealed bool
	// watchAsked: the listing with a watch that tells whether another
	// client waits was asked for this grant; watchKnown: it was answered.
	// foreign: another client (or another recipe of this engine) waits on
	// the path, or may.
	watchAsked, watchKnown, foreign bool
	// parked: the holder's turn ended while the listing was in flight;
	// its answer chooses what follows (see watched).
	parked bool
	// renewed: a pass started past MaxHold under this grant, nobody else
	// known to wait (counted once in Stats.Renewed).
	renewed bool
	// lingering: the node is kept with no holder until lingerUntil;
	// armed: a Linger timer is pending; vouching: a Vouch is asked.
	lingering, armed, vouching bool
	lingerUntil                time.Duration
	// marked: a Mark of the node was asked, and no Unmark since.
	marked bool
	// unmarked: a Mark or Unmark of the node failed (MarkFailed): its
	// version's parity says nothing, so it may not linger.
	unmarked bool
}

// waiter is one acquisition queued in a cohort.
type waiter struct {
	try        bool // fails rather than wait for a node (Join's Try)
	id, group  uint64
	data       any // the core's, see Join
	c          *cohort
	prev, next *waiter
	// cancelOn is its place in its cancel group while it is queued
	// (group not 0): in the record, so that a join and a pass cost no
	// allocation and no map operation beyond finding the group.
	cancelOn cancelgroup.Member[*waiter]
}

// New returns a machine with no cohort; cfg has its defaults.
func New(cfg Config) *Machine {
	return &Machine{cfg: cfg, byPath: map[string][]*cohort{}, cohorts: map[uint64]*cohort{},
		attempts: map[uint64]*cohort{}}
}

// Ask is what an acquisition asks that decides whether it may join a
// cohort.
type Ask struct {
	Cohort    bool // its request allows cohorting (an exclusive kind)
	TryOnly   bool // it fails rather than wait
	Borrowed  bool // its node takes a number it was given (a downgrade)
	Revocable bool // its holder is told of revocation requests
}

// Admits reports whether an acquisition may join a cohort: one that asks
// for it, and waits, with a node of its own numbering, whose lease no one
// revokes (a passed lease has no node of its own to watch), unless the
// engine is strictly FIFO. It reads only the machine's configuration, and
// may be called at any time, from any goroutine.
func (m *Machine) Admits(a Ask) bool {
	return a.Cohort && !a.TryOnly && !a.Borrowed && !a.Revocable && !m.cfg.StrictFIFO
}

// Stats returns what the machine did so far.
func (m *Machine) Stats() Stats { return m.stats }

// Known reports, of the cohorts of path that hold a node, whether each
// that asked the listing that tells whether another client waits has had
// its answer (listed), and whether one knows that another does (others):
// for tests and diagnostics.
func (m *Machine) Known(path string) (listed, others bool) {
	listed = true
	for _, c := range m.byPath[path] {
		if c.carrier != 0 {
			listed = listed && (c.watchKnown || !c.watchAsked)
			others = others || c.watchKnown && c.foreign
		}
	}
	return listed, others
}

// Carries reports whether attempt's node is held for a cohort, not given
// back or lost: an effect about it queued before a step that gave it back
// (a Hand refused) is void.
func (m *Machine) Carries(attempt uint64) bool {
	c := m.attempts[attempt]
	return c != nil && c.carrier == attempt
}

// Effects returns the effects of the steps since the last call, in the
// order they are to be carried out. The slice is the machine's: it is
// valid until the next Step.
func (m *Machine) Effects() []Effect {
	e := m.effects
	m.effects = m.effects[:0]
	return e
}

func (m *Machine) emit(e Effect) { m.effects = append(m.effects, e) }

// Step takes one input; it does not keep in.
func (m *Machine) Step(in *Input) {
	switch in.Kind {
	case Join:
		m.join(in)
	case Granted, Failed:
		m.attemptOutcome(in)
	case Release:
		c := m.cohorts[in.CohortID]
		if c == nil || c.holder != in.Waiter || in.Waiter == 0 {
			m.emit(Effect{Kind: NotHolder, Waiter: in.Waiter})
			return
		}
		c.holder = 0
		m.next(c, in, in.Waiter)
	case Watched:
		m.watched(in)
	case Lost:
		c := m.attempts[in.Carrier]
		if c == nil || c.carrier != in.Carrier {
			return // given back already
		}
		m.dropCarrier(c)
		c.parked = false
		if c.holder != 0 {
			m.emit(Effect{Kind: LoseHolder, Waiter: c.holder, Carrier: in.Carrier, Err: in.Err})
			c.holder = 0
		}
		m.afterLoss(c, in)
	case Cancel:
		m.cancel(in)
	case Seal:
		for _, c := range m.byPath[in.Path] {
			if c.carrier != 0 {
				c.sealed = true
			}
		}
	case Wake:
		m.wake(in)
	case Refused:
		m.refused(in)
	case MarkFailed:
		c := m.attempts[in.Carrier]
		if c == nil || c.carrier != in.Carrier {
			return // given back already
		}
		c.unmarked = true
		if c.lingering && c.waiting == 0 {
			m.giveBack(c, 0)
		}
	case Clear:
		// A copy: a cohort given back with nobody waiting is forgotten,
		// and leaves the path's list.
		for _, c := range append([]*cohort(nil), m.byPath[in.Path]...) {
			if c.lingering && c.waiting == 0 {
				c.foreign = true // nothing of this engine goes with the deletion
				m.stats.Yielded++
				m.giveBack(c, 0)
			}
		}
	}
}

// join queues a waiter in its cohort, making the cohort if it may.
func (m *Machine) join(in *Input) {
	c := m.find(in.Key, in.Validated && !in.Try, in.Req)
	if c == nil || in.Try && (!c.lingering || c.waiting > 0) {
		m.emit(Effect{Kind: NotJoined, Waiter: in.Waiter, Group: in.Group})
		return
	}
	w := m.spare
	if w != nil {
		m.spare, m.spares = w.next, m.spares-1
		*w = waiter{}
	} else {
		w = &waiter{}
	}
	w.id, w.group, w.data, w.try = in.Waiter, in.Group, in.Data, in.Try
	m.push(c, w)
	switch {
	case c.carrier == 0 && c.pending == 0:
		m.attempt(c)
	case c.lingering && !c.vouching:
		// A re-acquisition of a lingering node: a pass, if the watchdog
		// still vouches for the node.
		c.vouching = true
		m.emit(Effect{Kind: Vouch, CohortID: c.id, Carrier: c.carrier})
	case c.carrier != 0 && !c.watchAsked:
		// A second acquisition under a held node: a pass is possible, so
		// learn whether another client waits.
		c.watchAsked = true
		m.emit(Effect{Kind: AskWatch, CohortID: c.id, Carrier: c.carrier})
	}
}

// find returns the cohort of k, or, when there is none, a new one if
// create is set and nil if not.
func (m *Machine) find(k Key, create bool, req any) *cohort {
	if c := m.found; c != nil && c.key.Path == k.Path && c.key.same(k) {
		return c
	}
	for _, c := range m.byPath[k.Path] {
		if c.key.same(k) {
			m.found = c
			return c
		}
	}
	if !create {
		return nil
	}
	m.last++
	c := &cohort{id: m.last, key: k, req: req}
	m.byPath[k.Path] = append(m.byPath[k.Path], c)
	m.cohorts[c.id] = c
	m.found = c
	return c
}

// same reports whether o asks what k asks on k's path.
func (k *Key) same(o Key) bool {
	return k.Kind == o.Kind && bytes.Equal(k.Data, o.Data) && k.FailOnExpiry == o.FailOnExpiry
}

// forgetIfIdle drops c once nothing of it is left.
func (m *Machine) forgetIfIdle(c *cohort) {
	if c.waiting > 0 || c.pending != 0 || c.carrier != 0 {
		return
	}
	if m.found == c {
		m.found = nil
	}
	list := m.byPath[c.key.Path]
	for i, o := range list {
		if o == c {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(m.byPath, c.key.Path)
	} else {
		m.byPath[c.key.Path] = list
	}
	delete(m.cohorts, c.id)
}

func (m *Machine) push(c *cohort, w *waiter) {
	w.c = c
	w.prev, w.next = c.tail, nil
	if c.tail != nil {
		c.tail.next = w
	} else {
		c.head = w
	}
	c.tail = w
	c.waiting++
	if w.try {
		c.tries++
	}
	m.stats.Waiting++
	if m.groups.Join(w.group, w.id, w, &w.cancelOn) {
		m.emit(Effect{Kind: Follow, Group: w.group})
	}
}

// remove takes w out of its queue; its context no longer matters.
func (m *Machine) remove(w *waiter) {
	c := w.c
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		c.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		c.tail = w.prev
	}
	w.prev, w.next, w.c = nil, nil, nil
	c.waiting--
	if w.try {
		c.tries--
	}
	m.stats.Waiting--
	if m.groups.Leave(&w.cancelOn) {
		m.emit(Effect{Kind: Unfollow, Group: w.group})
	}
}

// pop takes the first waiter. Its record is kept for reuse by the next
// join: read it before any join in the same step.
func (m *Machine) pop(c *cohort) *waiter {
	w := c.head
	if w != nil {
		m.remove(w)
		if m.spares < maxSpare {
			w.next, m.spare, m.spares = m.spare, w, m.spares+1
		}
	}
	return w
}

// failAll ends every waiter of c with err.
func (m *Machine) failAll(c *cohort, err error) {
	for w := m.pop(c); w != nil; w = m.pop(c) {
		m.emit(Effect{Kind: Fail, Waiter: w.id, Err: err, Data: w.data, Path: c.key.Path})
	}
}

// failTries fails the tries queued in c: the node they joined to be
// passed goes, and a try waits for no node of its own.
func (m *Machine) failTries(c *cohort) {
	for w := c.head; w != nil && c.tries > 0; {
		next := w.next
		if w.try {
			m.remove(w)
			m.emit(Effect{Kind: Fail, Waiter: w.id, Err: m.cfg.WouldBlock, Data: w.data, Path: c.key.Path})
		}
		w = next
	}
}

// attempt starts the acquisition of a node for c.
func (m *Machine) attempt(c *cohort) {
	if m.cfg.NewID != nil {
		c.pending = m.cfg.NewID()
	} else {
		m.last++
		c.pending = m.last
	}
	m.attempts[c.pending] = c
	m.emit(Effect{Kind: Start, CohortID: c.id, Carrier: c.pending, Req: c.req})
}

func (m *Machine) dropCarrier(c *cohort) {
	delete(m.attempts, c.carrier)
	c.carrier = 0
	c.lingering, c.armed, c.vouching, c.marked = false, false, false, false
}

// unmarkIfSeen unmarks c's node once another client is seen while a
// holder of this engine has it again: that client's try, if it found the
// node marked, waits for this write and fails on it, the lock held.
func (m *Machine) unmarkIfSeen(c *cohort) {
	if c.marked && c.foreign && !c.lingering && c.carrier != 0 && !c.unmarked {
		c.marked = false
		m.emit(Effect{Kind: Unmark, CohortID: c.id, Carrier: c.carrier, Req: c.req})
	}
}

// attemptOutcome takes the outcome of an attempt.
func (m *Machine) attemptOutcome(in *Input) {
	a := in.Carrier
	c := m.attempts[a]
	if c == nil || c.pending != a {
		// Given up while in flight (every waiter left), yet granted.
		if in.Kind == Granted && !in.Lost {
			m.emit(Effect{Kind: GiveBack, Carrier: a})
		}
		return
	}
	c.pending = 0
	if in.Kind == Failed {
		delete(m.attempts, a)
		m.failAll(c, in.Err)
		m.forgetIfIdle(c)
		return
	}
	if in.Lost {
		// Lost between the grant and now (the watchdog's timer): as if
		// lost while held, with no holder yet.
		delete(m.attempts, a)
		m.afterLoss(c, in)
		return
	}
	w := m.pop(c)
	if w == nil {
		delete(m.attempts, a)
		m.forgetIfIdle(c)
		m.emit(Effect{Kind: GiveBack, Carrier: a})
		return
	}
	m.stats.Carriers++
	c.carrier, c.holder, c.passes, c.grantedAt, c.sealed = a, w.id, 0, in.Now, false
	c.foreign, c.watchKnown, c.parked, c.unmarked = false, false, false, false
	c.renewed = false
	if in.Seen.Listed && in.Seen.Nodes > 1 {
		// The listing that granted the node shows another client waiting
		// behind this exclusive holder: nothing need be asked (and under
		// YieldToOthers the node goes back after this holder).
		c.foreign, c.watchKnown = true, true
	}
	c.watchAsked = c.watchKnown || c.waiting > 0
	m.emit(Effect{Kind: Hand, Waiter: w.id, Group: w.group, CohortID: c.id, Carrier: a, Data: w.data})
	if c.watchAsked && !c.watchKnown {
		m.emit(Effect{Kind: AskWatch, CohortID: c.id, Carrier: a})
	}
}

// next chooses what follows a holder's turn on c's node (c.holder is 0):
// a pass to the next waiter, or the node given back, with the next
// node's acquisition if waiters remain; or nothing yet (parked). holder
// is whose turn ended (0 when the choice waited for the listing), whose
// release ends with the deletion if the node goes back. Another client
// waiting ends the passing only under YieldToOthers; else the bounds do,
// which keep its wait within MaxHold and one hold of the grant, or of
// the notification that tells of it if later: past MaxHold, a pass waits
// for the listing with a watch, and starts only if nobody else is known
// to wait.
func (m *Machine) next(c *cohort, in *Input, holder uint64) {
	if in.Fired {
		c.foreign = true
	}
	m.unmarkIfSeen(c)
	bounded := !in.Trusted || in.CarrierLost || c.sealed || c.passes >= m.cfg.MaxPasses
	pastHold := in.Now-c.grantedAt >= m.cfg.MaxHold
	switch {
	case c.waiting == 0 && m.cfg.Linger > 0 && !bounded && !pastHold && !c.foreign && !c.unmarked:
		m.linger(c, in, holder)
		return
	case c.waiting == 0:
	case bounded, pastHold && (c.foreign || !c.watchAsked):
		m.stats.Bounded++
	case (pastHold || m.cfg.YieldToOthers) && !c.watchKnown && !c.foreign:
		// Passing now could overtake a client queued before the waiter
		// (one already seen is yielded to below, whatever the listing);
		// the listing's reply decides (see watched).
		c.parked = true
		if holder != 0 {
			m.emit(Effect{Kind: Ended, Waiter: holder})
		}
		return
	case m.cfg.YieldToOthers && c.foreign:
		m.stats.Yielded++
	default:
		if pastHold && !c.renewed {
			c.renewed = true
			m.stats.Renewed++
		}
		c.passes++
		w := m.pop(c)
		c.holder = w.id
		m.stats.Passes++
		if holder != 0 {
			m.emit(Effect{Kind: Ended, Waiter: holder})
		}
		m.emit(Effect{Kind: Hand, Waiter: w.id, Group: w.group, CohortID: c.id, Carrier: c.carrier, Pass: c.passes, Data: w.data})
		return
	}
	m.giveBack(c, holder)
}

// refused takes back a Hand the watchdog refused: the waiter, no holder
// after all, queues again first, and the node goes back (a pass undone
// is not counted).
func (m *Machine) refused(in *Input) {
	c := m.attempts[in.Carrier]
	if c == nil || c.carrier != in.Carrier || c.holder != in.Waiter || in.Waiter == 0 {
		return
	}
	c.holder = 0
	if c.passes > 0 {
		c.passes--
		m.stats.Passes--
	}
	w := &waiter{id: in.Waiter, group: in.Group, data: in.Data, try: in.Try}
	m.push(c, w)
	// To the head: it was first in line.
	if c.head != w {
		w.prev.next, c.tail = nil, w.prev
		w.prev, w.next, c.head.prev, c.head = nil, c.head, w, w
	}
	m.giveBack(c, 0)
}

// giveBack gives c's node back, holder's release ending with its deletion
// (0: none). The next waiter's node is asked for before the deletion:
// both reach the loop in that order and, taken in one turn, leave in one
// multi request, create first; then whoever the deletion wakes (another
// client) finds the next node already queued, behind its own, and gives
// the lock back after one holder.
func (m *Machine) giveBack(c *cohort, holder uint64) {
	carrier, yield := c.carrier, c.foreign && holder == 0
	m.dropCarrier(c)
	m.failTries(c)
	if c.waiting > 0 {
		yield = false
		m.attempt(c)
	} else {
		m.forgetIfIdle(c)
	}
	m.emit(Effect{Kind: GiveBack, Carrier: carrier, Waiter: holder, Yield: yield})
}

// watched takes the listing AskWatch asked for: any lock node but the
// carrier's is another client's (or another recipe's of this engine)
// waiting, and so is any change the watch reports later. A failed read
// tells nothing, so it counts as one. A turn that waited for it goes on.
func (m *Machine) watched(in *Input) {
	c := m.attempts[in.Carrier]
	if c == nil || c.carrier != in.Carrier {
		return
	}
	c.watchKnown = true
	c.foreign = c.foreign || in.Failed || in.Fired
	for _, name := range in.Children {
		if _, ok := queue.Parse(name); ok && name != in.Self {
			c.foreign = true
		}
	}
	if c.lingering && c.foreign {
		m.stats.Yielded++
		m.giveBack(c, 0) // another client waits: it gets the node at once
	}
	m.unmarkIfSeen(c)
	if !c.parked {
		return
	}
	c.parked = false
	m.next(c, in, 0)
}

// linger keeps c's node, no longer held (holder's turn ended, 0: none),
// until min(now + Linger, grant + MaxHold): past the latter no pass could
// start anyway. The watch is asked if it was not, so that another client
// is seen; a timer is armed unless one is pending (lingerUntil never
// moves earlier under one grant, so a pending timer fires in time).
func (m *Machine) linger(c *cohort, in *Input, holder uint64) {
	c.lingering, c.vouching = true, false
	c.lingerUntil = min(in.Now+m.cfg.Linger, c.grantedAt+m.cfg.MaxHold)
	if holder != 0 {
		m.emit(Effect{Kind: Ended, Waiter: holder})
	}
	if !c.watchAsked {
		c.watchAsked = true
		m.emit(Effect{Kind: AskWatch, CohortID: c.id, Carrier: c.carrier})
	}
	if !c.armed {
		c.armed = true
		m.emit(Effect{Kind: Linger, CohortID: c.id, Carrier: c.carrier, After: c.lingerUntil - in.Now})
	}
	if !c.marked {
		c.marked = true
		m.emit(Effect{Kind: Mark, CohortID: c.id, Carrier: c.carrier, Req: c.req})
	}
}

// wake decides on a lingering node: waiters joined, it passes (next
// decides as at a release); another client seen, trust gone, the carrier
// lost, sealed or the time up, it goes back; else it lingers on, with the
// timer armed again if that is what fired.
func (m *Machine) wake(in *Input) {
	c := m.attempts[in.Carrier]
	if c == nil || c.carrier != in.Carrier {
		return // given back already
	}
	if in.Timer {
		c.armed = false
	}
	// Every wake carries a verdict read just before it, so it answers a
	// Vouch asked: one whose waiter left meanwhile (its context ended)
	// finds nobody here, and the next join must ask again, or it would
	// wait for the linger's end.
	c.vouching = false
	c.foreign = c.foreign || in.Fired
	switch {
	case !c.lingering && c.parked && c.foreign:
		// A turn waited for the listing to tell whether another client
		// waits; the watch says one may, which is all the listing could
		// add: the turn goes on now (and yields), not one reply later.
		c.parked = false
		m.next(c, in, 0)
	case !c.lingering:
		m.unmarkIfSeen(c)
	case c.waiting > 0:
		c.lingering, c.vouching = false, false
		m.next(c, in, 0)
	case c.foreign || !in.Trusted || in.CarrierLost || c.sealed || in.Now >= c.lingerUntil:
		if c.foreign {
			m.stats.Yielded++
		}
		m.giveBack(c, 0)
	case !c.armed:
		c.armed = true
		m.emit(Effect{Kind: Linger, CohortID: c.id, Carrier: c.carrier, After: c.lingerUntil - in.Now})
	}
}

// afterLoss decides what becomes of the waiters once the node is lost:
// they fail with the loss when the engine closes (a try too: it would not
// block, the engine is gone), or when the session expired and expiries
// fail waiters; else a try fails (it waits for no node) and the next
// waiter queues a node.
func (m *Machine) afterLoss(c *cohort, in *Input) {
	closed := m.cfg.Closed != nil && errors.Is(in.Err, m.cfg.Closed)
	if !closed {
		m.failTries(c)
	}
	switch {
	case c.waiting == 0:
	case closed, m.cfg.Expired != nil && errors.Is(in.Err, m.cfg.Expired) && (c.key.FailOnExpiry || m.cfg.FailOnExpiry):
		m.failAll(c, in.Err)
	default:
		m.attempt(c)
	}
	m.forgetIfIdle(c)
}

// cancel: the contexts of a group ended. Its waiters leave their queues,
// in the order they came, and fail with the cause; a waiter granted
// meanwhile left the group and keeps its lease. A node pending for a
// cohort nobody waits in any more is given up.
func (m *Machine) cancel(in *Input) {
	// In the order they came: the order of their ids, where the core
	// counts them up.
	ws, ok := m.groups.End(in.Group)
	if !ok {
		return
	}
	m.emit(Effect{Kind: Unfollow, Group: in.Group})
	paths := make([]string, len(ws))
	for i, w := range ws {
		w.group = 0 // the group is gone already
		c := w.c
		paths[i] = c.key.Path
		m.remove(w)
		if c.waiting == 0 && c.pending != 0 {
			m.emit(Effect{Kind: Abandon, CohortID: c.id, Carrier: c.pending})
			delete(m.attempts, c.pending)
			c.pending = 0
			m.forgetIfIdle(c)
		}
	}
	for i, w := range ws {
		m.emit(Effect{Kind: Fail, Waiter: w.id, Err: in.Err, Data: w.data, Path: paths[i]})
	}
}
