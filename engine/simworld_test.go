package engine_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/zkmodel"
	"github.com/turnstile-go/turnstile/queue"
)

// The simulated world: one in-memory ZooKeeper (zkmodel), a clock, timers
// on it, and one simulated client per engine. Nothing in it runs unless
// the simulator steps it, on one goroutine; every choice comes from the
// seeded generator in sim_test.go.
//
// A request of the engine runs its executor code as in production (exec,
// the multis of engine/internal/batch), as a coroutine (iter.Pull): it
// runs only when the simulator resumes it, and its calls on the client
// hand the simulator a request and suspend until the simulator resumes it
// with the reply. So the runtime's code runs, one step at a time, in an
// order the seed chooses, and no two pieces of code ever run at once.

// clock is the simulated monotonic clock and the timers armed on it.
type clock struct {
	now    time.Duration
	seq    uint64 // arming order, to fire timers due at one instant in order
	timers []*simTimer
}

type simTimer struct {
	c     *clock
	at    time.Duration
	seq   uint64
	f     func()
	armed bool
}

func (c *clock) afterFunc(d time.Duration, f func()) engine.SimTimer {
	t := &simTimer{c: c, f: f}
	t.Reset(d)
	return t
}

func (t *simTimer) Stop() bool {
	was := t.armed
	t.armed = false
	return was
}

func (t *simTimer) Reset(d time.Duration) bool {
	was := t.armed
	t.c.seq++
	t.at, t.seq, t.armed = t.c.now+max(d, 0), t.c.seq, true
	if !was {
		t.c.timers = append(t.c.timers, t)
	}
	return was
}

// nextDue takes the earliest armed timer due at or before until.
func (c *clock) nextDue(until time.Duration) *simTimer {
	var due *simTimer
	live := c.timers[:0]
	for _, t := range c.timers {
		if !t.armed {
			continue
		}
		live = append(live, t)
		if t.at <= until && (due == nil || t.at < due.at || t.at == due.at && t.seq < due.seq) {
			due = t
		}
	}
	clear(c.timers[len(live):])
	c.timers = live
	return due
}

// coro is one request's goroutine, run as a coroutine.
type coro struct {
	next  func() (*call, bool)
	stop  func()
	yield func(*call) bool
	done  bool
}

// call is one request a coroutine is waiting on.
type call struct {
	xid  int64
	req  zkmodel.Request
	sent time.Duration
	co   *coro
	rep  zkmodel.Reply
	err  error // set when the client fails the call (connection lost)
}

// client is the simulated go-zookeeper client of one engine: it sends
// requests in order, matches replies, pings, reports session changes, and
// feeds the engine's watchdog what trackedConn reads off the wire.
type client struct {
	w    *world
	name string
	eng  *engine.Engine
	// cohortHold is the MaxHold of eng's cohorts.
	cohortHold time.Duration

	session zkmodel.SessionID
	timeout time.Duration // negotiated
	up      bool          // has a connection
	watches zkmodel.ClientWatches
	// childWatches are the channels ChildrenW handed out, by path, as
	// go-zookeeper keeps them: a children-changed or deleted event of the
	// path is sent into each (buffered, so nothing blocks) and closes it;
	// an expiry or the close sends EventNotWatching. A cohort polls its
	// channel to learn that another client queued.
	childWatches map[string][]chan zk.Event
	// lingerChecks name, once the loop's next turn has taken the
	// notifications they were made at, a node that lingers still though
	// its watch fired (see notify).
	lingerChecks []func() string
	// heard are the nodes the engine was told of, by full path: how many
	// loop turns had ended when the first listing of their parent that
	// named them, or the first notification of a change to the parent's
	// children while they existed, was delivered (so the turn after took
	// it in; see cohortCheck). turns counts the loop's turns.
	heard  map[string]int
	turns  int
	unsent []*call // sent by the client, not yet at the server
	// queued is, per session and lock path, the latest lock node the
	// client's replies told it was made, with its request's xid: one
	// engine's nodes on a path must be numbered in the order it asked for
	// them (see queuedInOrder).
	queued  map[queuedKey]queuedNode
	waiting map[int64]*call // at the server, reply not yet taken
	pings   []time.Duration // send times of pings at the server
	nextXid int64
	coros   map[*coro]struct{} // live coroutines
	parked  []*coro            // coroutines waiting to be scheduled (see park)

	stalledUntil     time.Duration // the loop processes nothing before this
	partitionedUntil time.Duration // no server answers a connect before this
	heldUntil        time.Duration // what the server sends it arrives no sooner (latency)
	exited           bool          // the engine shut down
	closing          bool          // Close was called
	cancels          []*afterDone  // context.AfterFunc registrations

	// wire is the connection as the engine's trackedConn sees it: what
	// the client writes and reads moves the trust deadline by the
	// engine's own rules (engine.SimWire). nil without a connection.
	wire *engine.SimWire
	// member is the member of the ensemble the connection is on; members
	// are those of its server list (simensemble_test.go).
	member  zkmodel.MemberID
	members []zkmodel.MemberID
	// dialing: a handshake was sent on wire and waits for its answer.
	dialing     bool
	connectedAt time.Duration // when the handshake of wire was answered
	// stale counts the reads that reached a follower cut from its leader.
	stale int
}

type afterDone struct {
	ctx     context.Context
	f       func()
	stopped bool
}

// running is the coroutine being resumed, whose client calls yield.
func (w *world) resume(co *coro, c *client) {
	prev := w.running
	w.running = co
	_, ok := co.next()
	w.running = prev
	if !ok {
		co.done = true
		delete(c.coros, co)
	}
}

func (c *client) goroutine(f func()) {
	co := &coro{}
	co.next, co.stop = iter.Pull(func(yield func(*call) bool) {
		co.yield = yield
		f()
	})
	c.coros[co] = struct{}{}
	c.w.resume(co, c)
}

// do sends req and waits for its reply: the coroutine suspends until the
// simulator hands it the reply or fails the call.
func (c *client) do(req zkmodel.Request) (zkmodel.Reply, error) {
	co := c.w.running
	if co == nil {
		panic("sim: a client call outside a request's coroutine")
	}
	if c.exited {
		return zkmodel.Reply{}, zk.ErrClosing
	}
	c.nextXid++
	cl := &call{xid: c.nextXid, req: req, sent: c.w.clock.now, co: co}
	req.Xid = cl.xid
	cl.req = req
	c.unsent = append(c.unsent, cl)
	c.w.tracef("%s send #%d %s %s", c.name, cl.xid, req.Op, describe(req))
	if !co.yield(cl) {
		return zkmodel.Reply{}, zk.ErrClosing
	}
	if cl.err != nil {
		return zkmodel.Reply{}, cl.err
	}
	return cl.rep, nil
}

func describe(req zkmodel.Request) string {
	if req.Op != zkmodel.OpMulti {
		return req.Path
	}
	s := "["
	for i, o := range req.Ops {
		if i > 0 {
			s += " "
		}
		s += o.Op.String() + " " + o.Path
	}
	return s + "]"
}

// The client's API, as the engine calls it (engine.SimConn).

// request sends req and returns its reply, with the error go-zookeeper
// makes of the reply's code, or of the call's failure.
func (c *client) request(req zkmodel.Request) (zkmodel.Reply, error) {
	rep, err := c.do(req)
	if err != nil {
		return zkmodel.Reply{}, err
	}
	return rep, codeErr(rep.Err)
}

func (c *client) Create(p string, data []byte, flags int32, _ []zk.ACL) (string, error) {
	rep, err := c.request(zkmodel.Request{Op: zkmodel.OpCreate, Path: p, Data: data, Mode: zkmodel.Mode(flags)})
	return rep.Path, err
}

func (c *client) CreateContainer(p string, data []byte, flags int32, _ []zk.ACL) (string, error) {
	rep, err := c.request(zkmodel.Request{Op: zkmodel.OpCreateContainer, Path: p, Data: data, Mode: zkmodel.Mode(flags)})
	return rep.Path, err
}

func (c *client) Children(p string) ([]string, *zk.Stat, error) {
	ch, st, _, err := c.children(p, false)
	return ch, st, err
}

func (c *client) ChildrenW(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return c.children(p, true)
}

func (c *client) children(p string, watch bool) ([]string, *zk.Stat, <-chan zk.Event, error) {
	rep, err := c.request(zkmodel.Request{Op: zkmodel.OpGetChildren, Path: p, Watch: watch})
	if err == nil {
		c.hear(p, rep.Children)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	var ch chan zk.Event
	if watch {
		ch = make(chan zk.Event, 1)
		if c.childWatches == nil {
			c.childWatches = map[string][]chan zk.Event{}
		}
		c.childWatches[p] = append(c.childWatches[p], ch)
	}
	return rep.Children, stat(rep.Stat), ch, nil
}

// notify hands the engine a notification as go-zookeeper does: its
// event callback first, on the receive goroutine, then the channels
// watching path's children, each sent the event and closed. A lingering
// node watching the path must have gone back once the loop took the
// notification (see lingerChecks).
func (c *client) notify(ev zk.Event) {
	c.lingerChecks = append(c.lingerChecks, c.eng.LingerWatch(ev.Path))
	if ev.Type == zk.EventNodeChildrenChanged || ev.Type == zk.EventNotWatching {
		children, _ := c.w.model.Children(ev.Path)
		c.hear(ev.Path, children)
	}
	c.eng.Notify(ev)
	if ev.Type == zk.EventNodeChildrenChanged || ev.Type == zk.EventNodeDeleted || ev.Type == zk.EventNotWatching {
		for _, ch := range c.childWatches[ev.Path] {
			ch <- ev
			close(ch)
		}
		delete(c.childWatches, ev.Path)
	}
}

// hear notes that the engine was told of parent's children, now.
func (c *client) hear(parent string, children []string) {
	if c.heard == nil {
		c.heard = map[string]int{}
	}
	for _, name := range children {
		if _, ok := c.heard[parent+"/"+name]; !ok {
			c.heard[parent+"/"+name] = c.turns
		}
	}
}

// dropChildWatches ends every channel watch: the session is gone.
func (c *client) dropChildWatches() {
	for _, path := range slices.Sorted(maps.Keys(c.childWatches)) {
		c.notify(zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: path, Err: zk.ErrSessionExpired})
	}
}

func (c *client) Get(p string) ([]byte, *zk.Stat, error) {
	d, st, _, err := c.get(p, false)
	return d, st, err
}

func (c *client) GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) { return c.get(p, true) }

func (c *client) get(p string, watch bool) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	rep, err := c.request(zkmodel.Request{Op: zkmodel.OpGetData, Path: p, Watch: watch})
	if err != nil {
		return nil, nil, nil, err
	}
	return rep.Data, stat(rep.Stat), nil, nil
}

func (c *client) Set(p string, data []byte, version int32) (*zk.Stat, error) {
	rep, err := c.request(zkmodel.Request{Op: zkmodel.OpSetData, Path: p, Data: data, Version: version})
	if err != nil {
		return nil, err
	}
	return stat(rep.Stat), nil
}

func (c *client) Delete(p string, version int32) error {
	_, err := c.request(zkmodel.Request{Op: zkmodel.OpDelete, Path: p, Version: version})
	return err
}

func (c *client) Multi(ops ...any) ([]zk.MultiResponse, error) {
	req := zkmodel.Request{Op: zkmodel.OpMulti}
	for _, o := range ops {
		switch o := o.(type) {
		case *zk.CreateRequest:
			req.Ops = append(req.Ops, zkmodel.Request{Op: zkmodel.OpCreate, Path: o.Path, Data: o.Data, Mode: zkmodel.Mode(o.Flags)})
		case *zk.DeleteRequest:
			req.Ops = append(req.Ops, zkmodel.Request{Op: zkmodel.OpDelete, Path: o.Path, Version: o.Version})
		case *zk.SetDataRequest:
			req.Ops = append(req.Ops, zkmodel.Request{Op: zkmodel.OpSetData, Path: o.Path, Data: o.Data, Version: o.Version})
		case *zk.CheckVersionRequest:
			req.Ops = append(req.Ops, zkmodel.Request{Op: zkmodel.OpCheck, Path: o.Path, Version: o.Version})
		default:
			return nil, fmt.Errorf("unknown operation type %T", o)
		}
	}
	rep, err := c.do(req)
	if err != nil {
		return nil, err
	}
	res := make([]zk.MultiResponse, 0, len(rep.Results))
	for _, r := range rep.Results {
		if r.Op == zkmodel.OpCreateContainer && r.Err == zkmodel.OK && rep.Err == zkmodel.OK {
			// go-zookeeper stops reading an applied multi's results at a
			// container create's, which it cannot decode.
			return res, zk.ErrAPIError
		}
		res = append(res, zk.MultiResponse{String: r.Path, Error: codeErr(r.Err)})
		if r.Op == zkmodel.OpSetData {
			res[len(res)-1].Stat = stat(r.Stat)
		}
	}
	return res, codeErr(rep.Err)
}

func (c *client) Sync(p string) (string, error) {
	rep, err := c.request(zkmodel.Request{Op: zkmodel.OpSync, Path: p})
	return rep.Path, err
}

func (c *client) Exists(p string) (bool, *zk.Stat, error) {
	rep, err := c.do(zkmodel.Request{Op: zkmodel.OpExists, Path: p})
	switch {
	case err != nil:
		return false, nil, err
	case rep.Err == zkmodel.NoNode:
		return false, nil, nil
	case rep.Err != zkmodel.OK:
		return false, nil, codeErr(rep.Err)
	}
	return true, stat(rep.Stat), nil
}

// AddAuth is never called: the simulated engines have no credentials.
func (c *client) AddAuth(string, []byte) error { return nil }

func (c *client) SessionID() int64 { return int64(c.session) }

// codeErrors are the errors go-zookeeper makes of the codes the model
// replies with.
var codeErrors = map[zkmodel.Code]error{
	zkmodel.OK:                      nil,
	zkmodel.NoNode:                  zk.ErrNoNode,
	zkmodel.NodeExists:              zk.ErrNodeExists,
	zkmodel.BadVersion:              zk.ErrBadVersion,
	zkmodel.NotEmpty:                zk.ErrNotEmpty,
	zkmodel.NoChildrenForEphemerals: zk.ErrNoChildrenForEphemerals,
	zkmodel.SessionExpired:          zk.ErrSessionExpired,
	zkmodel.BadArguments:            zk.ErrBadArguments,
}

func codeErr(code zkmodel.Code) error {
	if err, ok := codeErrors[code]; ok {
		return err
	}
	return fmt.Errorf("unknown error: %v", int32(code))
}

func stat(s zkmodel.Stat) *zk.Stat {
	return &zk.Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Pzxid: s.Pzxid, Version: s.Version, Cversion: s.Cversion,
		EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength, NumChildren: s.NumChildren}
}

// The simulator's moves on a client.

// submit has an unsent request reach the server: mostly the oldest, but
// one time in four any other. The runtime sends each request from a
// goroutine of its own, so two requests in flight at once may reach the
// connection, and the server, in either order; a runtime that relies on
// the order it made them in must fail here.
func (c *client) submit() {
	i := 0
	if len(c.unsent) > 1 && c.w.rng.IntN(4) == 0 {
		i = 1 + c.w.rng.IntN(len(c.unsent)-1)
		c.w.tracef("%s #%d overtakes #%d", c.name, c.unsent[i].xid, c.unsent[0].xid)
	}
	cl := c.unsent[i]
	c.unsent = slices.Delete(c.unsent, i, i+1)
	// The client wrote it when it was made, or, made while there was no
	// connection, once this one was made.
	c.wire.SentAt(int32(cl.xid), max(cl.sent, c.connectedAt))
	c.waiting[cl.xid] = cl
	c.readsStale(cl.req)
	if err := c.w.model.Submit(c.w.at(), c.session, cl.req); err != nil {
		if !errors.Is(err, zkmodel.ErrNotConnected) || c.w.ens == nil {
			panic(fmt.Sprintf("sim: submit on %s: %v", c.name, err))
		}
		// A follower that gave its leader up closed the connection; the
		// client reads the close next and fails the request with it.
		c.w.tracef("%s #%d lost: the server closed the connection", c.name, cl.xid)
		return
	}
	c.w.tracef("%s #%d reaches the server", c.name, cl.xid)
}

// receive takes the next message the server sent the client.
func (c *client) receive() {
	msg, _ := c.w.model.Next(c.session)
	switch msg.Kind {
	case zkmodel.MsgReply:
		rep := msg.Reply
		c.wire.Replied(int32(rep.Xid), rep.Zxid, int32(rep.Err))
		cl := c.waiting[rep.Xid]
		if cl == nil {
			return // the close's reply
		}
		delete(c.waiting, rep.Xid)
		c.queuedInOrder(rep)
		c.watches.Replied(cl.req, rep)
		cl.rep = rep
		c.w.tracef("%s #%d reply %v zxid %d %s", c.name, cl.xid, rep.Err, rep.Zxid, replied(rep))
		c.w.resume(cl.co, c)
	case zkmodel.MsgEvent:
		c.wire.Replied(engine.NotificationXid, -1, 0)
		c.watches.Fired(msg.Event)
		c.w.tracef("%s event %v %s", c.name, msg.Event.Type, msg.Event.Path)
		c.notify(zk.Event{Type: eventType(msg.Event.Type), Path: msg.Event.Path})
	case zkmodel.MsgPing:
		c.wire.Replied(engine.PingXid, msg.Reply.Zxid, 0)
		c.pings = c.pings[1:]
	case zkmodel.MsgClosed:
		c.w.tracef("%s: the server closed the connection", c.name)
		c.lose()
	}
}

// queuedKey names one lock path's queue as one session sees it.
type queuedKey struct {
	session  zkmodel.SessionID
	lockPath string
}

// queuedNode is a lock node made: the xid of the request that made it and
// the zxid the server made it at. Zxids, not sequence numbers, give the
// server's order: a lock path reaped as an empty container and made again
// numbers its children from 0 again.
type queuedNode struct {
	xid, zxid int64
	name      string
}

// queuedInOrder holds the engine to FIFO within itself: the lock nodes it
// makes on one path, in one session, are numbered in the order it asked
// for them (the order of their requests' xids), since that order is the
// order its callers queue in. The server makes them in the order the
// requests reach it, which is the order they were sent only when no two
// were in flight at once (submit lets a later one overtake); nodes of one
// multi are numbered in the multi's order.
func (c *client) queuedInOrder(rep zkmodel.Reply) {
	made := []string{rep.Path}
	if rep.Op == zkmodel.OpMulti {
		made = made[:0]
		for _, r := range rep.Results {
			made = append(made, r.Path)
		}
	}
	for _, p := range made {
		if _, ok := queue.Parse(path.Base(p)); p == "" || !ok {
			continue
		}
		key := queuedKey{c.session, path.Dir(p)}
		node := queuedNode{rep.Xid, rep.Zxid, path.Base(p)}
		if last, seen := c.queued[key]; seen && last.xid != rep.Xid && (last.xid < rep.Xid) != (last.zxid < rep.Zxid) {
			first, then := last, node
			if then.xid < first.xid {
				first, then = then, first
			}
			c.w.fail("fifo: %s asked for %s (#%d) after %s (#%d), but the server made it first: two creates on %s were in flight at once",
				c.name, then.name, then.xid, first.name, first.xid, key.lockPath)
		}
		if c.queued == nil {
			c.queued = make(map[queuedKey]queuedNode)
		}
		c.queued[key] = node
	}
}

func eventType(t zkmodel.EventType) zk.EventType {
	switch t {
	case zkmodel.EventNodeCreated:
		return zk.EventNodeCreated
	case zkmodel.EventNodeDeleted:
		return zk.EventNodeDeleted
	case zkmodel.EventNodeDataChanged:
		return zk.EventNodeDataChanged
	}
	return zk.EventNodeChildrenChanged
}

// lose is the connection failing: every request in flight or unsent fails
// with ErrConnectionClosed (go-zookeeper flushes them so), and the engine
// hears it is disconnected.
func (c *client) lose() {
	if !c.up {
		return
	}
	if err := c.w.model.Disconnect(c.w.at(), c.session); err != nil {
		panic(err)
	}
	c.up = false
	c.pings = nil
	c.wire = nil
	c.eng.Post(input.SessionChanged{State: input.Disconnected})
	c.failAll(zk.ErrConnectionClosed)
}

func (c *client) failAll(err error) {
	calls := c.unsent
	c.unsent = nil
	for _, xid := range sortedKeys(c.waiting) {
		calls = append(calls, c.waiting[xid])
	}
	clear(c.waiting)
	for _, cl := range calls {
		cl.err = err
		c.w.tracef("%s #%d fails: %v", c.name, cl.xid, err)
		c.w.resume(cl.co, c)
	}
}

// connect is the client's handshake: the same session again, or, when the
// server says it expired, a new one.
func (c *client) connect() {
	w := c.w
	member, ok := c.pick()
	if !ok {
		w.tracef("%s: no server of its list reachable", c.name)
		c.partitionedUntil = w.clock.now + time.Second
		return
	}
	c.wire = c.eng.NewSimWire()
	c.wire.Greet()
	if c.session != 0 {
		_, err := w.model.ReconnectTo(w.at(), member, c.session, c.watches.SetWatches())
		if c.unanswered(member, err) {
			return
		}
		if err == nil {
			c.welcome(member)
			w.tracef("%s reconnects to session %d%s", c.name, c.session, w.ens.on(member))
			c.eng.Post(input.SessionChanged{State: input.Connected, SessionID: int64(c.session)})
			return
		}
		w.tracef("%s: session %d expired", c.name, c.session)
		c.wire.Welcome(0, 0)
		c.eng.Post(input.SessionChanged{State: input.Expired})
		c.watches.Expired()
		c.dropChildWatches()
		c.failAll(zk.ErrSessionExpired)
		c.wire = c.eng.NewSimWire()
		c.wire.Greet()
	}
	session, timeout, err := w.model.ConnectTo(w.at(), member, w.cfg.SessionTimeout)
	if c.unanswered(member, err) {
		return
	}
	c.session, c.timeout = session, timeout
	c.welcome(member)
	w.tracef("%s connects: session %d%s", c.name, c.session, w.ens.on(member))
	c.eng.Post(input.SessionChanged{State: input.Connected, SessionID: int64(c.session)})
}

// welcome is the handshake answered by member: the engine reads it, and
// then its role probe's answer, the member's srvr (at once: the
// simulator does not delay the probe).
func (c *client) welcome(member zkmodel.MemberID) {
	c.up, c.member, c.connectedAt = true, member, c.w.clock.now
	c.wire.Welcome(int64(c.session), c.timeout)
	c.wire.Probed("Mode: " + c.w.model.Role(member) + "\n")
	c.w.ens.keep(c)
	c.w.ens.welcomed(c)
}

// ping is the client's heartbeat, sent every third of the timeout.
func (c *client) ping() {
	if c.up && !c.exited {
		c.sendPing()
	}
	if !c.exited {
		c.w.clock.afterFunc(c.timeout/3, c.ping)
	}
}

func (c *client) sendPing() {
	if err := c.w.model.Ping(c.w.at(), c.session); err == nil {
		c.wire.Sent(engine.PingXid)
		c.pings = append(c.pings, c.w.clock.now)
	}
}

// sendSync is the keeper's sync through a server not known to be the
// leader (engine.SyncXid): the model answers it as the server would,
// once every earlier write is applied, and holds it on a follower cut
// from its leader. Its reply is for none of the client's requests.
func (c *client) sendSync() {
	c.wire.Sent(engine.SyncXid)
	if err := c.w.model.Submit(c.w.at(), c.session, zkmodel.Request{Op: zkmodel.OpSync, Path: "/", Xid: engine.SyncXid}); err != nil &&
		!errors.Is(err, zkmodel.ErrNotConnected) {
		panic(fmt.Sprintf("sim: sync on %s: %v", c.name, err))
	}
}

// closeConn is the engine closing its session, at shutdown.
func (c *client) closeConn() {
	c.exited = true
	if c.up {
		_ = c.w.model.Close(c.w.at(), c.session, 0)
	}
	c.up, c.wire, c.dialing = false, nil, false
	c.failAll(zk.ErrClosing)
	c.dropChildWatches()
	c.w.tracef("%s closed", c.name)
}

func (c *client) afterDone(ctx context.Context, f func()) func() bool {
	a := &afterDone{ctx: ctx, f: f}
	c.cancels = append(c.cancels, a)
	return func() bool {
		was := !a.stopped
		a.stopped = true
		return was
	}
}

// contextsDone runs the AfterFunc of every context that ended, as the
// context package would on a goroutine of its own.
func (c *client) contextsDone() {
	live := c.cancels[:0]
	var run []func()
	for _, a := range c.cancels {
		switch {
		case a.stopped:
		case a.ctx.Err() != nil:
			a.stopped = true
			run = append(run, a.f)
		default:
			live = append(live, a)
		}
	}
	clear(c.cancels[len(live):])
	c.cancels = live
	for _, f := range run {
		f()
	}
}

// stopCoroutines ends every coroutine still suspended: the run is over.
func (c *client) stopCoroutines() {
	for co := range c.coros {
		c.w.running = co
		co.stop()
		c.w.running = nil
	}
	clear(c.coros)
	c.parked = nil
}

// replied is what a reply names, for the trace.
func replied(rep zkmodel.Reply) string {
	var names []string
	if rep.Path != "" {
		names = append(names, rep.Path)
	}
	for _, r := range rep.Results {
		if r.Path != "" {
			names = append(names, r.Path)
		}
	}
	if rep.Op == zkmodel.OpGetChildren {
		names = append(names, fmt.Sprint(rep.Children))
	}
	return strings.Join(names, " ")
}
