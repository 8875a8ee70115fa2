package engine_test

import (
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
	// cut are the clients lapseMoves cut off, until they reconnect.
	cut map[*client]bool

	// inFlight is the request at the server whose reply the peer waits
	// for; the peer sends one at a time. nil: none.
	inFlight *zkmodel.Request
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
	p := &peer{w: w, rng: rng, cut: make(map[*client]bool)}
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
	switch {
	case p.w.model.Pending(p.session) > 0:
		add(20, "peer receive", p.receive)
	case p.cur == nil && w.faults:
		add(10, "peer acquire", p.acquire)
	case p.cur != nil && p.cur.stage == peerHolding && !p.cur.released && p.inFlight == nil && w.clock.now >= p.cur.holdUntil:
		add(4, "peer release", p.release)
	}
}

// lapseMoves, in worlds with a peer, aim a fault at the class the peer is
// there to see: a client whose semaphore lease create is on its way to the
// server (so it holds the guard) is cut off, the create failing unapplied,
// for longer than its trust deadline (its guard is lost) and shorter than
// its session, which comes back. The peer, queued on the guard, may take
// it and make its lease node meanwhile.
func (p *peer) lapseMoves(add func(int, string, func())) {
	w := p.w
	// A client cut so reconnects soon after the cut ends: left to the
	// connect move, its session mostly expired first.
	for _, c := range w.clients {
		switch {
		case !p.cut[c]:
		case c.up || c.exited:
			delete(p.cut, c)
		case !c.dialing && c.partitionedUntil <= w.clock.now:
			add(100, "connect", c.connect)
		}
	}
	if !w.faults || w.clock.now < w.calmUntil {
		return
	}
	for _, c := range w.clients {
		if !c.up || c.exited || !slices.ContainsFunc(c.unsent, leaseCreate) {
			continue
		}
		add(10, "lapse", func() {
			d := simSessionTimeout*33/40 + time.Duration(p.rng.Int64N(int64(simSessionTimeout/10)))
			c.partitionedUntil = w.clock.now + d
			w.tracef("%s: partitioned for %v, its lease create on its way", c.name, d)
			c.lose()
			p.cut[c] = true
			// No other fault while it plays out: a clock jump or a
			// stall would have the session expire.
			w.calmUntil = max(w.calmUntil, w.clock.now+2*simSessionTimeout)
		})
	}
}

// leaseCreate: cl creates a semaphore's lease node, alone or in a multi.
func leaseCreate(cl *call) bool {
	is := func(r zkmodel.Request) bool {
		return r.Op == zkmodel.OpCreate && strings.HasSuffix(r.Path, "-lease-")
	}
	return is(cl.req) || slices.ContainsFunc(cl.req.Ops, is)
}

func (p *peer) acquire() {
	p.acquisitions++
	sem := simSemPaths[p.rng.IntN(len(simSemPaths))]
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
	p.inFlight = &req
	if err := p.w.model.Submit(p.w.at(), p.session, req); err != nil {
		panic(fmt.Sprintf("sim: the curator peer's %v %s: %v", req.Op, req.Path, err))
	}
	p.w.tracef("curator send #%d %v %s", req.Xid, req.Op, req.Path)
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
