package zkmodel_test

import (
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/internal/zkmodel"
)

// An ensemble of a leader and two followers, a 1 s tick and a syncLimit of
// 5 ticks: a cut follower serves its clients for 5 s.
func newEnsemble(t *testing.T) *fixture {
	return &fixture{t: t, now: epoch,
		m: zkmodel.New(zkmodel.Config{TickTime: time.Second, Followers: 2, SyncLimit: 5}, epoch)}
}

func (f *fixture) at(d time.Duration) {
	f.now = epoch.Add(d)
	f.m.Tick(f.now)
}

func (f *fixture) connectTo(member zkmodel.MemberID, timeout time.Duration) zkmodel.SessionID {
	f.t.Helper()
	id, _, err := f.m.ConnectTo(f.now, member, timeout)
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// pingAnswered pings id and reports whether the answer is queued at once.
func (f *fixture) pingAnswered(id zkmodel.SessionID) bool {
	f.t.Helper()
	if err := f.m.Ping(f.now, id); err != nil {
		f.t.Fatalf("ping: %v", err)
	}
	msgs := drain(f.m, id)
	return len(msgs) == 1 && msgs[0].Kind == zkmodel.MsgPing
}

func (f *fixture) state(id zkmodel.SessionID) zkmodel.SessionState {
	info, _ := f.m.Session(id)
	return info.State
}

func TestEnsembleRoles(t *testing.T) {
	if r := newFixture(t).m.Role(zkmodel.TheLeader); r != "standalone" {
		t.Errorf("one server's role %q, want standalone", r)
	}
	f := newEnsemble(t)
	if r := f.m.Role(zkmodel.TheLeader); r != "leader" {
		t.Errorf("member 0 %q, want leader", r)
	}
	if err := f.m.Cut(f.now, 1); err != nil {
		t.Fatal(err)
	}
	if r := f.m.Role(1); r != "follower" {
		t.Errorf("a cut follower within syncLimit says %q, want follower", r)
	}
	if _, _, err := f.m.ConnectTo(f.now, 1, 4*time.Second); !errors.Is(err, zkmodel.ErrStalled) {
		t.Errorf("handshake with a cut follower: %v, want ErrStalled", err)
	}
	f.at(5 * time.Second)
	if r := f.m.Role(1); r != "" {
		t.Errorf("a follower that gave its leader up says %q, want no mode", r)
	}
	if _, _, err := f.m.ConnectTo(f.now, 1, 4*time.Second); !errors.Is(err, zkmodel.ErrNotServing) {
		t.Errorf("handshake with a follower that gave its leader up: %v, want ErrNotServing", err)
	}
	f.m.Heal(f.now, 1)
	if r := f.m.Role(1); r != "follower" {
		t.Errorf("a healed follower says %q", r)
	}
	f.connectTo(1, 4*time.Second)
	if err := f.m.Cut(f.now, zkmodel.TheLeader); err == nil {
		t.Error("the leader was cut from itself")
	}
}

// The second fault of issue 22: the follower answers pings while the
// leader expires the session, and after the leader did; it closes the
// connection only when it gives its leader up.
func TestEnsembleCutFollowerAnswersAfterExpiry(t *testing.T) {
	f := newEnsemble(t)
	holder := f.connectTo(1, 2*time.Second)
	watcher := f.connectTo(2, 4*time.Second)
	f.ok(holder, zkmodel.Request{Op: zkmodel.OpCreate, Path: "/lock", Mode: zkmodel.Ephemeral})
	f.ok(watcher, zkmodel.Request{Op: zkmodel.OpExists, Path: "/lock", Watch: true})
	if err := f.m.Cut(f.now, 1); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{700 * time.Millisecond, 1400 * time.Millisecond} {
		f.at(at)
		if !f.pingAnswered(holder) {
			t.Fatalf("at %v the cut follower did not answer the ping", at)
		}
		f.do(watcher, zkmodel.Request{Op: zkmodel.OpExists, Path: "/watcher-alive"})
	}
	// The last touch the leader had was the create at 0: 2 s, rounded up
	// to the tick, is 3 s.
	f.at(3 * time.Second)
	if s := f.state(holder); s != zkmodel.Expired {
		t.Fatalf("the leader did not expire the holder's session: %v", s)
	}
	if _, _, ok := f.m.Node("/lock"); ok {
		t.Fatal("the expired session's ephemeral is still there")
	}
	if msgs := drain(f.m, watcher); len(msgs) != 1 || msgs[0].Event.Type != zkmodel.EventNodeDeleted {
		t.Fatalf("the watcher on the leader's side saw %+v, want NodeDeleted", msgs)
	}
	f.at(4 * time.Second)
	if !f.pingAnswered(holder) {
		t.Fatal("after the expiry, the cut follower no longer answered the ping")
	}
	f.at(5 * time.Second)
	if msgs := drain(f.m, holder); len(msgs) != 1 || msgs[0].Kind != zkmodel.MsgClosed {
		t.Fatalf("giving its leader up, the follower sent %+v, want the connection's close", msgs)
	}
	if err := f.m.Disconnect(f.now, holder); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.ReconnectTo(f.now, 2, holder, zkmodel.SetWatches{}); !errors.Is(err, zkmodel.ErrSessionExpired) {
		t.Fatalf("reconnecting to the other follower: %v, want ErrSessionExpired", err)
	}
}

// A cut shorter than the session: the follower holds the requests and
// passes its touches on when the link is back; the session lives, and
// what was held is answered in order.
func TestEnsembleShortCutHoldsAndForwards(t *testing.T) {
	f := newEnsemble(t)
	holder := f.connectTo(1, 3*time.Second)
	if err := f.m.Cut(f.now, 1); err != nil {
		t.Fatal(err)
	}
	f.at(2500 * time.Millisecond)
	if !f.pingAnswered(holder) {
		t.Fatal("ping not answered")
	}
	if err := f.m.Submit(f.now, holder, zkmodel.Request{Xid: 7, Op: zkmodel.OpCreate, Path: "/a"}); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Ping(f.now, holder); err != nil {
		t.Fatal(err)
	}
	if n := f.m.Pending(holder); n != 0 {
		t.Fatalf("%d messages for a request and a ping behind it, while cut", n)
	}
	if _, _, ok := f.m.Node("/a"); ok {
		t.Fatal("a write applied while its follower is cut")
	}
	f.m.Heal(f.now, 1)
	msgs := drain(f.m, holder)
	if len(msgs) != 2 || msgs[0].Kind != zkmodel.MsgReply || msgs[0].Reply.Xid != 7 || msgs[0].Reply.Err != zkmodel.OK || msgs[1].Kind != zkmodel.MsgPing {
		t.Fatalf("after the heal: %+v, want the create's reply, then the ping's", msgs)
	}
	// Touched at the heal (2.5 s): the leader's deadline is 6 s.
	f.at(5900 * time.Millisecond)
	if s := f.state(holder); s != zkmodel.Connected {
		t.Fatalf("the session passed on at the heal is %v", s)
	}
}

// A heal after the leader expired the session, before the follower gave
// its leader up: the follower learns of the end and closes the
// connection, after the events it held.
func TestEnsembleHealAfterExpiryCloses(t *testing.T) {
	f := newEnsemble(t)
	holder := f.connectTo(1, 2*time.Second)
	f.do(holder, zkmodel.Request{Op: zkmodel.OpExists, Path: "/x", Watch: true})
	other := f.connectTo(zkmodel.TheLeader, 4*time.Second)
	if err := f.m.Cut(f.now, 1); err != nil {
		t.Fatal(err)
	}
	f.ok(other, zkmodel.Request{Op: zkmodel.OpCreate, Path: "/x"})
	if n := f.m.Pending(holder); n != 0 {
		t.Fatalf("an event reached a client of the cut follower: %d messages", n)
	}
	f.at(3500 * time.Millisecond)
	if s := f.state(holder); s != zkmodel.Expired {
		t.Fatalf("session %v, want expired by the leader", s)
	}
	if !f.pingAnswered(holder) {
		t.Fatal("the cut follower did not answer")
	}
	f.m.Heal(f.now, 1)
	msgs := drain(f.m, holder)
	if len(msgs) != 2 || msgs[0].Kind != zkmodel.MsgEvent || msgs[0].Event.Type != zkmodel.EventNodeCreated || msgs[1].Kind != zkmodel.MsgClosed {
		t.Fatalf("after the heal: %+v, want the held NodeCreated, then the close", msgs)
	}
}

// A cut follower answers reads from the tree it had at the cut, and a
// watch they set fires at the heal if the node changed meanwhile.
func TestEnsembleCutFollowerReadsItsOwnTree(t *testing.T) {
	f := newEnsemble(t)
	reader := f.connectTo(1, 10*time.Second)
	writer := f.connectTo(zkmodel.TheLeader, 10*time.Second)
	f.ok(writer, zkmodel.Request{Op: zkmodel.OpCreate, Path: "/a"})
	if err := f.m.Cut(f.now, 1); err != nil {
		t.Fatal(err)
	}
	f.ok(writer, zkmodel.Request{Op: zkmodel.OpCreate, Path: "/a/b"})
	rep := f.ok(reader, zkmodel.Request{Op: zkmodel.OpGetChildren, Path: "/a", Watch: true})
	if len(rep.Children) != 0 {
		t.Fatalf("the cut follower listed %v, want the tree of the cut (no child)", rep.Children)
	}
	if rep.Zxid >= f.m.Zxid() {
		t.Fatalf("reply zxid %d, want the follower's, below the leader's %d", rep.Zxid, f.m.Zxid())
	}
	f.m.Heal(f.now, 1)
	msgs := drain(f.m, reader)
	if len(msgs) != 1 || msgs[0].Event.Type != zkmodel.EventNodeChildrenChanged || msgs[0].Event.Path != "/a" {
		t.Fatalf("after the heal: %+v, want NodeChildrenChanged of /a", msgs)
	}
}
