package zkmodel_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/zkmodel"
	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// world is one side of the differential test: the model, or a real server
// through go-zookeeper. Both are driven through the same steps, one at a
// time, and record what each session saw in a transcript.
type world interface {
	// connect opens the next session (its index is the number opened
	// before) asking for timeout.
	connect(timeout time.Duration)
	// do sends req on session k and waits for its reply.
	do(k int, req zkmodel.Request) zkmodel.Reply
	// send sends req on session k and waits for its reply, which it does
	// not record.
	send(k int, req zkmodel.Request)
	// close closes session k; what it receives from then on is not recorded.
	close(k int)
	// disconnect cuts session k's connection and keeps it from connecting
	// again until reconnect.
	disconnect(k int)
	// reconnect lets session k connect again; it sends the watches it holds.
	reconnect(k int)
	// expire keeps session k cut off until the server expired it.
	expire(k int)
	// reap lets the container manager delete the container at p.
	reap(p string)
	// settle waits until every connected session has received everything
	// the server sent it so far.
	settle()
	transcript() *transcript
	shutdown()
}

// modelConfig mirrors realZK's configuration (zkserver's defaults).
var modelConfig = zkmodel.Config{
	TickTime:          250 * time.Millisecond,
	MinSessionTimeout: 500 * time.Millisecond,
	MaxSessionTimeout: 60 * time.Second,
}

// modelWorld drives a Model as a simulator would, playing go-zookeeper's
// part with ClientWatches. Its clock moves a millisecond per call, so no
// session expires unless a step makes it.
type modelWorld struct {
	t       testing.TB
	m       *zkmodel.Model
	now     time.Time
	xid     int64
	ids     []zkmodel.SessionID
	clients []*zkmodel.ClientWatches
	gone    []bool
	owners  owners
	tr      transcript
}

func newModelWorld(t testing.TB, cfg zkmodel.Config) *modelWorld {
	return &modelWorld{t: t, m: zkmodel.New(cfg, epoch), now: epoch, owners: owners{}}
}

func (w *modelWorld) tick() time.Time {
	w.now = w.now.Add(time.Millisecond)
	return w.now
}

func (w *modelWorld) connect(timeout time.Duration) {
	id, negotiated := w.m.Connect(w.tick(), timeout)
	k := len(w.ids)
	w.ids = append(w.ids, id)
	w.clients = append(w.clients, &zkmodel.ClientWatches{})
	w.gone = append(w.gone, false)
	w.owners[int64(id)] = k
	w.tr.addConnected(k, negotiated.Milliseconds())
}

func (w *modelWorld) do(k int, req zkmodel.Request) zkmodel.Reply {
	w.t.Helper()
	w.xid++
	req.Xid = w.xid
	if err := w.m.Submit(w.tick(), w.ids[k], req); err != nil {
		w.t.Fatalf("model: s%d %v %s: %v", k, req.Op, req.Path, err)
	}
	for {
		msg, ok := w.m.Next(w.ids[k])
		switch {
		case !ok:
			w.t.Fatalf("model: s%d %v %s: no reply", k, req.Op, req.Path)
		case msg.Kind == zkmodel.MsgEvent:
			w.event(k, msg.Event)
		case msg.Kind == zkmodel.MsgReply && msg.Reply.Xid == req.Xid:
			w.clients[k].Replied(req, msg.Reply)
			w.tr.addReply(k, w.owners, req, msg.Reply)
			return msg.Reply
		default:
			w.t.Fatalf("model: s%d: unexpected %+v", k, msg)
		}
	}
}

func (w *modelWorld) send(k int, req zkmodel.Request) {
	w.xid++
	req.Xid = w.xid
	if err := w.m.Submit(w.tick(), w.ids[k], req); err != nil {
		w.t.Fatalf("model: s%d %v %s: %v", k, req.Op, req.Path, err)
	}
	w.drain(k, req)
}

func (w *modelWorld) event(k int, ev zkmodel.Event) {
	w.clients[k].Fired(ev)
	w.tr.addEvent(k, ev)
}

// drain takes what is queued for session k and records its events; a
// reply can only be that of unread, which it does not record.
func (w *modelWorld) drain(k int, unread zkmodel.Request) {
	for {
		msg, ok := w.m.Next(w.ids[k])
		switch {
		case !ok:
			return
		case msg.Kind == zkmodel.MsgEvent:
			w.event(k, msg.Event)
		case msg.Kind == zkmodel.MsgReply && unread.Xid != 0 && msg.Reply.Xid == unread.Xid:
			w.clients[k].Replied(unread, msg.Reply)
		default:
			w.t.Fatalf("model: s%d: unexpected %+v", k, msg)
		}
	}
}

func (w *modelWorld) close(k int) {
	w.xid++
	if err := w.m.Close(w.tick(), w.ids[k], w.xid); err != nil {
		w.t.Fatalf("model: close s%d: %v", k, err)
	}
	for _, ok := w.m.Next(w.ids[k]); ok; _, ok = w.m.Next(w.ids[k]) {
	}
	w.gone[k] = true
}

func (w *modelWorld) disconnect(k int) {
	if err := w.m.Disconnect(w.tick(), w.ids[k]); err != nil {
		w.t.Fatalf("model: disconnect s%d: %v", k, err)
	}
}

func (w *modelWorld) reconnect(k int) {
	from := w.tr.len(k)
	if _, err := w.m.Reconnect(w.tick(), w.ids[k], w.clients[k].SetWatches()); err != nil {
		w.t.Fatalf("model: reconnect s%d: %v", k, err)
	}
	w.drain(k, zkmodel.Request{})
	w.tr.sortFrom(k, from)
}

func (w *modelWorld) expire(k int) {
	w.disconnect(k)
	info, _ := w.m.Session(w.ids[k])
	w.now = info.Deadline
	w.m.Tick(w.now)
	if info, _ := w.m.Session(w.ids[k]); info.State != zkmodel.Expired {
		w.t.Fatalf("model: s%d is %v at its deadline", k, info.State)
	}
	w.clients[k].Expired()
	w.gone[k] = true
}

func (w *modelWorld) reap(p string) {
	if code := w.m.ReapContainer(w.tick(), p); code != zkmodel.OK {
		w.t.Errorf("model refused to reap %s (%v); the server reaped it", p, code)
	}
}

// settle sends the same read on every connected session that realWorld
// sends to wait for its events, and for the same reason: so that each
// session's last zxid read, which a reconnect sends, is the same on both
// sides. The read's reply is not recorded.
func (w *modelWorld) settle() {
	for k, id := range w.ids {
		if info, _ := w.m.Session(id); w.gone[k] || info.State != zkmodel.Connected {
			continue
		}
		w.xid++
		req := zkmodel.Request{Xid: w.xid, Op: zkmodel.OpExists, Path: "/"}
		if err := w.m.Submit(w.tick(), id, req); err != nil {
			w.t.Fatalf("model: s%d: settle: %v", k, err)
		}
		for {
			msg, ok := w.m.Next(id)
			if !ok {
				w.t.Fatalf("model: s%d: settle: no reply", k)
			}
			if msg.Kind == zkmodel.MsgEvent {
				w.event(k, msg.Event)
				continue
			}
			w.clients[k].Replied(req, msg.Reply)
			break
		}
	}
}

func (w *modelWorld) transcript() *transcript { return &w.tr }
func (w *modelWorld) shutdown()               {}

// realWorld drives real ZooKeeper sessions through go-zookeeper, one
// request at a time, each session over a link the test can cut.
type realWorld struct {
	t       testing.TB
	srv     *zkserver.Server
	clients []*realClient
	owners  owners
	tr      transcript
}

type realClient struct {
	k    int
	conn *zk.Conn
	link link
	// negotiatedMs is the session timeout go-zookeeper logs when it gets a
	// session; it exposes it nowhere else.
	negotiatedMs atomic.Int64
	gone         atomic.Bool // closed or expired: nothing more is recorded

	mu sync.Mutex
	// watches predicts go-zookeeper's own watch table, to know whether a
	// reconnect will send setWatches (and so whether to wait for it).
	watches zkmodel.ClientWatches
}

// waitFor bounds every wait on the real server: generous, since the
// machine is shared and slow at times; no assertion depends on it.
const waitFor = 60 * time.Second

func newRealWorld(t testing.TB, srv *zkserver.Server) *realWorld {
	return &realWorld{t: t, srv: srv, owners: owners{}}
}

func (w *realWorld) connect(timeout time.Duration) {
	w.t.Helper()
	c := &realClient{k: len(w.clients)}
	conn, _, err := zk.Connect([]string{w.srv.Addr()}, timeout,
		zk.WithDialer(c.link.dial),
		zk.WithLogger(c),
		zk.WithEventCallback(func(ev zk.Event) { w.onEvent(c, ev) }))
	if err != nil {
		w.t.Fatalf("zk.Connect: %v", err)
	}
	c.conn = conn
	w.clients = append(w.clients, c)
	// go-zookeeper reports the session before it logs the timeout it got:
	// wait for both.
	w.waitUntil(func() string { return fmt.Sprintf("s%d %v and its timeout logged", c.k, zk.StateHasSession) },
		func() bool { return c.conn.State() == zk.StateHasSession && c.negotiatedMs.Load() != 0 })
	w.owners[conn.SessionID()] = c.k
	w.tr.addConnected(c.k, c.negotiatedMs.Load())
}

// Printf takes go-zookeeper's log lines: it keeps the negotiated timeout
// and drops the rest.
func (c *realClient) Printf(format string, args ...any) {
	if strings.HasPrefix(format, "authenticated: id=%d, timeout=%d") && len(args) == 2 {
		if ms, ok := args[1].(int32); ok {
			c.negotiatedMs.Store(int64(ms))
		}
	}
}

// onEvent runs on the client's receive goroutine, before the client hands
// out any reply read after the event.
func (w *realWorld) onEvent(c *realClient, ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
	default:
		return // session states, and EventNotWatching, which the client makes up itself
	}
	if c.gone.Load() {
		return
	}
	e := zkmodel.Event{Type: zkmodel.EventType(ev.Type), Path: ev.Path}
	c.mu.Lock()
	c.watches.Fired(e)
	c.mu.Unlock()
	w.tr.addEvent(c.k, e)
}

func (w *realWorld) waitState(c *realClient, want zk.State) {
	w.t.Helper()
	w.waitUntil(func() string { return fmt.Sprintf("s%d %v", c.k, want) }, func() bool { return c.conn.State() == want })
}

func (w *realWorld) waitUntil(what func() string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("real ZooKeeper: gave up waiting for %s after %v", what(), waitFor)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var openACL = zk.WorldACL(zk.PermAll)

func (w *realWorld) do(k int, req zkmodel.Request) zkmodel.Reply {
	w.t.Helper()
	c := w.clients[k]
	rep := zkmodel.Reply{Op: req.Op}
	var err error
	var st *zk.Stat
	switch req.Op {
	case zkmodel.OpCreate:
		rep.Path, err = c.conn.Create(req.Path, req.Data, int32(req.Mode), openACL)
	case zkmodel.OpCreateContainer:
		rep.Path, err = c.conn.CreateContainer(req.Path, req.Data, int32(req.Mode), openACL)
	case zkmodel.OpDelete:
		err = c.conn.Delete(req.Path, req.Version)
	case zkmodel.OpSetData:
		st, err = c.conn.Set(req.Path, req.Data, req.Version)
	case zkmodel.OpExists:
		var found bool
		if req.Watch {
			found, st, _, err = c.conn.ExistsW(req.Path)
		} else {
			found, st, err = c.conn.Exists(req.Path)
		}
		if err == nil && !found {
			err = zk.ErrNoNode
		}
	case zkmodel.OpGetData:
		if req.Watch {
			rep.Data, st, _, err = c.conn.GetW(req.Path)
		} else {
			rep.Data, st, err = c.conn.Get(req.Path)
		}
	case zkmodel.OpGetChildren:
		if req.Watch {
			rep.Children, st, _, err = c.conn.ChildrenW(req.Path)
		} else {
			rep.Children, st, err = c.conn.Children(req.Path)
		}
		slices.Sort(rep.Children)
	case zkmodel.OpSync:
		rep.Path, err = c.conn.Sync(req.Path)
	case zkmodel.OpMulti:
		rep.Results, err = w.multi(c, req.Ops)
	default:
		w.t.Fatalf("real ZooKeeper: no client call for %v", req.Op)
	}
	rep.Err = w.code(req, err)
	if st != nil && rep.Err == zkmodel.OK {
		rep.Stat = statOf(st)
	}
	rep.Zxid = c.link.lastZxid.Load()
	c.mu.Lock()
	c.watches.Replied(req, rep)
	c.mu.Unlock()
	w.tr.addReply(k, w.owners, req, rep)
	return rep
}

func (w *realWorld) send(k int, req zkmodel.Request) {
	c := w.clients[k]
	switch req.Op {
	case zkmodel.OpMulti:
		_, err := w.multi(c, req.Ops)
		if errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) {
			w.t.Fatalf("real ZooKeeper: s%d: %v", k, err)
		}
	default:
		w.t.Fatalf("real ZooKeeper: send is for multis only")
	}
}

func (w *realWorld) multi(c *realClient, ops []zkmodel.Request) ([]zkmodel.OpResult, error) {
	reqs := make([]any, len(ops))
	for i, op := range ops {
		switch op.Op {
		case zkmodel.OpCreate:
			reqs[i] = &zk.CreateRequest{Path: op.Path, Data: op.Data, Acl: openACL, Flags: int32(op.Mode)}
		case zkmodel.OpDelete:
			reqs[i] = &zk.DeleteRequest{Path: op.Path, Version: op.Version}
		case zkmodel.OpSetData:
			reqs[i] = &zk.SetDataRequest{Path: op.Path, Data: op.Data, Version: op.Version}
		case zkmodel.OpCheck:
			reqs[i] = &zk.CheckVersionRequest{Path: op.Path, Version: op.Version}
		default:
			w.t.Fatalf("real ZooKeeper: go-zookeeper cannot put %v in a multi", op.Op)
		}
	}
	res, err := c.conn.Multi(reqs...)
	results := make([]zkmodel.OpResult, len(res))
	for i, r := range res {
		results[i] = zkmodel.OpResult{Op: ops[i].Op, Err: w.code(ops[i], r.Error), Path: r.String}
		if r.Stat != nil {
			results[i].Stat = statOf(r.Stat)
		}
	}
	return results, err
}

// code maps go-zookeeper's errors back to the server's codes. Codes the
// client has no error for come as "unknown error: N".
func (w *realWorld) code(req zkmodel.Request, err error) zkmodel.Code {
	w.t.Helper()
	for _, c := range []struct {
		err  error
		code zkmodel.Code
	}{
		{nil, zkmodel.OK},
		{zk.ErrNoNode, zkmodel.NoNode},
		{zk.ErrNodeExists, zkmodel.NodeExists},
		{zk.ErrNotEmpty, zkmodel.NotEmpty},
		{zk.ErrBadVersion, zkmodel.BadVersion},
		{zk.ErrNoChildrenForEphemerals, zkmodel.NoChildrenForEphemerals},
		{zk.ErrBadArguments, zkmodel.BadArguments},
		{zk.ErrSessionExpired, zkmodel.SessionExpired},
	} {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	var n int32
	if _, scanErr := fmt.Sscanf(err.Error(), "unknown error: %d", &n); scanErr == nil {
		return zkmodel.Code(n)
	}
	w.t.Fatalf("real ZooKeeper: %v %s: %v", req.Op, req.Path, err)
	return 0
}

func statOf(st *zk.Stat) zkmodel.Stat {
	return zkmodel.Stat{
		Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid,
		Version: st.Version, Cversion: st.Cversion,
		EphemeralOwner: st.EphemeralOwner,
		DataLength:     st.DataLength, NumChildren: st.NumChildren,
	}
}

// close closes session k and waits until the server has forgotten it (the
// client waits at most a second for the close's reply).
func (w *realWorld) close(k int) {
	c := w.clients[k]
	c.gone.Store(true)
	id := c.conn.SessionID()
	c.conn.Close()
	w.waitSessionGone(k, id)
}

func (w *realWorld) disconnect(k int) {
	c := w.clients[k]
	c.link.cut()
	w.waitUntil(func() string { return fmt.Sprintf("s%d to notice its cut", k) }, func() bool { return c.conn.State() != zk.StateHasSession })
}

// reconnect heals session k's link and waits for the session, then for
// the reply to the setWatches go-zookeeper sends when it holds watches:
// the events it answers with come before that reply.
func (w *realWorld) reconnect(k int) {
	c := w.clients[k]
	from := w.tr.len(k)
	c.mu.Lock()
	w0 := c.watches.SetWatches()
	c.mu.Unlock()
	sent := c.link.setWatches.Load()
	c.link.heal()
	w.waitState(c, zk.StateHasSession)
	if len(w0.Data)+len(w0.Exist)+len(w0.Child) > 0 {
		w.waitUntil(func() string { return fmt.Sprintf("s%d's setWatches reply", k) }, func() bool { return c.link.setWatches.Load() > sent })
	}
	w.tr.sortFrom(k, from)
}

// expire cuts session k off until the server no longer lists it, then
// closes the client before it could learn of the expiry and start another
// session (which the model would not see).
func (w *realWorld) expire(k int) {
	c := w.clients[k]
	id := c.conn.SessionID()
	w.disconnect(k)
	w.waitSessionGone(k, id)
	c.gone.Store(true)
	c.conn.Close()
}

// waitSessionGone polls the server's session dump (four-letter word
// "dump") until session id is not in it.
func (w *realWorld) waitSessionGone(k int, id int64) {
	hex := fmt.Sprintf("0x%x", uint64(id))
	var lastErr error
	what := func() string { return fmt.Sprintf("the server to drop s%d (%s; last dump error: %v)", k, hex, lastErr) }
	w.waitUntil(what, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, err := w.srv.FourLetterWord(ctx, "dump")
		lastErr = err
		return err == nil && strings.Contains(out, "SessionTracker dump") && !strings.Contains(out, hex)
	})
}

// reap waits until the server's container manager has deleted p.
func (w *realWorld) reap(p string) {
	c := w.anyLive()
	w.waitUntil(func() string { return "the container manager to reap " + p }, func() bool {
		found, _, err := c.conn.Exists(p)
		return err == nil && !found
	})
}

func (w *realWorld) anyLive() *realClient {
	for _, c := range w.clients {
		if !c.gone.Load() && c.conn.State() == zk.StateHasSession {
			return c
		}
	}
	w.t.Fatalf("real ZooKeeper: no live session")
	return nil
}

// settle sends a read on every connected session and waits for its reply:
// the server sends a session's events before any later reply, and the
// client hands them to the callback before it hands out that reply.
func (w *realWorld) settle() {
	for _, c := range w.clients {
		if c.gone.Load() || c.link.isCut() {
			continue
		}
		if _, _, err := c.conn.Exists("/"); err != nil {
			w.t.Fatalf("real ZooKeeper: s%d: settle: %v", c.k, err)
		}
	}
}

func (w *realWorld) transcript() *transcript { return &w.tr }

func (w *realWorld) shutdown() {
	for _, c := range w.clients {
		c.gone.Store(true)
		c.conn.Close()
	}
}

// link is a client's connection to the server, which the test can cut and
// heal. It also reads the frames going both ways, for what go-zookeeper
// does not expose: the zxid in the header of the last reply to a request,
// and whether the setWatches it sends on a reconnect was answered.
type link struct {
	mu   sync.Mutex
	down bool     // cut: dials fail
	conn net.Conn // the current connection
	// setWatchesXids are the xids of setWatches requests sent and not yet
	// answered. go-zookeeper gives them ordinary xids (the Java client
	// uses -8).
	setWatchesXids map[int32]bool

	lastZxid   atomic.Int64
	setWatches atomic.Int64 // setWatches replies read
}

var errCut = errors.New("link cut by the test")

func (l *link) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return nil, errCut
	}
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	l.conn = &tappedConn{Conn: c, link: l}
	return l.conn, nil
}

func (l *link) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	if l.conn != nil {
		l.conn.Close()
	}
}

func (l *link) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = false
}

func (l *link) isCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down
}

func (l *link) sent(xid, opcode int32) {
	if opcode != opSetWatches {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.setWatchesXids == nil {
		l.setWatchesXids = make(map[int32]bool)
	}
	l.setWatchesXids[xid] = true
}

func (l *link) received(xid int32, zxid int64) {
	if xid <= 0 {
		return // -1 a watch event, -2 a ping reply
	}
	l.mu.Lock()
	setWatches := l.setWatchesXids[xid]
	delete(l.setWatchesXids, xid)
	l.mu.Unlock()
	if setWatches {
		l.setWatches.Add(1)
		return
	}
	l.lastZxid.Store(zxid)
}

// opSetWatches is the setWatches request's opcode.
const opSetWatches = 101

// tappedConn splits both directions into ZooKeeper's length-prefixed
// frames. The first frame each way is the handshake, without the usual
// header; after it a request starts with xid and opcode (int32 each), a
// reply with xid (int32), zxid (int64) and err (int32).
type tappedConn struct {
	net.Conn
	link    *link
	in, out frames
}

func (c *tappedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.feed(p[:n], func(h []byte) {
		if len(h) >= 12 {
			c.link.received(int32(binary.BigEndian.Uint32(h)), int64(binary.BigEndian.Uint64(h[4:])))
		}
	})
	return n, err
}

func (c *tappedConn) Write(p []byte) (int, error) {
	c.out.feed(p, func(h []byte) {
		if len(h) >= 8 {
			c.link.sent(int32(binary.BigEndian.Uint32(h)), int32(binary.BigEndian.Uint32(h[4:])))
		}
	})
	return c.Conn.Write(p)
}

// frames reassembles one direction's frames and hands each but the first
// (the handshake) to a function. Reads and writes each happen on one
// goroutine of the client at a time.
type frames struct {
	buf       []byte
	handshake bool // the handshake frame has gone by
}

func (f *frames) feed(p []byte, frame func([]byte)) {
	f.buf = append(f.buf, p...)
	for len(f.buf) >= 4 {
		size := int(binary.BigEndian.Uint32(f.buf))
		if len(f.buf) < 4+size {
			return
		}
		if f.handshake {
			frame(f.buf[4 : 4+size])
		}
		f.handshake = true
		f.buf = append(f.buf[:0], f.buf[4+size:]...)
	}
}
