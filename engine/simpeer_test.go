package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/internal/zkmodel"
	"github.com/turnstile-go/turnstile/queue"
)

// The Curator peer: a client of the simulated server that is not turnstile
// but runs Curator's InterProcessSemaphoreV2 protocol on the semaphore
// paths, beside the engines' lock.Semaphore on the same paths, on a session
// of its own. Its protocol, for a semaphore of n leases at p:
//
//  1. the guard, Curator's InterProcessMutex on p/locks: a protected
//     ephemeral sequential "_c_<uuid>-lock-" node (parents made as
//     containers when missing); the lowest sequence holds, any other
//     watches (getData) the node just before it and lists again when
//     that changes;
//  2. holding the guard, its lease node: "_c_<uuid>-lease-" under
//     p/leases;
//  3. still holding the guard, it lists p/leases with a children watch
//     and admits itself once the listing has at most n children (by
//     count, not position), waiting on the watch otherwise; its lease
//     node missing from a listing sends it back to the guard;
//  4. admitted, it deletes its guard node, holds the lease a while, and
//     deletes its lease node.
//
// It holds the guard while it waits for the count, as Curator does: that
// is what makes a turnstile lease node queued without the guard, behind
// the peer's, a deadlock (both wait on each other), which the liveness
// checker sees as the peer's acquisition, or the engine's, never ending.
//
// It is never faulted (its faults are not turnstile's to survive), and it
// runs only in worlds of one server. Its choices come from a generator of
// its own, so a seed's world without a peer is what it was before the peer.
type peer struct {
	w       *world
	rng     *rand.Rand
	session zkmodel.SessionID
	timeout time.Duration
	xid     int64

	cur *peerAcq // the acquisition under way or held; nil: none
	// cut are the clients lapseMoves cut off, until a while after they
	// are back.
	cut map[*client]*aimedLapse

	// inFlight is the request whose reply the peer waits for; the peer
	// sends one at a time. nil: none. unsent: it is on its way, not yet
	// at the server (a move of its own, as an engine's requests are, so
	// that others' requests land between the peer's: between its lease
	// create and the listing that follows it, say).
	inFlight *zkmodel.Request
	unsent   bool
	// aim is the semaphore a lapse was aimed at, which the peer's next
	// acquisition takes: queued on the guard behind the cut client's node
	// (and the engine's queued behind it, if any), it takes the guard
	// once those go. "": none.
	aim string
	// parents are the containers still to create before create is sent
	// again, after a create met NoNode.
	parents []string
	create  *zkmodel.Request

	acquisitions, holds int // started, and admitted
}

// peerStage is where the peer's acquisition is.
type peerStage uint8

const (
	peerGuardCreate peerStage = iota + 1
	peerGuardWait             // watching the guard node before its own
	peerLeaseCreate
	peerLeaseWait // watching the lease path's children for the count
	peerHolding
)

var peerStageNames = map[peerStage]string{peerGuardCreate: "creating its guard node",
	peerGuardWait: "waiting for the guard", peerLeaseCreate: "creating its lease node",
	peerLeaseWait: "holding the guard, waiting for the lease count", peerHolding: "holding"}

// peerAcq is one acquisition of the peer.
type peerAcq struct {
	id        int
	path      string // the semaphore's path
	n         int
	stage     peerStage
	guard     string        // its guard node's path, once created
	lease     string        // its lease node's path, once created
	watching  string        // the path whose watch it waits on
	started   time.Duration // when it began
	holdUntil time.Duration // when, holding, it lets go
	released  bool          // its release began
}

func (a *peerAcq) String() string {
	return fmt.Sprintf("curator peer's semaphore acquisition #%d on %s (begun at %.3fs)", a.id, a.path, a.started.Seconds())
}

// newPeer gives the world a Curator peer in three quarters of the worlds
// of one server; nil otherwise.
func newPeer(w *world) *peer {
	rng := rand.New(rand.NewPCG(w.seed, 0xc0a7))
	if w.ens != nil || rng.IntN(4) == 0 {
		return nil
	}
	p := &peer{w: w, rng: rng, cut: make(map[*client]*aimedLapse)}
	p.session, p.timeout = w.model.Connect(w.at(), simSessionTimeout)
	w.clock.afterFunc(p.timeout/3, p.ping)
	return p
}

func (p *peer) ping() {
	_ = p.w.model.Ping(p.w.at(), p.session)
	p.w.clock.afterFunc(p.timeout/3, p.ping)
}

// uuid is a protected id in Curator's form, from the peer's generator.
func (p *peer) uuid() string {
	r := p.rng
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(0x10000), r.IntN(0x1000), r.IntN(0x1000), r.Uint64()&0xffffffffffff)
}

// moves are what the peer can do now.
func (p *peer) moves(add func(int, string, func())) {
	w := p.w
	if p.unsent {
		add(20, "peer submit", p.submit)
	}
	switch {
	case p.w.model.Pending(p.session) > 0:
		add(20, "peer receive", p.receive)
	case p.cur == nil && p.aim != "":
		// Aimed at a lapse's semaphore: also once the faults stop.
		add(40, "peer acquire", p.acquire)
	case p.cur == nil && w.faults && !p.queuesBehind():
		add(10, "peer acquire", p.acquire)
	case p.cur != nil && p.cur.stage == peerHolding && !p.cur.released && p.inFlight == nil && w.clock.now >= p.cur.holdUntil:
		add(4, "peer release", p.release)
	}
}

// lapseMoves, in worlds with a peer, aim a fault at the class the peer is
// there to see: a client whose semaphore lease create is on its way to the
// server (so it holds the guard) is cut off, the create failing unapplied,
// for longer than its trust deadline (its guard is lost) and shorter than
// its session, which comes back; once back, it deletes its lost guard
// node and makes its lease node again.
//
// Curator and turnstile then wait for each other for ever if the
// client's lease node is made again behind the peer's, after the peer,
// holding the guard, has listed a full count: the lease of a single-lease
// semaphore held by another engine meanwhile, as in internal/interop's
// TestTurnstileSemaphoreLapseWithALostLeaseCreateBesideCurator. So the
// lapse is aimed more often at single-lease semaphores, and it plays out
// as in that test: another engine acquires the semaphore, queued on the
// guard behind the cut client's node, unless one holds a lease of it
// already; the peer queues behind it; the engines' leases of the
// semaphore are held until a while after the client is back; and once the
// client's lost guard node is gone, what the server sends the client is
// held back (latency on its link) until the peer has made its lease node,
// for at most a second, as that test's gate holds it.
func (p *peer) lapseMoves(add func(int, string, func())) {
	w := p.w
	for _, c := range w.clients {
		if l := p.cut[c]; l != nil {
			p.playOut(c, l, add)
		}
	}
	if !w.faults || w.clock.now < w.calmUntil {
		return
	}
	for _, c := range w.clients {
		i := slices.IndexFunc(c.unsent, leaseCreate)
		if !c.up || c.exited || i < 0 || p.cut[c] != nil {
			continue
		}
		sem := semaphoreOf(c.unsent[i])
		// Its acquisitions on sem are not cancelled from here on: one of
		// them holds the guard, and a cancel would end what the lapse is
		// aimed at. A try's lease would not wait, and a storm's context
		// ends anyway: those are left alone.
		var aimed []*acq
		for _, a := range w.open {
			if a.c == c && a.callbacks == 0 && slices.Contains(a.paths, sem) {
				aimed = append(aimed, a)
			}
		}
		if slices.ContainsFunc(aimed, func(a *acq) bool { return a.storm != 0 || a.try }) {
			continue
		}
		weight := 10
		if w.load.semLeases[sem] == 1 {
			weight = 40
		}
		add(weight, "lapse", func() {
			for _, a := range aimed {
				a.shielded = true
			}
			d := simSessionTimeout*33/40 + time.Duration(p.rng.Int64N(int64(simSessionTimeout/10)))
			c.partitionedUntil = w.clock.now + d
			w.tracef("%s: partitioned for %v, its lease create on its way", c.name, d)
			l := &aimedLapse{sem: sem, guards: p.nodesOf(c, sem+"/locks"), until: c.partitionedUntil + 2*simSessionTimeout}
			p.cut[c] = l
			c.lose()
			if len(p.holders(sem, c)) == 0 {
				l.behind = p.acquireBehind(c, sem)
			}
			if l.behind == nil {
				p.aim = sem
			}
			// No other fault while it plays out: a clock jump or a
			// stall would have the session expire.
			w.calmUntil = max(w.calmUntil, w.clock.now+2*simSessionTimeout)
		})
	}
}

// aimedLapse is a client cut off by lapseMoves, until a while after it is
// back.
type aimedLapse struct {
	sem    string
	guards []string      // its nodes under sem's guard path when it was cut
	until  time.Duration // the engines hold their leases of sem until then
	// behind is the engine that queued on the guard behind the client's
	// node; the peer queues once its node is there. nil: none.
	behind *client
	held   bool // its lost guard nodes went, and its replies were held
}

// playOut is an aimed lapse's course, one step at a time.
func (p *peer) playOut(c *client, l *aimedLapse, add func(int, string, func())) {
	w := p.w
	if c.exited || c.up && w.clock.now >= l.until {
		delete(p.cut, c)
		return
	}
	if l.behind != nil && len(p.nodesOf(l.behind, l.sem+"/locks")) > 0 {
		l.behind, p.aim = nil, l.sem
	}
	switch {
	case !c.up && !c.dialing && c.partitionedUntil <= w.clock.now:
		// A client cut so reconnects soon after the cut ends: left to
		// the connect move, its session mostly expired first.
		add(100, "connect", c.connect)
	case c.up && !l.held && !slices.ContainsFunc(l.guards, p.exists):
		l.held = true
		c.heldUntil = w.clock.now + time.Second
		w.tracef("%s: its lost guard nodes gone, what the server sends it is held", c.name)
	case c.heldUntil > w.clock.now && p.cur != nil && p.cur.path == l.sem && p.cur.lease != "":
		c.heldUntil = w.clock.now
		w.tracef("%s: what the server sends it flows again", c.name)
	}
	for _, a := range p.holders(l.sem, c) {
		if a.releaseAt < l.until {
			a.releaseAt, a.heldOn = l.until, true
			w.tracef("%s: holds %v on until %.3fs", a.c.name, a, l.until.Seconds())
		}
	}
}

// acquireBehind starts the workload's acquisition of sem on an engine other
// than c, never cancelled, queued on the guard behind c's node: the
// engine that takes the guard after c has lost it. nil if no engine can.
func (p *peer) acquireBehind(c *client, sem string) *client {
	w := p.w
	// One that is connected and running, if any, so that its node is
	// there before c is back.
	var others, ready []*client
	for _, o := range w.clients {
		if o != c && !o.exited && !o.closing && !w.ens.quietFor(o) {
			others = append(others, o)
			if o.up && o.stalledUntil <= w.clock.now {
				ready = append(ready, o)
			}
		}
	}
	if len(ready) > 0 {
		others = ready
	}
	if len(others) == 0 {
		return nil
	}
	o := others[p.rng.IntN(len(others))]
	ctx, cancel := context.WithCancel(context.Background())
	a := &acq{id: len(w.acqs) + 1, c: o, kind: kindSemaphore, paths: []string{sem}, cancel: cancel, shielded: true}
	await(w, a, w.semaphore(o, sem).Acquire(ctx), grantLease)
	w.acqs = append(w.acqs, a)
	w.open = append(w.open, a)
	w.tracef("%s: acquire %v (behind %s)", o.name, a, c.name)
	return o
}

// holders are the workload's acquisitions of engines other than c that
// hold a lease of sem.
func (p *peer) holders(sem string, c *client) []*acq {
	var held []*acq
	for _, a := range p.w.open {
		if a.c != c && a.grant != nil && !a.released && a.grant.held() && slices.Contains(a.paths, sem) {
			held = append(held, a)
		}
	}
	return held
}

// nodesOf are c's ephemeral nodes under dir.
func (p *peer) nodesOf(c *client, dir string) []string {
	var nodes []string
	for _, n := range p.w.model.Ephemerals(c.session) {
		if path.Dir(n) == dir {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// exists reports whether node is in the model's tree.
func (p *peer) exists(node string) bool {
	_, _, ok := p.w.model.Node(node)
	return ok
}

// queuesBehind reports whether the peer is to queue behind an engine that
// has yet to queue behind a cut client: it starts nothing else meanwhile.
func (p *peer) queuesBehind() bool {
	for _, l := range p.cut {
		if l.behind != nil {
			return true
		}
	}
	return false
}

// lapsing reports whether c is cut off by an aimed lapse: when the faults
// stop, its cut still ends when it was to, after its trust deadline.
func (p *peer) lapsing(c *client) bool { return p != nil && p.cut[c] != nil && !c.up }

// leaseCreate: cl creates a semaphore's lease node, alone or in a multi.
func leaseCreate(cl *call) bool {
	return isLeaseCreate(cl.req) || slices.ContainsFunc(cl.req.Ops, isLeaseCreate)
}

func isLeaseCreate(r zkmodel.Request) bool {
	return r.Op == zkmodel.OpCreate && strings.HasSuffix(r.Path, "-lease-")
}

// semaphoreOf is the semaphore whose lease node cl creates.
func semaphoreOf(cl *call) string {
	r := cl.req
	if i := slices.IndexFunc(r.Ops, isLeaseCreate); i >= 0 {
		r = r.Ops[i]
	}
	return path.Dir(path.Dir(r.Path))
}

func (p *peer) acquire() {
	p.acquisitions++
	sem := simSemPaths[p.rng.IntN(len(simSemPaths))]
	if p.aim != "" {
		sem, p.aim = p.aim, ""
	}
	p.cur = &peerAcq{id: p.acquisitions, path: sem, n: p.w.load.semLeases[sem], started: p.w.clock.now}
	p.w.tracef("curator: acquires %s of %d leases", sem, p.cur.n)
	p.createGuard()
}

func (p *peer) createGuard() {
	a := p.cur
	a.stage, a.guard, a.lease = peerGuardCreate, "", ""
	p.createNode(a.path + "/locks/_c_" + p.uuid() + "-lock-")
}

func (p *peer) createNode(prefix string) {
	p.create = &zkmodel.Request{Op: zkmodel.OpCreate, Path: prefix, Mode: zkmodel.EphemeralSequential}
	p.send(*p.create)
}

func (p *peer) send(req zkmodel.Request) {
	p.xid++
	req.Xid = p.xid
	p.inFlight, p.unsent = &req, true
	p.w.tracef("curator send #%d %v %s", req.Xid, req.Op, req.Path)
}

// submit: the request sent reaches the server.
func (p *peer) submit() {
	req := *p.inFlight
	p.unsent = false
	if err := p.w.model.Submit(p.w.at(), p.session, req); err != nil {
		panic(fmt.Sprintf("sim: the curator peer's %v %s: %v", req.Op, req.Path, err))
	}
	p.w.tracef("curator #%d reaches the server", req.Xid)
}

func (p *peer) receive() {
	msg, _ := p.w.model.Next(p.session)
	switch msg.Kind {
	case zkmodel.MsgEvent:
		p.w.tracef("curator event %v %s", msg.Event.Type, msg.Event.Path)
		if a := p.cur; a != nil && p.inFlight == nil && a.watching == msg.Event.Path {
			a.watching = ""
			p.list()
		}
	case zkmodel.MsgReply:
		req := p.inFlight
		p.inFlight = nil
		p.w.tracef("curator #%d reply %v %s", msg.Reply.Xid, msg.Reply.Err, replied(msg.Reply))
		p.replied(*req, msg.Reply)
	case zkmodel.MsgClosed:
		panic(fmt.Sprintf("sim: the server closed the curator peer's session %d", p.session))
	}
}

// list lists what the acquisition's stage waits on.
func (p *peer) list() {
	a := p.cur
	switch a.stage {
	case peerGuardWait:
		p.send(zkmodel.Request{Op: zkmodel.OpGetChildren, Path: a.path + "/locks"})
	case peerLeaseWait:
		p.send(zkmodel.Request{Op: zkmodel.OpGetChildren, Path: a.path + "/leases", Watch: true})
	}
}

func (p *peer) replied(req zkmodel.Request, rep zkmodel.Reply) {
	a := p.cur
	switch {
	case req.Op == zkmodel.OpCreateContainer:
		switch rep.Err {
		case zkmodel.OK, zkmodel.NodeExists:
			p.nextParent()
		case zkmodel.NoNode:
			// An ancestor made went meanwhile (an engine deleted its
			// lock path, or the server reaped the container): again
			// from the top, as Curator's retry would.
			p.makeParents()
		default:
			panic(fmt.Sprintf("sim: the curator peer's container create %s: %v", req.Path, rep.Err))
		}
	case req.Op == zkmodel.OpCreate:
		switch rep.Err {
		case zkmodel.NoNode:
			p.makeParents()
			return
		case zkmodel.OK:
		default:
			panic(fmt.Sprintf("sim: the curator peer's create %s: %v", req.Path, rep.Err))
		}
		if a.stage == peerGuardCreate {
			a.guard, a.stage = rep.Path, peerGuardWait
		} else {
			a.lease, a.stage = rep.Path, peerLeaseWait
		}
		p.list()
	case req.Op == zkmodel.OpGetChildren && a.stage == peerGuardWait:
		p.guardListed(rep.Children)
	case req.Op == zkmodel.OpGetData:
		if rep.Err == zkmodel.NoNode {
			p.list() // the one before went meanwhile
			return
		}
		a.watching = req.Path
	case req.Op == zkmodel.OpGetChildren && a.stage == peerLeaseWait:
		p.leasesListed(rep.Children)
	case req.Op == zkmodel.OpDelete:
		if rep.Err != zkmodel.OK && rep.Err != zkmodel.NoNode {
			panic(fmt.Sprintf("sim: the curator peer's delete %s: %v", req.Path, rep.Err))
		}
		switch {
		case req.Path == a.guard && a.stage == peerHolding:
			a.guard = "" // admitted: the guard is let go, the lease held
		case req.Path == a.lease && a.stage == peerHolding:
			p.w.tracef("curator: released %s", a.lease)
			p.cur = nil
		case req.Path == a.lease:
			// Its lease node went missing: the lease is given back (gone
			// already), then the guard, and it starts over.
			a.lease = ""
			p.send(zkmodel.Request{Op: zkmodel.OpDelete, Path: a.guard, Version: -1})
		case req.Path == a.guard:
			p.createGuard()
		}
	}
}

// makeParents is Curator's creatingParentContainersIfNeeded: every
// ancestor of the node to create, as a container, then the create again.
func (p *peer) makeParents() {
	p.parents = p.parents[:0]
	for d := path.Dir(p.create.Path); d != "/"; d = path.Dir(d) {
		p.parents = append(p.parents, d)
	}
	slices.Reverse(p.parents)
	p.nextParent()
}

func (p *peer) nextParent() {
	if len(p.parents) == 0 {
		p.send(*p.create)
		return
	}
	d := p.parents[0]
	p.parents = p.parents[1:]
	p.send(zkmodel.Request{Op: zkmodel.OpCreateContainer, Path: d})
}

// guardListed: the lowest sequence number holds the guard; any other node
// watches the one just before it. Names that are no lock node (an
// engine's pin) sort after every sequence number in Curator's order, so
// they never come before the peer's.
func (p *peer) guardListed(children []string) {
	a := p.cur
	var nodes []queue.Node
	for _, ch := range children {
		if n, ok := queue.Parse(ch); ok {
			nodes = append(nodes, n)
		}
	}
	slices.SortFunc(nodes, func(x, y queue.Node) int { return int(x.Seq - y.Seq) })
	self := path.Base(a.guard)
	i := slices.IndexFunc(nodes, func(n queue.Node) bool { return n.Name == self })
	switch {
	case i < 0:
		panic(fmt.Sprintf("sim: the curator peer's guard node %s is gone", a.guard))
	case i == 0:
		p.w.tracef("curator: holds the guard %s", a.guard)
		a.stage = peerLeaseCreate
		p.createNode(a.path + "/leases/_c_" + p.uuid() + "-lease-")
	default:
		p.send(zkmodel.Request{Op: zkmodel.OpGetData, Path: a.path + "/locks/" + nodes[i-1].Name, Watch: true})
	}
}

// leasesListed admits by count: every child of the lease path counts.
func (p *peer) leasesListed(children []string) {
	a := p.cur
	switch {
	case !slices.Contains(children, path.Base(a.lease)):
		p.w.tracef("curator: its lease node %s is missing", a.lease)
		p.send(zkmodel.Request{Op: zkmodel.OpDelete, Path: a.lease, Version: -1})
	case len(children) <= a.n:
		p.holds++
		a.stage = peerHolding
		a.holdUntil = p.w.clock.now + time.Duration(p.rng.Int64N(int64(time.Second)))
		p.w.tracef("curator: granted %s of %s, %d of %d leases", a.lease, a.path, len(children), a.n)
		p.send(zkmodel.Request{Op: zkmodel.OpDelete, Path: a.guard, Version: -1})
	default:
		a.watching = a.path + "/leases"
	}
}

func (p *peer) release() {
	a := p.cur
	p.w.tracef("curator: releases %s", a.lease)
	p.send(zkmodel.Request{Op: zkmodel.OpDelete, Path: a.lease, Version: -1})
	a.released = true // no longer held: its release began
}

// holding is the lease node the peer holds on the semaphore at sem; "" if
// none.
func (p *peer) holding(sem string) string {
	if p == nil || p.cur == nil || p.cur.stage != peerHolding || p.cur.path != sem || p.cur.released {
		return ""
	}
	return p.cur.lease
}

// unsettled names the peer's acquisition not granted yet, or still held,
// or is empty.
func (p *peer) unsettled() string {
	switch {
	case p == nil || p.cur == nil:
		return ""
	case p.cur.stage == peerHolding && !p.cur.released:
		return p.cur.String() + " still held"
	case p.cur.stage == peerHolding:
		return p.cur.String() + " release pending"
	}
	return p.cur.String() + " " + peerStageNames[p.cur.stage]
}

// waitsForCount names the peer's acquisition when it holds the guard and
// waits for the lease count, and why: the lease nodes it waits on and
// whose each is, what a liveness failure beside the peer names. Empty
// otherwise.
func (p *peer) waitsForCount() (acquisition, why string) {
	if p == nil || p.cur == nil || p.cur.stage != peerLeaseWait {
		return "", ""
	}
	a := p.cur
	leases, _ := p.w.model.Children(a.path + "/leases")
	slices.SortFunc(leases, func(x, y string) int {
		nx, _ := queue.Parse(x)
		ny, _ := queue.Parse(y)
		return int(nx.Seq - ny.Seq)
	})
	owners := make([]string, len(leases))
	for i, l := range leases {
		owners[i] = l + " (" + p.owner(a.path+"/leases/"+l) + ")"
	}
	return a.String(), fmt.Sprintf("it holds the guard %s and waits for at most %d lease nodes, of %d: %s",
		path.Base(a.guard), a.n, len(leases), strings.Join(owners, ", "))
}

// owner names whose ephemeral node at p is: the peer's, or an engine's.
func (p *peer) owner(node string) string {
	st, _, ok := p.w.model.Node(node)
	switch {
	case !ok:
		return "gone"
	case zkmodel.SessionID(st.EphemeralOwner) == p.session:
		return "the curator peer's"
	}
	for _, c := range p.w.clients {
		if zkmodel.SessionID(st.EphemeralOwner) == c.session {
			return c.name + "'s"
		}
	}
	return fmt.Sprintf("session %d's", st.EphemeralOwner)
}
