package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/internal/seam"
	"github.com/turnstile-go/turnstile/queue"
)

// The election's observers in the workload, and what the checker holds
// them to. Each engine's Election runs its observers' reads and Leader's on
// the world's seams (internal/seam): a read is a coroutine of the
// engine's client, as the engine's own requests are, so observers add no
// goroutine the simulator does not step; after its reply, a read waits to
// be scheduled (park), as a goroutine given its reply would, while the
// engine's loop may list newer leaders.
//
// The checker keeps the history of the election's terms as the model shows
// it after every step: the lowest latch node under simElectionPath, its
// value, the step it was first seen leading and the step it was first seen
// gone. Every read of the election is served by the model at some step,
// so every leader a correct client can see is in that history. The rules:
//
//   - truth: a leader reported (by an observer or by Leader) is a term of
//     the history, with the value its candidate campaigned with;
//   - order: an observer reports each term once, each newer than the last
//     it reported (it may skip terms; it never goes back);
//   - freshness: no report names a leader whose term had ended before the
//     read of its value began, and Leader never answers a term that had
//     ended before the call began, nor "no leader" when the election had a
//     leader from the call's beginning to its end;
//   - an observer's channel closes only when its context ends or its
//     engine closes;
//   - convergence: once faults stop and the workload has settled, a few
//     last candidates lead one after another, and every live observer
//     then reports the last within simQuiet. Observers lag; they are not
//     asked to agree sooner.

// observer is one Observe of the workload.
type observer struct {
	id      int
	c       *client
	ch      <-chan election.Leader
	cancel  context.CancelFunc
	ended   bool  // the workload cancelled its context
	closed  bool  // its channel was seen closed
	last    *term // the latest leader it reported; nil before the first
	reports int
}

func (o *observer) live() bool { return !o.ended && !o.closed && !o.c.closing && !o.c.exited }

// term is one leader of the election, as the model showed it.
type term struct {
	index int    // its place in the history
	node  string // the full path of the leader's node
	value string
	start int // the step it was first seen leading
	end   int // the step it was first seen not leading; 0 while it leads
}

// electionCheck is the checker's state about the election.
type electionCheck struct {
	terms   []*term
	byNode  map[string]*term
	current *term
	// leaderless is the latest step at which the election was seen
	// without a leader.
	leaderless int
	// readBegan is, per engine and node, the step at which the latest
	// successful read of the node's value by the engine's Election began.
	readBegan map[*client]map[string]int
	// readStale is, likewise, whether that read reached a follower cut
	// from its leader, which answers from its older tree: freshness is
	// not asked of it (ZooKeeper promises none of a follower's reads).
	readStale map[*client]map[string]bool

	observers   []*observer
	reports     int // observers' reports checked
	leaderReads int // answers of Leader checked
	converged   int // observers seen converge on the last leader
}

func newElectionCheck() electionCheck {
	return electionCheck{byNode: make(map[string]*term), readBegan: make(map[*client]map[string]int), readStale: make(map[*client]map[string]bool)}
}

// election is c's one Election, on the world's seams.
func (w *world) election(c *client) *election.Election {
	if w.load.elections[c] == nil {
		rt := seam.ElectionRuntime{
			Go:        c.goroutine,
			AfterFunc: c.afterDone,
			Children: func(ctx context.Context, p string) ([]string, error) {
				children, err := c.eng.ChildrenInPlace(ctx, p)
				c.park()
				return children, err
			},
			Data: func(ctx context.Context, p string) ([]byte, error) {
				began, stale := w.steps, c.stale
				data, err := c.eng.DataInPlace(ctx, p)
				c.park()
				if err == nil {
					ec := &w.check.election
					if ec.readBegan[c] == nil {
						ec.readBegan[c] = make(map[string]int)
						ec.readStale[c] = make(map[string]bool)
					}
					ec.readBegan[c][p] = began
					ec.readStale[c][p] = c.stale != stale
				}
				return data, err
			},
		}
		// An election reads its seam once, when made.
		seam.SetElectionRuntime(c.eng, rt)
		w.load.elections[c] = election.New(c.eng, simElectionPath)
		seam.ForgetElectionRuntime(c.eng)
	}
	return w.load.elections[c]
}

// park suspends the running coroutine, a reader of c's Election, until
// the world wakes it: the reader's goroutine, given its reply, waits to be
// scheduled, while the engine's loop may go on to newer listings.
func (c *client) park() {
	co := c.w.running
	c.parked = append(c.parked, co)
	co.yield(nil)
}

// wake resumes one parked reader of c's Election.
func (w *world) wake(c *client) {
	i := w.rng.IntN(len(c.parked))
	co := c.parked[i]
	c.parked = append(c.parked[:i], c.parked[i+1:]...)
	w.tracef("%s: a reader runs", c.name)
	w.resume(co, c)
}

// observeMoves are the workload's moves on observers: start one on c,
// read one's channel, end one, ask c's Election who leads.
func (w *world) observeMoves(add func(int, string, func())) {
	ec := &w.check.election
	if w.faults {
		if live := w.liveClients(); len(live) > 0 {
			add(1, "observe", func() { w.observe(live[w.rng.IntN(len(live))]) })
			add(1, "leader", func() { w.readLeader(live[w.rng.IntN(len(live))]) })
		}
	}
	for _, c := range w.clients {
		if len(c.parked) > 0 && !c.exited {
			add(10, "wake", func() { w.wake(c) })
		}
	}
	var open []*observer
	for _, o := range ec.observers {
		if !o.ended && !o.closed {
			open = append(open, o)
		}
	}
	if len(open) == 0 {
		return
	}
	add(2, "look", func() { w.look(open[w.rng.IntN(len(open))]) })
	ends := open
	if w.ens != nil {
		ends = slices.DeleteFunc(slices.Clone(open), func(o *observer) bool { return w.ens.quietFor(o.c) })
	}
	if w.faults && len(ends) > 0 {
		add(1, "unobserve", func() { w.unobserve(ends[w.rng.IntN(len(ends))]) })
	}
}

// liveClients are the clients whose engines are not closing.
func (w *world) liveClients() []*client {
	var live []*client
	for _, c := range w.clients {
		if !c.closing && !c.exited && !w.ens.quietFor(c) {
			live = append(live, c)
		}
	}
	return live
}

// simObservers bounds the observers open at once on one engine.
const simObservers = 3

func (w *world) observe(c *client) {
	ec := &w.check.election
	n := 0
	for _, o := range ec.observers {
		if o.c == c && !o.ended && !o.closed {
			n++
		}
	}
	if n >= simObservers {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{id: len(ec.observers) + 1, c: c, cancel: cancel}
	ec.observers = append(ec.observers, o)
	w.tracef("%s: observe #%d", c.name, o.id)
	o.ch = w.election(c).Observe(ctx)
}

func (w *world) unobserve(o *observer) {
	w.tracef("%s: stop observer #%d", o.c.name, o.id)
	o.ended = true
	o.cancel()
	w.contextsDone()
	// The channel closes as the observer is removed, at once: drain it.
	for {
		select {
		case l, ok := <-o.ch:
			if !ok {
				o.closed = true
				return
			}
			w.check.observed(o, l)
			continue
		default:
		}
		w.fail("observe: %s's observer #%d was cancelled and its channel is still open", o.c.name, o.id)
		return
	}
}

// look takes what o's channel holds, as its reader would: at most one
// leader, the latest, or that it closed.
func (w *world) look(o *observer) {
	select {
	case l, ok := <-o.ch:
		if ok {
			w.check.observed(o, l)
			return
		}
		o.closed = true
		w.tracef("%s: observer #%d closed", o.c.name, o.id)
		if !o.ended && !o.c.closing && !o.c.exited {
			w.fail("observe: %s's observer #%d closed with neither its context ended nor its engine closed", o.c.name, o.id)
		}
	default:
	}
}

// readLeader asks c's Election who leads, on a coroutine of c's client.
func (w *world) readLeader(c *client) {
	began, stale := w.steps, c.stale
	el := w.election(c)
	w.tracef("%s: Leader", c.name)
	c.goroutine(func() {
		l, err := el.Leader(context.Background())
		w.check.leaderRead(c, began, l, err, c.stale != stale)
	})
}

// observed checks one leader o reported.
func (k *checker) observed(o *observer, l election.Leader) {
	w, ec := k.w, &k.election
	w.tracef("%s: observer #%d reports %s %q", o.c.name, o.id, l.Node, l.Value)
	ec.reports++
	o.reports++
	t := k.judgeLeader("observer", o.c, l)
	if t == nil {
		return
	}
	if o.last != nil && t.index <= o.last.index {
		w.fail("observe: %s's observer #%d reported %s (term %d) after %s (term %d): not newer",
			o.c.name, o.id, t.node, t.index, o.last.node, o.last.index)
		return
	}
	o.last = t
	began, ok := ec.readBegan[o.c][l.Node]
	switch {
	case !ok:
		w.fail("observe: %s's observer #%d reported %s, which its engine never read", o.c.name, o.id, l.Node)
	case t.end != 0 && t.end <= began && !ec.readStale[o.c][l.Node]:
		w.fail("observe: %s's observer #%d reported %s, whose term ended at step %d, before the read of it began at step %d",
			o.c.name, o.id, l.Node, t.end, began)
	}
}

// leaderRead checks an answer of Leader to a call made at step began.
// stale: a read of the call reached a follower cut from its leader, whose
// answers may lag: only truth is asked of it.
func (k *checker) leaderRead(c *client, began int, l election.Leader, err error, stale bool) {
	w, ec := k.w, &k.election
	w.tracef("%s: Leader answers %s %q %v", c.name, l.Node, l.Value, err)
	switch {
	case errors.Is(err, election.ErrNoLeader):
		ec.leaderReads++
		if ec.leaderless < began && ec.current != nil && !stale {
			w.fail("observe: %s's Leader (step %d) answered no leader, and %s led throughout the call",
				c.name, began, ec.current.node)
		}
	case err == nil:
		ec.leaderReads++
		if t := k.judgeLeader("Leader", c, l); t != nil && t.end != 0 && t.end <= began && !stale {
			w.fail("observe: %s's Leader (step %d) answered %s, whose term ended at step %d",
				c.name, began, l.Node, t.end)
		}
	}
}

// judgeLeader finds l's term in the history: nil, failing the run, when it
// never led or led with another value.
func (k *checker) judgeLeader(who string, c *client, l election.Leader) *term {
	w, ec := k.w, &k.election
	t := ec.byNode[l.Node]
	switch {
	case t == nil:
		w.fail("observe: %s's %s reported %s %q, which never led", c.name, who, l.Node, l.Value)
	case t.value != string(l.Value):
		w.fail("observe: %s's %s reported %s with value %q; it led with %q", c.name, who, l.Node, l.Value, t.value)
	default:
		return t
	}
	return nil
}

// trackLeader brings the history of terms up to the model's state.
func (k *checker) trackLeader() {
	w, ec := k.w, &k.election
	var leader string
	if children, ok := w.model.Children(simElectionPath); ok {
		nodes := queue.NewListing(children).Nodes()
		for _, n := range nodes {
			if n.Kind == queue.KindLatch {
				leader = path.Join(simElectionPath, n.Name)
				break
			}
		}
	}
	if ec.current != nil && ec.current.node == leader {
		return
	}
	if ec.current != nil {
		ec.current.end = w.steps
		ec.current = nil
	}
	if leader == "" {
		ec.leaderless = w.steps
		return
	}
	_, value, _ := w.model.Node(leader)
	t := &term{index: len(ec.terms), node: leader, value: string(value), start: w.steps}
	ec.terms = append(ec.terms, t)
	ec.byNode[leader] = t
	ec.current = t
	w.tracef("term %d: %s %q leads", t.index, leader, value)
}

// converge runs, once faults have stopped and the workload settled, a last
// few terms: three to eight candidates campaign at once, and each but the
// last resigns a few steps after it is elected, so that leaders change
// while observers are still reading the ones before. Then every live
// observer must report the last leader, within simQuiet of simulated time,
// as long as it leads.
func (w *world) converge() {
	live := w.liveClients()
	if len(live) == 0 {
		return
	}
	deadline := w.clock.now + simQuiet
	for w.failure == "" {
		last := w.lastTerms(live, deadline)
		if last == nil {
			return
		}
		lost := w.catchUp(last.grant.(leaderGrant).ld, deadline)
		w.releaseLast(last)
		if !lost {
			return
		}
		// Lost before every observer caught up (an expiry the faults left
		// behind): elect others.
		w.tracef("the last leader lost its term; again")
	}
}

// catchUp steps the world, taking what every live observer reports, until
// each reports ld's node, failing the run if one has not by deadline;
// lost when ld's term ended first.
func (w *world) catchUp(ld *election.Leadership, deadline time.Duration) (lost bool) {
	for w.failure == "" && ld.Err() == nil && w.laggard(ld.Node()) != nil && w.clock.now <= deadline {
		w.step()
		for _, o := range w.check.election.observers {
			if o.live() {
				w.look(o)
			}
		}
	}
	switch o := w.laggard(ld.Node()); {
	case w.failure != "":
	case ld.Err() != nil:
		return true
	case o != nil:
		latest := "nothing"
		if o.last != nil {
			latest = o.last.node
		}
		w.fail("observe: %s's observer #%d reports %s, not the leader %s, %v after the faults stopped",
			o.c.name, o.id, latest, ld.Node(), simQuiet)
	default:
		w.check.election.converged += w.liveObservers()
	}
	return false
}

// lastTerms campaigns three to eight candidates on live clients and steps
// the world until one is left leading, each other having led a few steps
// and resigned: the last leader's acquisition, or nil when the run failed.
func (w *world) lastTerms(live []*client, deadline time.Duration) *acq {
	type term struct {
		a     *acq
		hold  int // steps it leads before it resigns, unless it is the last
		since int // the step it was seen elected
	}
	var terms []*term
	for range 3 + w.rng.IntN(6) {
		c := live[w.rng.IntN(len(live))]
		a := &acq{id: len(w.acqs) + 1, c: c, kind: kindLeader, paths: []string{simElectionPath}, cancel: func() {}}
		await(w, a, w.election(c).Campaign(context.Background(), []byte(c.name)),
			func(ld *election.Leadership) grant { return leaderGrant{ld} })
		w.acqs = append(w.acqs, a)
		w.tracef("%s: a last candidate %v", c.name, a)
		terms = append(terms, &term{a: a, hold: w.rng.IntN(8), since: -1})
	}
	for w.failure == "" {
		var left []*term
		for _, t := range terms {
			if !t.a.released {
				left = append(left, t)
			}
		}
		for _, t := range left {
			a := t.a
			switch {
			case a.callbacks > 0 && a.err != nil:
				w.fail("liveness: the last candidate %v failed: %v", a, a.err)
				return nil
			case a.grant == nil:
				continue
			case len(left) == 1:
				return a
			case t.since < 0:
				t.since = w.steps
			}
			if w.steps-t.since >= t.hold {
				w.releaseLast(a)
			}
		}
		if w.clock.now > deadline {
			w.fail("liveness: the last candidates not elected %v after the faults stopped", simQuiet)
			return nil
		}
		w.step()
	}
	return nil
}

// releaseLast resigns one of the last terms; the world then waits for it
// as for any release.
func (w *world) releaseLast(a *acq) {
	a.released = true
	w.tracef("%s: resign %v", a.c.name, a)
	a.releaseDone = a.grant.release()
	w.open = append(w.open, a)
}

// laggard is a live observer whose latest report is not leader, or nil.
func (w *world) laggard(leader string) *observer {
	for _, o := range w.check.election.observers {
		if o.live() && (o.last == nil || o.last.node != leader) {
			return o
		}
	}
	return nil
}

func (w *world) liveObservers() int {
	n := 0
	for _, o := range w.check.election.observers {
		if o.live() {
			n++
		}
	}
	return n
}

// endObservers cancels every observer still open: their channels close,
// and their engines' watches end (noNodesLeft finds any node left).
func (w *world) endObservers() {
	for _, o := range w.check.election.observers {
		if !o.ended && !o.closed && w.failure == "" {
			w.unobserve(o)
		}
	}
}

// observerStats is what the election's observers and Leader were checked
// on, over one seed or many.
type observerStats struct {
	observers   int // Observe calls
	terms       int // terms of the election's history
	reports     int // observers' reports checked
	leaderReads int // answers of Leader checked
	converged   int // observers seen reporting the last leader
}

func (s *observerStats) add(o observerStats) {
	s.observers += o.observers
	s.terms += o.terms
	s.reports += o.reports
	s.leaderReads += o.leaderReads
	s.converged += o.converged
}

func (s observerStats) String() string {
	return fmt.Sprintf("election: %d terms, %d observers, %d of their reports checked, %d converged on the last leader, %d answers of Leader checked",
		s.terms, s.observers, s.reports, s.converged, s.leaderReads)
}
