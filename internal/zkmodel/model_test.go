package zkmodel_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/internal/zkmodel"
)

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture is a model with a one-second tick (session timeouts 2s to 20s)
// and a clock the test moves by hand.
type fixture struct {
	t   *testing.T
	m   *zkmodel.Model
	now time.Time
	xid int64
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, m: zkmodel.New(zkmodel.Config{TickTime: time.Second}, epoch), now: epoch}
}

func (f *fixture) connect(timeout time.Duration) zkmodel.SessionID {
	id, _ := f.m.Connect(f.now, timeout)
	return id
}

// do submits req on id and takes everything queued on id: the events that
// came before the reply, and the reply, which must come last.
func (f *fixture) do(id zkmodel.SessionID, req zkmodel.Request) (zkmodel.Reply, []zkmodel.Event) {
	f.t.Helper()
	f.xid++
	req.Xid = f.xid
	if err := f.m.Submit(f.now, id, req); err != nil {
		f.t.Fatalf("Submit(%v %s): %v", req.Op, req.Path, err)
	}
	msgs := drain(f.m, id)
	last := msgs[len(msgs)-1]
	if last.Kind != zkmodel.MsgReply || last.Reply.Xid != f.xid {
		f.t.Fatalf("%v %s: last message %+v, want its reply", req.Op, req.Path, last)
	}
	return last.Reply, events(f.t, msgs[:len(msgs)-1])
}

// ok is do for a request that must succeed.
func (f *fixture) ok(id zkmodel.SessionID, req zkmodel.Request) zkmodel.Reply {
	f.t.Helper()
	rep, _ := f.do(id, req)
	if rep.Err != zkmodel.OK {
		f.t.Fatalf("%v %s: %v", req.Op, req.Path, rep.Err)
	}
	return rep
}

func (f *fixture) stat(p string) zkmodel.Stat {
	f.t.Helper()
	st, _, ok := f.m.Node(p)
	if !ok {
		f.t.Fatalf("no node %s", p)
	}
	return st
}

func drain(m *zkmodel.Model, id zkmodel.SessionID) []zkmodel.Message {
	var out []zkmodel.Message
	for {
		msg, ok := m.Next(id)
		if !ok {
			return out
		}
		out = append(out, msg)
	}
}

func events(t *testing.T, msgs []zkmodel.Message) []zkmodel.Event {
	t.Helper()
	var out []zkmodel.Event
	for _, msg := range msgs {
		if msg.Kind != zkmodel.MsgEvent {
			t.Fatalf("message %+v, want an event", msg)
		}
		out = append(out, msg.Event)
	}
	return out
}

func create(p string, mode zkmodel.Mode) zkmodel.Request {
	return zkmodel.Request{Op: zkmodel.OpCreate, Path: p, Mode: mode}
}

func ev(typ zkmodel.EventType, p string) zkmodel.Event { return zkmodel.Event{Type: typ, Path: p} }

func TestSequentialNamesComeFromTheParentsCversion(t *testing.T) {
	f := newFixture(t)
	s := f.connect(10 * time.Second)
	f.ok(s, create("/q", zkmodel.Persistent))
	var names []string
	for range 3 {
		names = append(names, f.ok(s, create("/q/n-", zkmodel.EphemeralSequential)).Path)
	}
	f.ok(s, zkmodel.Request{Op: zkmodel.OpDelete, Path: names[2], Version: -1})
	before := f.stat("/q")
	deleted := f.m.Zxid()
	// A delete leaves cversion alone, so the next name does not reuse 2.
	names = append(names, f.ok(s, create("/q/n-", zkmodel.PersistentSequential)).Path)
	want := []string{"/q/n-0000000000", "/q/n-0000000001", "/q/n-0000000002", "/q/n-0000000003"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	// Clients see changes (3 creates, 1 delete), the names count creates.
	if before.Cversion != 4 || before.Pzxid != deleted || before.NumChildren != 2 {
		t.Fatalf("after the delete: %+v, want cversion 4, pzxid %d (the delete's), 2 children", before, deleted)
	}
	after := f.stat("/q")
	if after.Cversion != 5 || after.Pzxid != f.m.Zxid() || after.NumChildren != 3 || f.m.StoredCversion("/q") != 4 {
		t.Fatalf("after the create: %+v (stored %d), want cversion 5 (stored 4), pzxid %d, 3 children",
			after, f.m.StoredCversion("/q"), f.m.Zxid())
	}
	if got := f.stat(names[0]).EphemeralOwner; got != int64(s) {
		t.Fatalf("ephemeralOwner %d, want the session %d", got, s)
	}
}

func TestSequenceSuffixFormatsLikeJava(t *testing.T) {
	for cv, want := range map[int32]string{
		0: "0000000000", 42: "0000000042", math.MaxInt32: "2147483647",
		-1: "-000000001", math.MinInt32: "-2147483648",
	} {
		if got := zkmodel.SequenceSuffix(cv); got != want {
			t.Errorf("suffix(%d) = %q, want %q (Java's %%010d)", cv, got, want)
		}
	}
}

// At math.MaxInt32 the tree's stored cversion stops (DataTree raises it only to a
// greater value), so single creates repeat the last name, while within one
// multi the server's prepared view wraps and names a node "-2147483648".
func TestCversionOverflow(t *testing.T) {
	f := newFixture(t)
	s := f.connect(10 * time.Second)
	f.ok(s, create("/q", zkmodel.Persistent))
	f.m.SetCversion("/q", math.MaxInt32-1)
	if got := f.ok(s, create("/q/n-", zkmodel.PersistentSequential)).Path; got != "/q/n-2147483646" {
		t.Fatalf("name %q", got)
	}
	if got := f.ok(s, create("/q/n-", zkmodel.PersistentSequential)).Path; got != "/q/n-2147483647" {
		t.Fatalf("name %q", got)
	}
	if stored := f.m.StoredCversion("/q"); stored != math.MaxInt32 {
		t.Fatalf("stored cversion %d", stored)
	}
	// Reported as 2×MaxInt32 − 2 children, in int32: -4.
	if got := f.stat("/q").Cversion; got != -4 {
		t.Fatalf("reported cversion %d, want -4", got)
	}
	rep, _ := f.do(s, create("/q/n-", zkmodel.PersistentSequential))
	if rep.Err != zkmodel.NodeExists {
		t.Fatalf("third create: %v, want NodeExists (the name repeats)", rep.Err)
	}
	f.ok(s, zkmodel.Request{Op: zkmodel.OpDelete, Path: "/q/n-2147483647", Version: -1})
	pzxid := f.stat("/q").Pzxid
	rep = f.ok(s, zkmodel.Request{Op: zkmodel.OpMulti, Ops: []zkmodel.Request{
		create("/q/n-", zkmodel.PersistentSequential),
		create("/q/n-", zkmodel.PersistentSequential),
	}})
	if rep.Results[0].Path != "/q/n-2147483647" || rep.Results[1].Path != "/q/n--2147483648" {
		t.Fatalf("multi names %q, %q", rep.Results[0].Path, rep.Results[1].Path)
	}
	if st := f.stat("/q"); f.m.StoredCversion("/q") != math.MaxInt32 || st.Pzxid != pzxid || st.NumChildren != 3 {
		t.Fatalf("after the multi: %+v (stored cversion %d), want it stuck, pzxid %d unchanged, 3 children",
			st, f.m.StoredCversion("/q"), pzxid)
	}
}

func TestCreateModesAndErrors(t *testing.T) {
	f := newFixture(t)
	s := f.connect(10 * time.Second)
	f.ok(s, create("/p", zkmodel.Persistent))
	f.ok(s, create("/p/e", zkmodel.Ephemeral))
	f.ok(s, zkmodel.Request{Op: zkmodel.OpCreateContainer, Path: "/c", Mode: zkmodel.Container})
	f.ok(s, create("/plain", zkmodel.Container))
	for _, tc := range []struct {
		req  zkmodel.Request
		want zkmodel.Code
	}{
		{create("/p", zkmodel.Persistent), zkmodel.NodeExists},
		{create("/missing/x", zkmodel.Persistent), zkmodel.NoNode},
		{create("/p/e/x", zkmodel.Persistent), zkmodel.NoChildrenForEphemerals},
		{create("/p/e/x", zkmodel.PersistentSequential), zkmodel.NoChildrenForEphemerals},
		{create("/p/", zkmodel.Persistent), zkmodel.BadArguments},
		{create("/missing/", zkmodel.Persistent), zkmodel.NoNode}, // the parent is looked at first
		{create("relative", zkmodel.Persistent), zkmodel.BadArguments},
		{create("/p/..", zkmodel.Persistent), zkmodel.BadArguments},
		{create("/ttl", zkmodel.Mode(5)), zkmodel.Unimplemented},
		{create("/bad", zkmodel.Mode(9)), zkmodel.BadArguments},
		{zkmodel.Request{Op: zkmodel.OpDelete, Path: "/p", Version: -1}, zkmodel.NotEmpty},
		{zkmodel.Request{Op: zkmodel.OpDelete, Path: "/p/e", Version: 3}, zkmodel.BadVersion},
		{zkmodel.Request{Op: zkmodel.OpDelete, Path: "/nope", Version: -1}, zkmodel.NoNode},
		{zkmodel.Request{Op: zkmodel.OpDelete, Path: "/", Version: -1}, zkmodel.BadArguments},
		{zkmodel.Request{Op: zkmodel.OpDelete, Path: "/zookeeper", Version: -1}, zkmodel.BadArguments},
		{zkmodel.Request{Op: zkmodel.OpSetData, Path: "/p", Version: 1}, zkmodel.BadVersion},
		{zkmodel.Request{Op: zkmodel.OpSetData, Path: "/nope", Version: -1}, zkmodel.NoNode},
		{zkmodel.Request{Op: zkmodel.OpGetData, Path: "/nope"}, zkmodel.NoNode},
	} {
		before := f.m.Zxid()
		rep, _ := f.do(s, tc.req)
		if rep.Err != tc.want {
			t.Errorf("%v %s: %v, want %v", tc.req.Op, tc.req.Path, rep.Err, tc.want)
		}
		// A refused write still takes a zxid; a read takes none.
		wantZxid := before
		if tc.req.Op != zkmodel.OpGetData {
			wantZxid++
		}
		if rep.Zxid != wantZxid {
			t.Errorf("%v %s: reply zxid %d, want %d", tc.req.Op, tc.req.Path, rep.Zxid, wantZxid)
		}
	}
	if got := f.stat("/c").EphemeralOwner; got != 0 || !f.m.IsContainer("/c") {
		t.Errorf("createContainer: reported owner %d, container %v; want 0, a container", got, f.m.IsContainer("/c"))
	}
	if f.m.IsContainer("/plain") {
		t.Errorf("create with the container mode made a container, want a persistent node")
	}
}

func TestSessionTimeoutIsNegotiated(t *testing.T) {
	f := newFixture(t)
	for requested, want := range map[time.Duration]time.Duration{
		time.Millisecond:        2 * time.Second,  // 2 × tick
		5 * time.Second:         5 * time.Second,  //
		time.Hour:               20 * time.Second, // 20 × tick
		4500 * time.Microsecond: 2 * time.Second,
	} {
		if _, got := f.m.Connect(f.now, requested); got != want {
			t.Errorf("asked %v, negotiated %v, want %v", requested, got, want)
		}
	}
}

// A session expires when the server has not heard from it for its timeout,
// rounded up to the next tick boundary; its ephemerals go with one zxid and
// fire watches, and a connection it still has is closed.
func TestExpiry(t *testing.T) {
	f := newFixture(t)
	f.now = epoch.Add(300 * time.Millisecond)
	victim := f.connect(2 * time.Second)
	watcher := f.connect(20 * time.Second)
	f.ok(victim, create("/a", zkmodel.Ephemeral))
	f.ok(victim, create("/b", zkmodel.Ephemeral))
	f.ok(watcher, zkmodel.Request{Op: zkmodel.OpExists, Path: "/a", Watch: true})
	f.ok(watcher, zkmodel.Request{Op: zkmodel.OpGetChildren, Path: "/", Watch: true})
	// Last heard at 0.3s + 2s timeout = 2.3s, in the bucket that ends at 3s.
	if info, _ := f.m.Session(victim); !info.Deadline.Equal(epoch.Add(3 * time.Second)) {
		t.Fatalf("deadline %v, want epoch+3s", info.Deadline.Sub(epoch))
	}
	if next, _ := f.m.NextExpiry(); !next.Equal(epoch.Add(3 * time.Second)) {
		t.Fatalf("next expiry %v, want epoch+3s", next.Sub(epoch))
	}
	f.m.Tick(epoch.Add(2999 * time.Millisecond))
	if info, _ := f.m.Session(victim); info.State != zkmodel.Connected {
		t.Fatalf("before the deadline: %v", info.State)
	}
	// The watcher keeps talking; the victim says nothing more.
	f.now = epoch.Add(2 * time.Second)
	f.ok(watcher, zkmodel.Request{Op: zkmodel.OpSync, Path: "/"})
	before := f.m.Zxid()
	f.m.Tick(epoch.Add(3 * time.Second))
	if info, _ := f.m.Session(victim); info.State != zkmodel.Expired {
		t.Fatalf("at the deadline: %v", info.State)
	}
	if f.m.Zxid() != before+1 {
		t.Fatalf("zxid %d, want %d: one closeSession transaction", f.m.Zxid(), before+1)
	}
	if _, _, ok := f.m.Node("/a"); ok {
		t.Fatalf("/a survived its session")
	}
	if got := f.m.Ephemerals(victim); len(got) != 0 {
		t.Fatalf("ephemerals left: %q", got)
	}
	if st := f.stat("/"); st.Pzxid != before+1 {
		t.Fatalf("root pzxid %d, want the close's %d", st.Pzxid, before+1)
	}
	got := events(t, drain(f.m, watcher))
	want := []zkmodel.Event{ev(zkmodel.EventNodeDeleted, "/a"), ev(zkmodel.EventNodeChildrenChanged, "/")}
	if !slices.Equal(got, want) {
		t.Fatalf("watcher saw %v, want %v", got, want)
	}
	if msgs := drain(f.m, victim); len(msgs) != 1 || msgs[0].Kind != zkmodel.MsgClosed {
		t.Fatalf("victim's connection got %+v, want only its close", msgs)
	}
	err := f.m.Submit(f.now, victim, create("/c", zkmodel.Persistent))
	if !errors.Is(err, zkmodel.ErrNotConnected) || !errors.Is(err, zkmodel.ErrSessionExpired) {
		t.Fatalf("Submit after expiry: %v", err)
	}
	if _, err := f.m.Reconnect(f.now, victim, zkmodel.SetWatches{}); !errors.Is(err, zkmodel.ErrSessionExpired) {
		t.Fatalf("Reconnect after expiry: %v", err)
	}
	if info, _ := f.m.Session(watcher); info.State != zkmodel.Connected {
		t.Fatalf("the watcher, heard from in time, is %v", info.State)
	}
}

func TestPingsAndRequestsPostponeExpiry(t *testing.T) {
	f := newFixture(t)
	s := f.connect(2 * time.Second)
	for i := range 10 {
		f.now = epoch.Add(time.Duration(i+1) * 1500 * time.Millisecond)
		if i%2 == 0 {
			if err := f.m.Ping(f.now, s); err != nil {
				t.Fatalf("ping at %v: %v", f.now.Sub(epoch), err)
			}
			if msgs := drain(f.m, s); len(msgs) != 1 || msgs[0].Kind != zkmodel.MsgPing {
				t.Fatalf("ping answered with %+v", msgs)
			}
		} else {
			f.ok(s, zkmodel.Request{Op: zkmodel.OpExists, Path: "/"})
		}
	}
	// Last heard at 15s: expires at 18s, not before.
	f.m.Tick(epoch.Add(17999 * time.Millisecond))
	if info, _ := f.m.Session(s); info.State != zkmodel.Connected {
		t.Fatalf("state %v at 17.999s", info.State)
	}
	f.m.Tick(epoch.Add(18 * time.Second))
	if info, _ := f.m.Session(s); info.State != zkmodel.Expired {
		t.Fatalf("state %v at 18s", info.State)
	}
}

// A disconnected session keeps running towards its deadline and can come
// back before it; a request in flight is applied or not, as the caller
// chose, and its reply is lost either way.
func TestDisconnectAndReconnect(t *testing.T) {
	f := newFixture(t)
	s := f.connect(5 * time.Second)
	other := f.connect(20 * time.Second)
	// Applied, reply lost.
	if err := f.m.Submit(f.now, s, create("/applied", zkmodel.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Disconnect(f.now, s); err != nil {
		t.Fatal(err)
	}
	if n := f.m.Pending(s); n != 0 {
		t.Fatalf("%d messages survived the connection", n)
	}
	if _, _, ok := f.m.Node("/applied"); !ok {
		t.Fatalf("the applied create is gone")
	}
	if err := f.m.Submit(f.now, s, create("/x", zkmodel.Persistent)); !errors.Is(err, zkmodel.ErrNotConnected) {
		t.Fatalf("Submit while disconnected: %v", err)
	}
	f.now = f.now.Add(4 * time.Second)
	f.ok(other, zkmodel.Request{Op: zkmodel.OpSync, Path: "/"})
	if _, err := f.m.Reconnect(f.now, s, zkmodel.SetWatches{}); err != nil {
		t.Fatalf("Reconnect within the timeout: %v", err)
	}
	if _, _, ok := f.m.Node("/applied"); !ok {
		t.Fatalf("the ephemeral did not survive the reconnect")
	}
	// Not reconnected in time: expired.
	if err := f.m.Disconnect(f.now, s); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(6 * time.Second)
	if _, err := f.m.Reconnect(f.now, s, zkmodel.SetWatches{}); !errors.Is(err, zkmodel.ErrSessionExpired) {
		t.Fatalf("Reconnect after the timeout: %v", err)
	}
	if _, _, ok := f.m.Node("/applied"); ok {
		t.Fatalf("the ephemeral outlived its expired session")
	}
}

// The server drops a connection's watches with it; the client's setWatches
// on reconnect fires at once what changed after the last zxid it read and
// sets the rest again.
func TestReconnectResetsWatches(t *testing.T) {
	f := newFixture(t)
	s := f.connect(20 * time.Second)
	other := f.connect(20 * time.Second)
	for _, p := range []string{"/same", "/changed", "/deleted", "/parent"} {
		f.ok(other, create(p, zkmodel.Persistent))
	}
	var client zkmodel.ClientWatches
	for _, req := range []zkmodel.Request{
		{Op: zkmodel.OpGetData, Path: "/same", Watch: true},
		{Op: zkmodel.OpGetData, Path: "/changed", Watch: true},
		{Op: zkmodel.OpExists, Path: "/deleted", Watch: true},
		{Op: zkmodel.OpExists, Path: "/born", Watch: true},
		{Op: zkmodel.OpGetChildren, Path: "/parent", Watch: true},
	} {
		rep, _ := f.do(s, req)
		client.Replied(req, rep)
	}
	if err := f.m.Disconnect(f.now, s); err != nil {
		t.Fatal(err)
	}
	f.ok(other, zkmodel.Request{Op: zkmodel.OpSetData, Path: "/changed", Version: -1})
	f.ok(other, zkmodel.Request{Op: zkmodel.OpDelete, Path: "/deleted", Version: -1})
	f.ok(other, create("/born", zkmodel.Persistent))
	f.ok(other, create("/parent/kid", zkmodel.Persistent))
	w := client.SetWatches()
	if w.RelativeZxid == 0 || !slices.Equal(w.Data, []string{"/changed", "/deleted", "/same"}) ||
		!slices.Equal(w.Exist, []string{"/born"}) || !slices.Equal(w.Child, []string{"/parent"}) {
		t.Fatalf("setWatches %+v", w)
	}
	if _, err := f.m.Reconnect(f.now, s, w); err != nil {
		t.Fatal(err)
	}
	got := events(t, drain(f.m, s))
	want := []zkmodel.Event{
		ev(zkmodel.EventNodeDataChanged, "/changed"),
		ev(zkmodel.EventNodeDeleted, "/deleted"),
		ev(zkmodel.EventNodeCreated, "/born"),
		ev(zkmodel.EventNodeChildrenChanged, "/parent"),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events on reconnect %v, want %v", got, want)
	}
	for _, e := range got {
		client.Fired(e)
	}
	if w := client.SetWatches(); len(w.Data) != 1 || len(w.Exist) != 0 || len(w.Child) != 0 {
		t.Fatalf("client still holds %+v, want only /same", w)
	}
	// /same was set again, and fires on its next change.
	f.ok(other, zkmodel.Request{Op: zkmodel.OpSetData, Path: "/same", Version: -1})
	if got := events(t, drain(f.m, s)); !slices.Equal(got, []zkmodel.Event{ev(zkmodel.EventNodeDataChanged, "/same")}) {
		t.Fatalf("after the reconnect /same fired %v", got)
	}
}

func TestRepliesComeInRequestOrder(t *testing.T) {
	f := newFixture(t)
	s := f.connect(10 * time.Second)
	reqs := []zkmodel.Request{
		{Xid: 1, Op: zkmodel.OpCreate, Path: "/a"},
		{Xid: 2, Op: zkmodel.OpGetChildren, Path: "/"},
		{Xid: 3, Op: zkmodel.OpCreate, Path: "/a"},
		{Xid: 4, Op: zkmodel.OpSync, Path: "/"},
		{Xid: 5, Op: zkmodel.OpDelete, Path: "/a", Version: -1},
	}
	for i, req := range reqs {
		if err := f.m.Submit(f.now, s, req); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if err := f.m.Ping(f.now, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got []string
	for _, msg := range drain(f.m, s) {
		switch msg.Kind {
		case zkmodel.MsgReply:
			got = append(got, msg.Reply.Op.String()+"/"+msg.Reply.Err.String())
		default:
			got = append(got, msg.Kind.String())
		}
	}
	want := []string{"create/OK", "getChildren/OK", "create/NodeExists", "ping", "sync/OK", "delete/OK"}
	if !slices.Equal(got, want) {
		t.Fatalf("replies %q, want %q", got, want)
	}
}

// A watch event reaches its session before the reply that follows it: the
// writer's own reply when it watched its own node, and any later reply of
// the watcher.
func TestWatchEventComesBeforeLaterReplies(t *testing.T) {
	f := newFixture(t)
	writer := f.connect(10 * time.Second)
	watcher := f.connect(10 * time.Second)
	f.ok(writer, create("/n", zkmodel.Persistent))
	f.ok(writer, zkmodel.Request{Op: zkmodel.OpGetData, Path: "/n", Watch: true})
	f.ok(watcher, zkmodel.Request{Op: zkmodel.OpGetData, Path: "/n", Watch: true})
	if err := f.m.Submit(f.now, watcher, zkmodel.Request{Xid: 100, Op: zkmodel.OpSync, Path: "/"}); err != nil {
		t.Fatal(err)
	}
	_, own := f.do(writer, zkmodel.Request{Op: zkmodel.OpSetData, Path: "/n", Version: -1})
	if !slices.Equal(own, []zkmodel.Event{ev(zkmodel.EventNodeDataChanged, "/n")}) {
		t.Fatalf("the writer saw %v before its reply", own)
	}
	if err := f.m.Submit(f.now, watcher, zkmodel.Request{Xid: 101, Op: zkmodel.OpExists, Path: "/n"}); err != nil {
		t.Fatal(err)
	}
	msgs := drain(f.m, watcher)
	if len(msgs) != 3 || msgs[0].Reply.Xid != 100 || msgs[1].Kind != zkmodel.MsgEvent || msgs[2].Reply.Xid != 101 {
		t.Fatalf("watcher's connection %+v, want sync reply, event, exists reply", msgs)
	}
	// One-shot: a second change fires nothing.
	f.ok(writer, zkmodel.Request{Op: zkmodel.OpSetData, Path: "/n", Version: -1})
	if n := f.m.Pending(watcher); n != 0 {
		t.Fatalf("a fired watch fired again (%d messages)", n)
	}
}

func TestWatchTriggers(t *testing.T) {
	f := newFixture(t)
	s := f.connect(10 * time.Second)
	w := f.connect(10 * time.Second)
	f.ok(s, create("/p", zkmodel.Persistent))
	// exists on a missing node watches it; getData and getChildren on one
	// do not.
	f.do(w, zkmodel.Request{Op: zkmodel.OpExists, Path: "/p/c", Watch: true})
	f.do(w, zkmodel.Request{Op: zkmodel.OpGetData, Path: "/p/d", Watch: true})
	f.do(w, zkmodel.Request{Op: zkmodel.OpGetChildren, Path: "/p/d", Watch: true})
	f.ok(w, zkmodel.Request{Op: zkmodel.OpGetChildren, Path: "/p", Watch: true})
	f.ok(s, create("/p/c", zkmodel.Persistent))
	f.ok(s, create("/p/d", zkmodel.Persistent))
	got := events(t, drain(f.m, w))
	want := []zkmodel.Event{ev(zkmodel.EventNodeCreated, "/p/c"), ev(zkmodel.EventNodeChildrenChanged, "/p")}
	if !slices.Equal(got, want) {
		t.Fatalf("creates fired %v, want %v", got, want)
	}
	// Data and child watch on one node: one NodeDeleted.
	f.ok(w, zkmodel.Request{Op: zkmodel.OpGetData, Path: "/p/c", Watch: true})
	f.ok(w, zkmodel.Request{Op: zkmodel.OpGetChildren, Path: "/p/c", Watch: true})
	f.ok(w, zkmodel.Request{Op: zkmodel.OpGetChildren, Path: "/p", Watch: true})
	f.ok(s, zkmodel.Request{Op: zkmodel.OpDelete, Path: "/p/c", Version: -1})
	got = events(t, drain(f.m, w))
	want = []zkmodel.Event{ev(zkmodel.EventNodeDeleted, "/p/c"), ev(zkmodel.EventNodeChildrenChanged, "/p")}
	if !slices.Equal(got, want) {
		t.Fatalf("delete fired %v, want %v", got, want)
	}
}

// A multi is all or nothing, with one zxid: a failing operation leaves no
// trace but the zxid, fires no watch, and reports the server's per-operation
// codes.
func TestMultiIsAtomic(t *testing.T) {
	f := newFixture(t)
	s := f.connect(10 * time.Second)
	w := f.connect(10 * time.Second)
	f.ok(s, create("/x", zkmodel.Persistent))
	f.do(w, zkmodel.Request{Op: zkmodel.OpExists, Path: "/a", Watch: true})
	f.ok(w, zkmodel.Request{Op: zkmodel.OpGetData, Path: "/x", Watch: true})
	before := f.m.Zxid()
	rootBefore := f.stat("/")
	rep, _ := f.do(s, zkmodel.Request{Op: zkmodel.OpMulti, Ops: []zkmodel.Request{
		create("/a", zkmodel.Persistent),
		create("/a/b", zkmodel.PersistentSequential),
		{Op: zkmodel.OpSetData, Path: "/x", Version: 0},
		{Op: zkmodel.OpCheck, Path: "/x", Version: 7},
		{Op: zkmodel.OpDelete, Path: "/x", Version: -1},
	}})
	var codes []zkmodel.Code
	for _, r := range rep.Results {
		codes = append(codes, r.Err)
		if r.Path != "" {
			t.Errorf("error result with a path: %+v", r)
		}
	}
	wantCodes := []zkmodel.Code{zkmodel.OK, zkmodel.OK, zkmodel.OK, zkmodel.BadVersion, zkmodel.RuntimeInconsistency}
	if rep.Err != zkmodel.BadVersion || !slices.Equal(codes, wantCodes) {
		t.Fatalf("multi: %v %v, want BadVersion %v", rep.Err, codes, wantCodes)
	}
	if rep.Zxid != before+1 || f.m.Zxid() != before+1 {
		t.Fatalf("a failed multi took zxid %d (model %d), want %d", rep.Zxid, f.m.Zxid(), before+1)
	}
	if _, _, ok := f.m.Node("/a"); ok {
		t.Fatalf("/a survived the rollback")
	}
	if st := f.stat("/x"); st.Version != 0 || st.Mzxid == before+1 {
		t.Fatalf("/x changed by a failed multi: %+v", st)
	}
	if st := f.stat("/"); st != rootBefore {
		t.Fatalf("root %+v after the rollback, was %+v", st, rootBefore)
	}
	if n := f.m.Pending(w); n != 0 {
		t.Fatalf("a failed multi fired %d events", n)
	}
	rep = f.ok(s, zkmodel.Request{Op: zkmodel.OpMulti, Ops: []zkmodel.Request{
		create("/a", zkmodel.Persistent),
		create("/a/b", zkmodel.PersistentSequential),
		{Op: zkmodel.OpSetData, Path: "/x", Version: 0, Data: []byte("v")},
		{Op: zkmodel.OpCheck, Path: "/x", Version: 1},
	}})
	zxid := f.m.Zxid()
	if rep.Results[0].Path != "/a" || rep.Results[1].Path != "/a/b0000000000" || rep.Results[2].Stat.Version != 1 {
		t.Fatalf("results %+v", rep.Results)
	}
	if a, b, x := f.stat("/a"), f.stat("/a/b0000000000"), f.stat("/x"); a.Czxid != zxid || b.Czxid != zxid ||
		x.Mzxid != zxid || a.Pzxid != zxid {
		t.Fatalf("one zxid %d for all: /a %+v, /a/b %+v, /x %+v", zxid, a, b, x)
	}
	got := events(t, drain(f.m, w))
	want := []zkmodel.Event{ev(zkmodel.EventNodeCreated, "/a"), ev(zkmodel.EventNodeDataChanged, "/x")}
	if !slices.Equal(got, want) {
		t.Fatalf("multi fired %v, want %v", got, want)
	}
	rep, _ = f.do(s, zkmodel.Request{Op: zkmodel.OpMulti, Ops: []zkmodel.Request{{Op: zkmodel.OpGetData, Path: "/x"}}})
	if rep.Err != zkmodel.MarshallingError || rep.Results != nil {
		t.Fatalf("a read in a multi: %+v", rep)
	}
}

// The container manager takes the empty containers that once had a child,
// and only when the simulator runs it; an enclosing container becomes a
// candidate once its last child is reaped, on the next run.
func TestContainerReaping(t *testing.T) {
	f := newFixture(t)
	s := f.connect(10 * time.Second)
	w := f.connect(10 * time.Second)
	container := func(p string) {
		f.ok(s, zkmodel.Request{Op: zkmodel.OpCreateContainer, Path: p, Mode: zkmodel.Container})
	}
	container("/outer")
	container("/outer/inner")
	container("/unused")
	if got := f.m.ContainerCandidates(); len(got) != 0 {
		t.Fatalf("candidates %q, want none: /outer has a child, the others never had one", got)
	}
	if code := f.m.ReapContainer(f.now, "/outer"); code != zkmodel.NotEmpty {
		t.Fatalf("reaping a container with a child: %v", code)
	}
	f.ok(s, create("/outer/inner/lock", zkmodel.EphemeralSequential))
	f.ok(s, zkmodel.Request{Op: zkmodel.OpDelete, Path: "/outer/inner/lock0000000000", Version: -1})
	if got := f.m.ContainerCandidates(); !slices.Equal(got, []string{"/outer/inner"}) {
		t.Fatalf("candidates %q, want /outer/inner (empty, had a child)", got)
	}
	f.ok(w, zkmodel.Request{Op: zkmodel.OpExists, Path: "/outer/inner", Watch: true})
	f.ok(w, zkmodel.Request{Op: zkmodel.OpGetChildren, Path: "/outer", Watch: true})
	before := f.m.Zxid()
	if got := f.m.ReapContainers(f.now); !slices.Equal(got, []string{"/outer/inner"}) {
		t.Fatalf("first run reaped %q, want /outer/inner", got)
	}
	if f.m.Zxid() != before+1 || f.stat("/outer").Pzxid != before+1 {
		t.Fatalf("the deletion took zxid %d, /outer pzxid %d; want %d", f.m.Zxid(), f.stat("/outer").Pzxid, before+1)
	}
	got := events(t, drain(f.m, w))
	want := []zkmodel.Event{ev(zkmodel.EventNodeDeleted, "/outer/inner"), ev(zkmodel.EventNodeChildrenChanged, "/outer")}
	if !slices.Equal(got, want) {
		t.Fatalf("reaping fired %v, want %v", got, want)
	}
	if got := f.m.ReapContainers(f.now); !slices.Equal(got, []string{"/outer"}) {
		t.Fatalf("second run reaped %q, want /outer", got)
	}
	if got := f.m.ReapContainers(f.now); len(got) != 0 {
		t.Fatalf("third run reaped %q; /unused never had a child", got)
	}
	if _, _, ok := f.m.Node("/unused"); !ok {
		t.Fatalf("/unused was reaped")
	}
}

func TestCloseDeletesEphemeralsThenClosesTheConnection(t *testing.T) {
	f := newFixture(t)
	s := f.connect(10 * time.Second)
	w := f.connect(10 * time.Second)
	f.ok(s, create("/p", zkmodel.Persistent))
	f.ok(s, create("/p/a", zkmodel.Ephemeral))
	f.ok(s, create("/p/b", zkmodel.Ephemeral))
	f.ok(s, zkmodel.Request{Op: zkmodel.OpGetData, Path: "/p/a", Watch: true})
	f.ok(w, zkmodel.Request{Op: zkmodel.OpGetChildren, Path: "/p", Watch: true})
	if err := f.m.Close(f.now, s, 77); err != nil {
		t.Fatal(err)
	}
	msgs := drain(f.m, s)
	if len(msgs) != 3 || msgs[0].Event != ev(zkmodel.EventNodeDeleted, "/p/a") ||
		msgs[1].Reply.Op != zkmodel.OpClose || msgs[1].Reply.Xid != 77 || msgs[2].Kind != zkmodel.MsgClosed {
		t.Fatalf("closing session's connection: %+v", msgs)
	}
	if got := events(t, drain(f.m, w)); !slices.Equal(got, []zkmodel.Event{ev(zkmodel.EventNodeChildrenChanged, "/p")}) {
		t.Fatalf("watcher saw %v", got)
	}
	if st := f.stat("/p"); st.NumChildren != 0 || st.Pzxid != f.m.Zxid() {
		t.Fatalf("/p %+v after the close (zxid %d)", st, f.m.Zxid())
	}
	if info, _ := f.m.Session(s); info.State != zkmodel.Closed {
		t.Fatalf("state %v", info.State)
	}
}

// Config.EndOrder decides the order in which a session's end deletes its
// ephemerals, and so the order of the events a watcher sees; without it
// the order is the paths'.
func TestEndOrderIsTheCallersChoice(t *testing.T) {
	paths := []string{"/a", "/b", "/c"}
	for name, order := range map[string]func([]string) []string{
		"default":  nil,
		"reversed": func(p []string) []string { slices.Reverse(p); return p },
		// Repeats and strangers are ignored, and what is left out comes last.
		"sloppy": func([]string) []string { return []string{"/c", "/c", "/nope"} },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.m = zkmodel.New(zkmodel.Config{TickTime: time.Second, EndOrder: order}, epoch)
			s := f.connect(10 * time.Second)
			w := f.connect(10 * time.Second)
			for _, p := range paths {
				f.ok(s, create(p, zkmodel.Ephemeral))
				f.ok(w, zkmodel.Request{Op: zkmodel.OpExists, Path: p, Watch: true})
			}
			if err := f.m.Close(f.now, s, 1); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range events(t, drain(f.m, w)) {
				got = append(got, e.Path)
			}
			want := map[string][]string{
				"default": {"/a", "/b", "/c"}, "reversed": {"/c", "/b", "/a"}, "sloppy": {"/c", "/a", "/b"},
			}[name]
			if !slices.Equal(got, want) {
				t.Fatalf("deleted in order %q, want %q", got, want)
			}
		})
	}
}

// The model makes no choice of its own: the same calls give the same
// messages, whatever order Go iterates its maps in. Random calls of every
// kind, run twice from one seed, must produce the same transcript.
func TestModelIsDeterministic(t *testing.T) {
	run := func(seed uint64) []string {
		rng := rand.New(rand.NewPCG(seed, 1))
		m := zkmodel.New(zkmodel.Config{TickTime: time.Second}, epoch)
		now := epoch
		var ids, live []zkmodel.SessionID
		var out []string
		paths := []string{"/p", "/p/a", "/p/b", "/p/c", "/p/d", "/p/a/x"}
		pick := func() string { return paths[rng.IntN(len(paths))] }
		owner, _ := m.Connect(now, time.Minute)
		if err := m.Submit(now, owner, create("/p", zkmodel.Persistent)); err != nil {
			t.Fatal(err)
		}
		for i := range 3000 {
			now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
			m.Tick(now)
			live = slices.DeleteFunc(live, func(id zkmodel.SessionID) bool {
				info, _ := m.Session(id)
				return info.State == zkmodel.Expired || info.State == zkmodel.Closed
			})
			if len(live) < 3 || rng.IntN(50) == 0 {
				id, _ := m.Connect(now, time.Duration(2+rng.IntN(5))*time.Second)
				ids, live = append(ids, id), append(live, id)
			}
			id := live[rng.IntN(len(live))]
			var err error
			switch r := rng.IntN(20); {
			case r == 0:
				err = m.Disconnect(now, id)
			case r == 1:
				_, err = m.Reconnect(now, id, zkmodel.SetWatches{RelativeZxid: m.Zxid() - 3, Data: []string{pick()}, Child: []string{pick()}})
			case r == 2:
				out = append(out, fmt.Sprint(m.ReapContainers(now)))
			case r == 3:
				err = m.Ping(now, id)
			case r == 4:
				// Every other session watches everything first, so that
				// the order of the deletions shows.
				for _, w := range live {
					for _, p := range append(m.Ephemerals(id), paths...) {
						if w != id {
							_ = m.Submit(now, w, zkmodel.Request{Op: zkmodel.OpExists, Path: p, Watch: true})
						}
					}
				}
				err = m.Close(now, id, int64(i))
				live = slices.DeleteFunc(live, func(x zkmodel.SessionID) bool { return x == id })
			default:
				// Mostly creates and watching reads, so that sessions end
				// with several watched ephemerals.
				ops := []zkmodel.OpKind{
					zkmodel.OpCreate, zkmodel.OpCreate, zkmodel.OpCreate, zkmodel.OpCreateContainer,
					zkmodel.OpExists, zkmodel.OpGetData, zkmodel.OpGetChildren, zkmodel.OpDelete,
					zkmodel.OpSetData, zkmodel.OpCheck, zkmodel.OpSync, zkmodel.OpMulti,
				}
				modes := []zkmodel.Mode{zkmodel.Ephemeral, zkmodel.EphemeralSequential, zkmodel.EphemeralSequential, zkmodel.Persistent, zkmodel.Container}
				req := zkmodel.Request{
					Xid: int64(i), Op: ops[rng.IntN(len(ops))], Path: pick(),
					Mode: modes[rng.IntN(len(modes))], Version: int32(rng.IntN(3) - 1), Watch: rng.IntN(4) > 0,
				}
				if req.Op == zkmodel.OpMulti {
					req.Ops = []zkmodel.Request{create(pick(), zkmodel.EphemeralSequential), {Op: zkmodel.OpDelete, Path: pick(), Version: -1}}
				}
				err = m.Submit(now, id, req)
			}
			out = append(out, fmt.Sprint(err))
			for _, s := range ids {
				for _, msg := range drain(m, s) {
					out = append(out, fmt.Sprintf("%d %+v", s, msg))
				}
			}
		}
		return out
	}
	a, b := run(7), run(7)
	if !slices.Equal(a, b) {
		i := 0
		for i < min(len(a), len(b)) && a[i] == b[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(the end)"
		}
		t.Fatalf("two runs of one seed part at line %d:\n%s\n%s", i, line(a), line(b))
	}
	var replies, events int
	for _, l := range a {
		replies += strings.Count(l, "Kind:reply")
		events += strings.Count(l, "Kind:event")
	}
	if replies == 0 || events == 0 {
		t.Fatalf("the run exercised nothing: %d replies, %d events", replies, events)
	}
}

// The history of lives: every create and delete that committed, with its
// zxid and who deleted the node; nothing of a multi rolled back.
func TestLives(t *testing.T) {
	f := newFixture(t)
	s := f.connect(2 * time.Second)
	o := f.connect(10 * time.Second)
	f.ok(o, create("/q", zkmodel.Container))
	a := f.ok(s, create("/q/n-", zkmodel.EphemeralSequential)).Path
	za := f.m.Zxid()
	b := f.ok(s, create("/q/n-", zkmodel.EphemeralSequential)).Path
	zb := f.m.Zxid()
	f.ok(o, zkmodel.Request{Op: zkmodel.OpDelete, Path: a, Version: -1})
	zd := f.m.Zxid()
	f.do(o, zkmodel.Request{Op: zkmodel.OpMulti, Ops: []zkmodel.Request{
		create("/q/p", zkmodel.Persistent), {Op: zkmodel.OpCheck, Path: "/q", Version: 7}}})
	f.ok(o, zkmodel.Request{Op: zkmodel.OpMulti, Ops: []zkmodel.Request{
		create("/q/m", zkmodel.Persistent), {Op: zkmodel.OpDelete, Path: "/q/m", Version: -1}}})
	zm := f.m.Zxid()
	f.now = f.now.Add(5 * time.Second)
	f.m.Tick(f.now) // s expires; o's ping is not due to matter: it has 10s
	ze := f.m.Zxid()
	want := []zkmodel.Life{
		{Path: a, Owner: s, Created: za, Deleted: zd, DeletedBy: o},
		{Path: b, Owner: s, Created: zb, Deleted: ze, Ended: true},
		{Path: "/q/m", Created: zm, Deleted: zm, DeletedBy: o},
	}
	if got := f.m.Lives("/q"); !slices.Equal(got, want) {
		t.Fatalf("lives %+v,\nwant %+v", got, want)
	}
	for _, c := range []struct {
		l        zkmodel.Life
		from, to int64
		alive    bool
	}{
		{want[0], za, za, true}, {want[0], zd - 1, zd + 5, true}, {want[0], zd, zd + 5, false},
		{want[0], 0, za - 1, false}, {want[1], ze + 1, ze + 9, false}, {want[2], 0, zm + 9, false},
		{zkmodel.Life{Created: 3}, 100, 200, true},
	} {
		if got := c.l.Alive(c.from, c.to); got != c.alive {
			t.Errorf("%+v alive in [%d, %d]: %v, want %v", c.l, c.from, c.to, got, c.alive)
		}
	}
	if got := f.m.Lives("/"); len(got) != 1 || got[0].Path != "/q" || got[0].Deleted != 0 {
		t.Fatalf("lives of /: %+v", got)
	}
}
