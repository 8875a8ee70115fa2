package engine_test

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/zkmodel"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
)

// checker holds the world to what the locks promise, after every step and
// at every grant (as the engine reports it, before anything else runs).
//
// It judges the leases the engines hold, not what the workload was handed:
// every lease of every recipe, and of every part of one (a semaphore's
// guard, a multi-lock's parts, taken one after another before the
// MultiLease exists), is a lease of some engine's contender from its grant
// on. A lease counts as held from its grant until its Lost closes or its
// release begins (Lease.Held).
type checker struct {
	w      *world
	grants int // simulated acquisitions granted
	// faultGrants are the grants made before the faults stopped.
	faultGrants int
	lastToken   map[string]int64 // path → token of its latest exclusive grant
	onLine      func(string)     // sees every trace line (the determinism test)

	// leases are every lease seen held, in the order first seen, until
	// seen not held: a lease an engine dropped while still held counts.
	leases []*lock.Lease
	seen   map[*lock.Lease]bool
	// outcomes counts, for each acquisition an engine reported taking in,
	// the outcomes it reported for it: exactly one is promised.
	outcomes map[acquisition]int
	// election is what the checker knows of the election and holds its
	// observers to (simobserve_test.go).
	election electionCheck
	// acqs holds what the checker needs to judge the outcomes of each
	// acquisition taken in, until its outcome (or its lease's end).
	acqs map[acquisition]*acqRecord
	// lapses counts, per client, the steps after which its watchdog did
	// not trust its session.
	lapses map[*client]int
	// refusals counts the tries' ErrWouldBlock judged, losses the leases'
	// Lost judged.
	refusals, losses int
	// participantReads counts the Participants answers judged.
	participantReads int
	// owners are the sessions that own the held leases' nodes.
	owners map[*lock.Lease]zkmodel.SessionID
	// cohort holds the cohorts' passes to their bound (simcohort_test.go).
	cohort cohortCheck
	// granted: a cohort member's acquisition taken in (false) or granted
	// (true) and its turn not yet reported ended.
	granted map[acquisition]bool
	members []acquisition // every member acquisition taken in
}

// acqRecord is what the checker keeps of one acquisition to judge its
// outcomes against the model's history.
type acqRecord struct {
	from    int64    // the model's last zxid when the loop took the acquisition in
	lapses  int      // its client's lapses then
	creates []string // a try's create paths (lock path and protected id) of its nodes
	node    string   // the node granted
}

func newChecker(w *world) checker {
	return checker{w: w, lastToken: make(map[string]int64), seen: make(map[*lock.Lease]bool),
		outcomes: make(map[acquisition]int), election: newElectionCheck(), acqs: make(map[acquisition]*acqRecord),
		lapses: make(map[*client]int), owners: make(map[*lock.Lease]zkmodel.SessionID), cohort: newCohortCheck(),
		granted: make(map[acquisition]bool)}
}

// acquisition names one acquisition of one engine, as its reports do.
type acquisition struct {
	c  *client
	id uint64
}

func (k *checker) report(c *client, r events.Report) {
	w := k.w
	w.tracef("%s: %v #%d %s %s token %d %v", c.name, r.Kind, r.ID, r.Path, r.Node, r.Token, r.Err)
	key := acquisition{c, r.ID}
	if r.Member {
		k.member(c, r, key)
		return
	}
	switch r.Kind {
	case events.Acquiring:
		if _, ok := k.outcomes[key]; ok {
			w.fail("reports: %s reported acquisition %d on %s twice", c.name, r.ID, r.Path)
		}
		k.outcomes[key] = 0
		k.acqs[key] = &acqRecord{from: w.model.Zxid(), lapses: k.lapses[c]}
	case events.Lost:
		k.loss(c, r, k.acqs[key])
		delete(k.acqs, key)
	case events.Released:
		delete(k.acqs, key)
	case events.Granted, events.Failed, events.Cancelled:
		switch a := k.acqs[key]; {
		case r.Kind == events.Failed && errors.Is(r.Err, engine.ErrWouldBlock):
			k.refusal(c, r, a)
		case r.Kind == events.Granted && a != nil:
			a.node = r.Node
		}
		if r.Kind != events.Granted {
			delete(k.acqs, key)
		}
		k.outcome(c, r, key, "acquisition")
	}
	if r.Kind != events.Granted {
		return
	}
	k.grants++
	if w.faults {
		k.faultGrants++
	}
	if kind := kindOf(r.Node); kind != queue.KindRead {
		if last, ok := k.lastToken[r.Path]; ok && r.Token <= last {
			w.fail("fencing: %s granted %s on %s with token %d, not above the previous %v grant's %d",
				c.name, r.Node, r.Path, r.Token, kind, last)
		}
		k.lastToken[r.Path] = r.Token
	}
	k.all()
}

// member judges a cohort member's report: one Acquiring, then exactly one
// of Granted, Failed and Cancelled, and a Released or Lost only after a
// Granted. What its leases hold the checker judges from the engines'
// leases, and its node's grant from its carrier's reports.
func (k *checker) member(c *client, r events.Report, key acquisition) {
	w := k.w
	switch r.Kind {
	case events.Acquiring:
		if _, taken := k.outcomes[key]; taken {
			w.fail("reports: %s reported member acquisition %d on %s twice", c.name, r.ID, r.Path)
		}
		k.outcomes[key] = 0
		k.granted[key] = false
		k.members = append(k.members, key)
	case events.Granted, events.Failed, events.Cancelled:
		k.outcome(c, r, key, "member acquisition")
		k.granted[key] = r.Kind == events.Granted
	case events.Released, events.Lost:
		if !k.granted[key] {
			w.fail("reports: %s reported %v of member acquisition %d on %s, never granted", c.name, r.Kind, r.ID, r.Path)
		}
		delete(k.granted, key)
	}
}

// outcome counts r, an outcome of the acquisition key (what names its
// sort in a failure): exactly one is promised, after it was taken in.
func (k *checker) outcome(c *client, r events.Report, key acquisition, what string) {
	n, ok := k.outcomes[key]
	switch {
	case !ok:
		k.w.fail("reports: %s reported %v of %s %d on %s, never taken in", c.name, r.Kind, what, r.ID, r.Path)
	case n > 0:
		k.w.fail("reports: %s reported a second outcome, %v, of %s %d on %s", c.name, r.Kind, what, r.ID, r.Path)
	}
	k.outcomes[key] = n + 1
}

// kindOf is the kind of the lock node named (or at) node.
func kindOf(node string) queue.Kind {
	n, _ := queue.Parse(path.Base(node))
	return n.Kind
}

// all checks every path's holders: at most one exclusive holder (a mutex,
// a writer, a semaphore's guard, a leader) and no reader beside it but the
// read lease its own holder took by downgrading; at most N holders of a
// semaphore of N leases.
func (k *checker) all() {
	w := k.w
	k.trackLeader()
	for _, c := range w.clients {
		// The loop's leases, those its cohorts passed to their holders
		// among them: each is judged from the moment it is seen until it
		// is seen not held, so a holder left holding when the next was
		// passed the node counts twice.
		for _, l := range c.eng.Leases() {
			if !k.seen[l] {
				k.seen[l] = true
				k.leases = append(k.leases, l)
			}
		}
	}
	k.leases = slices.DeleteFunc(k.leases, func(l *lock.Lease) bool {
		if !l.Held() {
			delete(k.owners, l)
			return true
		}
		return false
	})
	if !k.inTime() {
		return
	}
	k.cohorts()
	// A carrier holds the node its held passed leases hold: it is one
	// holder with them, not another.
	carriers := make(map[*lock.Lease]bool)
	for _, l := range k.leases {
		if c := l.Carrier(); c != nil {
			carriers[c] = true
		}
	}
	byPath := make(map[string][]*lock.Lease)
	var paths []string
	for _, l := range k.leases {
		if carriers[l] {
			continue
		}
		if byPath[l.Path()] == nil {
			paths = append(paths, l.Path())
		}
		byPath[l.Path()] = append(byPath[l.Path()], l)
	}
	for _, p := range paths {
		if !k.path(p, byPath[p]) {
			return
		}
	}
}

// inTime holds the watchdog to its promise: a lease's Lost closes
// before the server can expire the session that owns its node, and so
// before the server could grant the lock to anyone else. The leader is
// the one that expires sessions; a lease still held once it did is a
// violation even if no one else was granted yet (behind a cut follower,
// the session's client may not hear of the expiry for seconds). False
// when it failed the run.
func (k *checker) inTime() bool {
	w := k.w
	for _, l := range k.leases {
		owner, ok := k.owners[l]
		if !ok {
			owner = ownerOf(w.model, l.Node())
			if owner == 0 {
				w.fail("checker: %s held, but no session's node of that name was ever on the server", k.name(l))
				return false
			}
			k.owners[l] = owner
		}
		if info, ok := w.model.Session(owner); ok && info.State == zkmodel.Expired {
			w.fail("promise: %s still held after the server expired its session %d at %.3fs",
				k.name(l), owner, info.Deadline.Sub(w.epoch).Seconds())
			return false
		}
	}
	return true
}

// ownerOf is the session that owns, or owned, the node at p.
func ownerOf(m *zkmodel.Model, p string) zkmodel.SessionID {
	lives := m.Lives(path.Dir(p))
	for i := len(lives) - 1; i >= 0; i-- {
		if lives[i].Path == p {
			return lives[i].Owner
		}
	}
	return 0
}

// path checks the holders of one path; false when it failed the run.
func (k *checker) path(p string, holders []*lock.Lease) bool {
	w := k.w
	var excl, shared, leases []*lock.Lease
	for _, l := range holders {
		switch kindOf(l.Node()) {
		case queue.KindRead:
			shared = append(shared, l)
		case queue.KindLease:
			leases = append(leases, l)
		default:
			excl = append(excl, l)
		}
	}
	if len(leases) > 0 {
		sem := strings.TrimSuffix(p, "/leases")
		n := w.load.semLeases[sem]
		// The Curator peer's lease, if it holds one, counts against n too.
		held, names := len(leases), k.names(leases)
		if node := w.peer.holding(sem); node != "" {
			held++
			names += ", curator peer " + node
		}
		switch {
		case n == 0:
			w.fail("semaphore: lease holders of %s, which no semaphore uses: %s", p, k.names(leases))
			return false
		case held > n:
			w.fail("semaphore: %d holders of %s, of %d leases: %s", held, sem, n, names)
			return false
		case len(excl)+len(shared) > 0:
			w.fail("exclusion: semaphore leases beside other locks on %s: %s", p, k.names(holders))
			return false
		}
	}
	if len(excl) > 1 {
		w.fail("exclusion: %d exclusive holders of %s: %s", len(excl), p, k.names(excl))
		return false
	}
	if len(excl) == 1 {
		for _, r := range shared {
			if !downgradeOf(r, excl[0]) {
				w.fail("exclusion: reader %s beside %v %s on %s", k.name(r), kindOf(excl[0].Node()), k.name(excl[0]), p)
				return false
			}
		}
	}
	return true
}

// downgradeOf: r is the read lease that w's holder took in w's place
// (same engine, same sequence number).
func downgradeOf(r, w *lock.Lease) bool {
	rn, ok1 := queue.Parse(path.Base(r.Node()))
	wn, ok2 := queue.Parse(path.Base(w.Node()))
	return ok1 && ok2 && r.Engine() == w.Engine() && rn.Seq == wn.Seq
}

// name names a lease: its engine, node and token.
func (k *checker) name(l *lock.Lease) string {
	eng := "?"
	for _, c := range k.w.clients {
		if c.eng == l.Engine() {
			eng = c.name
		}
	}
	return fmt.Sprintf("%s %s (token %d)", eng, l.Node(), l.Token())
}

func (k *checker) names(leases []*lock.Lease) string {
	s := make([]string, len(leases))
	for i, l := range leases {
		s[i] = k.name(l)
	}
	return strings.Join(s, ", ")
}

// noNodesLeft: once everything is released, no lock node of any session
// remains anywhere under /sim (a mutex's, a semaphore's guard or lease, a
// candidate's), and no session owns an ephemeral. The lock paths
// themselves, containers, may stay until the server reaps them.
func (k *checker) noNodesLeft() {
	w := k.w
	if p, children := lockNodesUnder(w, "/sim"); p != "" {
		w.fail("leak: %s still has %v after every release", p, children)
		return
	}
	for _, c := range w.clients {
		if eph := w.model.Ephemerals(c.session); len(eph) > 0 {
			w.fail("leak: session %d of %s still owns %v", c.session, c.name, eph)
			return
		}
	}
}

// lockNodesUnder finds, depth first, a path under p with lock nodes among
// its children, and those.
func lockNodesUnder(w *world, p string) (string, []string) {
	children, _ := w.model.Children(p)
	var nodes []string
	for _, ch := range children {
		if _, ok := queue.Parse(ch); ok {
			nodes = append(nodes, ch)
		}
	}
	if len(nodes) > 0 {
		return p, nodes
	}
	for _, ch := range children {
		if q, nodes := lockNodesUnder(w, p+"/"+ch); q != "" {
			return q, nodes
		}
	}
	return "", nil
}

// allResolved: after Close, every future has resolved, once, and so has
// every acquisition an engine reported taking in.
func (k *checker) allResolved() {
	w := k.w
	for _, a := range w.acqs {
		switch {
		case !a.resolved():
			w.fail("%v: its future never resolved", a)
			return
		case a.callbacks != 1:
			w.fail("%v: its future's callback ran %d times", a, a.callbacks)
			return
		case a.releaseDone != nil && !a.releaseDone():
			w.fail("%v: its release never completed", a)
			return
		}
	}
	for _, c := range w.clients {
		for id := uint64(1); ; id++ {
			n, ok := k.outcomes[acquisition{c, id}]
			if !ok {
				break
			}
			if n != 1 {
				w.fail("reports: %s reported %d outcomes of acquisition %d", c.name, n, id)
				return
			}
		}
	}
	for _, m := range k.members {
		if n := k.outcomes[m]; n != 1 {
			w.fail("reports: %s reported %d outcomes of member acquisition %d", m.c.name, n, m.id)
			return
		}
	}
}

// noteTries records the create paths of c's live tries, after each turn of
// its loop: a try's machine names its protected id before its create can
// reach the server, and names a fresh one only in a turn too.
func (k *checker) noteTries(c *client) {
	c.eng.TryCreates(func(id uint64, createPath string) {
		if t := k.acqs[acquisition{c, id}]; t != nil && !slices.Contains(t.creates, createPath) {
			t.creates = append(t.creates, createPath)
		}
	})
}

// refusal judges a try's ErrWouldBlock against the model's history: it
// claims the lock was taken. So some node that blocks the try's own (a
// lock node ahead of it, of a kind that excludes the try's; for a
// semaphore's lease, as many lease nodes ahead as the semaphore has
// leases) must have existed on the server at some instant between the
// try's create and its failure: the listing that refused it was sent after
// the create was answered. Or the try's own node vanished without its
// delete (its session ended, or another session deleted it), which a try
// gives up on too.
func (k *checker) refusal(c *client, r events.Report, t *acqRecord) {
	w := k.w
	if t == nil {
		return // taken in before the checker knew it: reported above
	}
	k.refusals++
	to := w.model.Zxid()
	lives := w.model.Lives(r.Path)
	own := -1
	for i, l := range lives {
		for _, p := range t.creates {
			if strings.HasPrefix(l.Path, p) && l.Created > t.from {
				own = i
			}
		}
	}
	if own < 0 {
		w.fail("outcome: %s's try #%d on %s failed with ErrWouldBlock, but no node of its was ever made (creates %v)",
			c.name, r.ID, r.Path, t.creates)
		return
	}
	self := lives[own]
	mine, _ := queue.Parse(path.Base(self.Path))
	if self.Deleted != 0 && self.Deleted <= to && (self.Ended || self.DeletedBy != self.Owner) {
		return
	}
	need := 1
	if mine.Kind == queue.KindLease {
		need = max(1, w.load.semLeases[strings.TrimSuffix(r.Path, "/leases")])
	}
	var ahead []zkmodel.Life
	for i, l := range lives {
		n, ok := queue.Parse(path.Base(l.Path))
		if i == own || !ok || n.Seq > mine.Seq || !l.Alive(self.Created, to) ||
			slices.ContainsFunc(t.creates, func(p string) bool { return strings.HasPrefix(l.Path, p) }) {
			continue
		}
		if mine.Kind == queue.KindRead && n.Kind == queue.KindRead {
			continue // readers share
		}
		ahead = append(ahead, l)
	}
	if most := mostAlive(ahead, self.Created, to); most < need {
		w.fail("outcome: %s's try #%d on %s (node %s, created at zxid %d) failed with ErrWouldBlock at zxid %d, "+
			"but at most %d of the %d nodes it needs ahead of it existed meanwhile: %v",
			c.name, r.ID, r.Path, path.Base(self.Path), self.Created, to, most, need, lifeNames(lives, self.Created))
	}
}

// mostAlive is the most of lives that existed at once in one state of the
// server between zxids from and to.
func mostAlive(lives []zkmodel.Life, from, to int64) int {
	most := 0
	for _, at := range lives {
		z := max(at.Created, from) // every maximum is reached at some node's creation, or at from
		n := 0
		for _, l := range lives {
			if l.Alive(z, z) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// lifeNames prints the lives that existed from zxid from on, for a failure.
func lifeNames(lives []zkmodel.Life, from int64) string {
	var s []string
	for _, l := range lives {
		if l.Deleted == 0 || l.Deleted > from {
			s = append(s, fmt.Sprintf("%s [%d, %d) by %d", path.Base(l.Path), l.Created, l.Deleted, l.DeletedBy))
		}
	}
	return strings.Join(s, ", ")
}

// noteLapses counts, after every step, the clients whose watchdog does not
// trust their session: a lease lost to the watchdog must follow one.
func (k *checker) noteLapses() {
	for _, c := range k.w.clients {
		if !c.eng.Trusted() {
			k.lapses[c]++
		}
	}
}

// loss judges a lease's Lost against what happened: ErrLost (the watchdog
// no longer vouched for the session) must follow a lapse of the
// watchdog, seen after some step since the acquisition was taken in, or
// the node's end on the server; ErrSessionExpired, the node's deletion by
// its session's end; ErrClosed, the engine's Close.
func (k *checker) loss(c *client, r events.Report, a *acqRecord) {
	w := k.w
	if a == nil || a.node == "" {
		return // a lease the checker saw no grant of (a cohort's pass) or reported above
	}
	k.losses++
	var life *zkmodel.Life
	lives := w.model.Lives(r.Path)
	for i := len(lives) - 1; i >= 0; i-- {
		if path.Base(lives[i].Path) == a.node {
			life = &lives[i]
			break
		}
	}
	gone := life != nil && life.Deleted != 0
	switch {
	case errors.Is(r.Err, engine.ErrClosed):
		if !c.closing {
			w.fail("outcome: %s's lease #%d on %s (%s) lost with ErrClosed, but the engine was never closed", c.name, r.ID, r.Path, a.node)
		}
	case errors.Is(r.Err, engine.ErrSessionExpired):
		if !gone || !life.Ended {
			w.fail("outcome: %s's lease #%d on %s (%s) lost with ErrSessionExpired, but its node was not deleted by its session's end (%+v)",
				c.name, r.ID, r.Path, a.node, life)
		}
	case errors.Is(r.Err, engine.ErrLost):
		if !gone && k.lapses[c] == a.lapses {
			w.fail("outcome: %s's lease #%d on %s (%s) lost with ErrLost, but its watchdog never lapsed since it was asked for, and its node lives",
				c.name, r.ID, r.Path, a.node)
		}
	default:
		w.fail("outcome: %s's lease #%d on %s (%s) lost with %v", c.name, r.ID, r.Path, a.node, r.Err)
	}
}
