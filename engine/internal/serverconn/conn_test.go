package serverconn

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func frame(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

func replyFrame(xid int32, zxid int64, code int32, payload int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint64(b, uint64(zxid))
	b = binary.BigEndian.AppendUint32(b, uint32(code))
	return frame(append(b, make([]byte, payload)...))
}

// requestFrame is a request as the client writes it: xid, opcode, body.
func requestFrame(xid int32, payload int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, 4) // the opcode: the engine does not read it
	return frame(append(b, make([]byte, payload)...))
}

// connectRequest is the client's handshake: protocolVersion, lastZxidSeen,
// timeOut, sessionId, passwd.
func connectRequest() []byte { return frame(make([]byte, 4+8+4+8+4+16)) }

// connectResponse is the server's handshake: protocolVersion, timeOut,
// sessionId, passwd, readOnly.
func connectResponse(timeoutMs int32, session int64) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(timeoutMs))
	b = binary.BigEndian.AppendUint64(b, uint64(session))
	b = binary.BigEndian.AppendUint32(b, 16)
	b = append(b, make([]byte, 16)...)
	return frame(append(b, 0))
}

// inPieces hands stream to feed cut at random places.
func inPieces(rng *rand.Rand, stream []byte, most int, feed func([]byte)) {
	for len(stream) > 0 {
		n := 1 + rng.IntN(min(len(stream), most))
		feed(stream[:n])
		stream = stream[n:]
	}
}

// fakeClock is a monotonic clock the test moves by hand.
type fakeClock struct{ now atomic.Int64 }

func (c *fakeClock) read() time.Duration     { return time.Duration(c.now.Load()) }
func (c *fakeClock) set(d time.Duration)     { c.now.Store(int64(d)) }
func (c *fakeClock) advance(d time.Duration) { c.now.Add(int64(d)) }

const hourMs = int32(time.Hour / time.Millisecond)

// fakeWatchdog is the watchdog as the connections feed it, keeping what the
// engine's does of it: the session the latest handshake named, and the
// send time the deadline counts from (a new session's handshake restarts
// it; answers move it only forward, and only while a session lives).
type fakeWatchdog struct {
	clock      *fakeClock
	mu         sync.Mutex
	session    int64
	heard      time.Duration
	handshakes []string // "sent session", in the order told
}

func newFakeWatchdog(clock *fakeClock) *fakeWatchdog { return &fakeWatchdog{clock: clock} }

func (f *fakeWatchdog) Clock() time.Duration    { return f.clock.read() }
func (f *fakeWatchdog) Lifetime() time.Duration { return 48 * time.Minute }

func (f *fakeWatchdog) Handshake(sent time.Duration, session int64, _ int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handshakes = append(f.handshakes, fmt.Sprintf("%v %#x", sent, session))
	if session != f.session {
		f.session, f.heard = session, sent
	}
	f.heard = max(f.heard, sent)
}

func (f *fakeWatchdog) Answered(sent time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.session != 0 {
		f.heard = max(f.heard, sent)
	}
}

func heard(t Watchdog) time.Duration {
	f := t.(*fakeWatchdog)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.heard
}

func told(t Watchdog) []string {
	f := t.(*fakeWatchdog)
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.handshakes)
}

// The greatest zxid of any reply header is found however the stream is
// cut into reads; the handshake's session id and notifications' -1 are not
// zxids.
func TestTrackedConnTracksGreatestZxid(t *testing.T) {
	var stream []byte
	stream = append(stream, connectResponse(4000, 0x7fffffffffff)...) // a session id that must not be taken for a zxid
	stream = append(stream, replyFrame(1, 0x100000005, 0, 40)...)
	stream = append(stream, replyFrame(notificationXid, -1, 0, 30)...)
	stream = append(stream, replyFrame(pingXid, 0x100000009, 0, 0)...)
	stream = append(stream, replyFrame(2, 0x100000007, 0, 1000)...)
	const want = 0x100000009

	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 200 {
		var clock fakeClock
		c := &trackedConn{watchdog: newFakeWatchdog(&clock), zxid: new(atomic.Int64)}
		inPieces(rng, stream, 1+trial%64, func(p []byte) { c.read(p, clock.read()) })
		if got := c.zxid.Load(); got != want {
			t.Fatalf("trial %d: zxid %#x, want %#x", trial, got, want)
		}
		if c.in.have != 0 || c.in.skip != 0 || c.in.frames != 5 {
			t.Fatalf("trial %d: scanner at have %d, skip %d after %d frames; want a frame boundary after 5", trial, c.in.have, c.in.skip, c.in.frames)
		}
	}
}

// On the leader's connection, the deadline moves only with the send time
// of requests the server answered: replies are matched to requests by xid, pings in order;
// notifications, replies to nothing and replies that say the session
// expired or moved prove nothing; a late reply does not move it back.
func TestTrackedConnMatchesRepliesToRequests(t *testing.T) {
	const session = 0x1234
	type write struct {
		at    time.Duration
		bytes []byte
	}
	writes := []write{
		{1 * time.Second, connectRequest()},
		{2 * time.Second, requestFrame(1, 30)},
		{3 * time.Second, requestFrame(2, 300)},
		{4 * time.Second, requestFrame(pingXid, 0)},
		{5 * time.Second, requestFrame(pingXid, 0)},
		{6 * time.Second, requestFrame(3, 0)},
		{7 * time.Second, requestFrame(4, 0)},
	}
	reads := []struct {
		what  string
		bytes []byte
		heard time.Duration // the send time the deadline counts from after it
	}{
		{"handshake answer", connectResponse(hourMs, session), 1 * time.Second},
		{"notification", replyFrame(notificationXid, -1, 0, 20), 1 * time.Second},
		{"reply to request 2", replyFrame(2, 10, 0, 50), 3 * time.Second},
		{"late reply to request 1", replyFrame(1, 9, 0, 0), 3 * time.Second},
		{"reply to request 1 again", replyFrame(1, 9, 0, 0), 3 * time.Second},
		{"reply to an unknown xid", replyFrame(99, 11, 0, 0), 3 * time.Second},
		{"first ping answered", replyFrame(pingXid, 11, 0, 0), 4 * time.Second},
		{"request 4: session expired", replyFrame(4, 11, errSessionExpired, 0), 4 * time.Second},
		{"request 3: session moved", replyFrame(3, 11, errSessionMoved, 0), 4 * time.Second},
		{"second ping answered", replyFrame(pingXid, 11, 0, 0), 5 * time.Second},
		{"a third ping answer, for no ping", replyFrame(pingXid, 11, 0, 0), 5 * time.Second},
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 100 {
		var clock fakeClock
		c := &trackedConn{watchdog: newFakeWatchdog(&clock), zxid: new(atomic.Int64)}
		c.confirmLeader(0) // the leader's connection: every answer counts
		for _, w := range writes {
			clock.set(w.at)
			inPieces(rng, w.bytes, 1+trial%20, func(p []byte) {
				c.wrote(p, clock.read())
				clock.advance(time.Millisecond) // later pieces of a frame go out later
			})
		}
		if h := told(c.watchdog); len(h) != 0 {
			t.Fatalf("trial %d: handshakes %v told before the server said a word", trial, h)
		}
		for _, r := range reads {
			inPieces(rng, r.bytes, 1+trial%20, func(p []byte) { c.read(p, clock.read()) })
			if got := heard(c.watchdog); got != r.heard {
				t.Fatalf("trial %d: after the %s, heard at %v, want %v", trial, r.what, got, r.heard)
			}
		}
		if h := told(c.watchdog); len(h) != 1 {
			t.Fatalf("trial %d: handshakes told %v, want the one answered", trial, h)
		}
	}
}

// Connecting is not hearing: a connection whose handshake is never
// answered tells the watchdog nothing; one answered tells it the send time
// of its connect request and the session the server named, 0 when the
// server says the session expired (what the watchdog makes of it:
// TestTrustHandshakes, in package engine).
func TestTrackedConnHandshake(t *testing.T) {
	var clock fakeClock
	tr := newFakeWatchdog(&clock)

	silent := &trackedConn{watchdog: tr, zxid: new(atomic.Int64)}
	clock.set(time.Second)
	silent.wrote(connectRequest(), clock.read())
	clock.set(2 * time.Second)
	if h := told(tr); len(h) != 0 {
		t.Fatalf("handshakes %v told with a connect request sent and never answered", h)
	}
	first := &trackedConn{watchdog: tr, zxid: new(atomic.Int64)}
	first.wrote(connectRequest(), clock.read())
	first.read(connectResponse(hourMs, 0x10), clock.read())
	clock.set(3 * time.Second)
	expired := &trackedConn{watchdog: tr, zxid: new(atomic.Int64)}
	expired.wrote(connectRequest(), clock.read())
	expired.read(connectResponse(hourMs, 0), clock.read())
	clock.set(4 * time.Second)
	renewed := &trackedConn{watchdog: tr, zxid: new(atomic.Int64)}
	renewed.wrote(connectRequest(), clock.read())
	renewed.read(connectResponse(hourMs, 0x11), clock.read())
	if h, want := told(tr), []string{"2s 0x10", "3s 0x0", "4s 0x11"}; !slices.Equal(h, want) {
		t.Fatalf("handshakes told %v, want %v", h, want)
	}
}

// A server not known to be the leader proves nothing by its replies: a
// follower answers pings on its own and passes the session's touches on
// to the leader later, if it can. Only its handshake (which it answers
// after the leader revalidated the session) moves the deadline. Once the
// server is known to be the leader, from an instant on, the replies to
// requests sent from then on count; earlier ones still do not.
func TestTrackedConnCountsOnlyTheLeadersReplies(t *testing.T) {
	var clock fakeClock
	tr := newFakeWatchdog(&clock)
	c := &trackedConn{watchdog: tr, zxid: new(atomic.Int64)}

	clock.set(time.Second)
	c.wrote(connectRequest(), clock.read())
	c.read(connectResponse(hourMs, 0x10), clock.read())
	for i, at := range []time.Duration{2 * time.Second, 3 * time.Second} {
		clock.set(at)
		c.wrote(requestFrame(pingXid, 0), clock.read())
		c.wrote(requestFrame(int32(i+1), 10), clock.read())
	}
	c.read(replyFrame(pingXid, 5, 0, 0), clock.read())
	c.read(replyFrame(1, 5, 0, 0), clock.read())
	if got := heard(tr); got != time.Second {
		t.Fatalf("a follower's replies moved the deadline: heard at %v, want the handshake's 1s", got)
	}

	c.confirmLeader(3500 * time.Millisecond)
	clock.set(4 * time.Second)
	c.wrote(requestFrame(3, 10), clock.read())
	c.read(replyFrame(pingXid, 6, 0, 0), clock.read()) // sent at 3s, before the role was known
	c.read(replyFrame(2, 6, 0, 0), clock.read())       // likewise
	if got := heard(tr); got != time.Second {
		t.Fatalf("heard at %v after replies to requests sent before the role was known, want 1s", got)
	}
	c.read(replyFrame(3, 7, 0, 0), clock.read())
	if got := heard(tr); got != 4*time.Second {
		t.Fatalf("heard at %v after the leader answered a request sent at 4s, want 4s", got)
	}
}

// Through a server not known to be the leader, a sync's answer proves a
// touch at the leader only through a chain: the answer to sync j proves
// the leader touched the session after sync k was sent when the sync
// before j was sent at least a gap after k's answer (sync.go). Nothing
// else a follower answers moves the deadline.
func TestTrackedConnSyncChain(t *testing.T) {
	var clock fakeClock
	tr := newFakeWatchdog(&clock)
	c := &trackedConn{watchdog: tr, zxid: new(atomic.Int64)}
	const gap = 48 * time.Minute / 4 // fakeWatchdog's lifetime / 4: no tick known
	c.wrote(connectRequest(), clock.read())
	c.read(connectResponse(hourMs, 0x10), clock.read())
	round := func(sent, answered time.Duration) {
		clock.set(sent)
		c.wrote(syncRequest, clock.read())
		clock.set(answered)
		c.read(replyFrame(syncXid, 5, 0, 3), clock.read())
	}
	round(1*time.Minute, 2*time.Minute)
	round(3*time.Minute, 4*time.Minute)
	round(5*time.Minute, 6*time.Minute)
	if got := heard(tr); got != 0 {
		t.Fatalf("syncs closer than a gap moved the deadline to %v", got)
	}
	// Sync 4 is sent more than a gap after sync 1's answer; sync 5, sent
	// after 4's answer, proves sync 1.
	round(2*time.Minute+gap, 2*time.Minute+gap+time.Second)
	if got := heard(tr); got != 0 {
		t.Fatalf("the chain's middle sync alone moved the deadline to %v", got)
	}
	round(3*time.Minute+gap, 3*time.Minute+gap+time.Second)
	if got := heard(tr); got != time.Minute {
		t.Fatalf("heard at %v after the chain closed, want sync 1's send time 1m0s", got)
	}
	// A sync answered with an error proves nothing and breaks no chain.
	clock.set(4*time.Minute + gap)
	c.wrote(syncRequest, clock.read())
	c.read(replyFrame(syncXid, 5, errSessionMoved, 0), clock.read())
	if got := heard(tr); got != time.Minute {
		t.Fatalf("a sync answered with session moved moved the deadline to %v", got)
	}
	round(5*time.Minute+gap, 5*time.Minute+gap+time.Second) // the sync before it was sent at 3m+gap
	if got := heard(tr); got != time.Minute {
		t.Fatalf("heard at %v, want still sync 1's send time 1m0s", got)
	}
	round(6*time.Minute+gap, 6*time.Minute+gap+time.Second) // the sync before it was sent at 5m+gap
	if got := heard(tr); got != 3*time.Minute {
		t.Fatalf("heard at %v, want sync 2's send time 3m0s", got)
	}
}

// The keeper never closes a follower's connection that answers: it sends
// syncs, one at a time, a quarter gap after the last answer, and closes
// only a silent connection.
func TestKeeperSyncsAFollowerAndNeverRenews(t *testing.T) {
	var clock fakeClock
	tr := newFakeWatchdog(&clock)
	c := &trackedConn{watchdog: tr, zxid: new(atomic.Int64)}
	c.lastRead.Store(0)
	c.wrote(connectRequest(), clock.read())
	c.read(connectResponse(hourMs, 0x10), clock.read())
	life := tr.Lifetime()
	syncs := 0
	for clock.read() < 10*life {
		clock.advance(c.keepWait())
		why, ping, sync := c.keepLook()
		if why != "" || ping {
			t.Fatalf("at %v: keeper closes (%q) or pings (%v) a follower that answers", clock.read(), why, ping)
		}
		if sync {
			syncs++
			c.wrote(syncRequest, clock.read())
			c.lastRead.Store(int64(clock.read()))
			c.read(replyFrame(syncXid, 5, 0, 3), clock.read())
		}
	}
	if syncs < 10 {
		t.Fatalf("%d syncs over ten lifetimes", syncs)
	}
	if heard(tr) <= time.Second {
		t.Fatalf("the syncs never moved the deadline (heard at %v)", heard(tr))
	}
	// A sync unanswered for a quarter lifetime: the server is given up.
	for clock.read() < 12*life {
		clock.advance(c.keepWait())
		why, _, sync := c.keepLook()
		if sync {
			c.wrote(syncRequest, clock.read())
		}
		if why != "" {
			return
		}
	}
	t.Fatal("the keeper kept a connection whose sync went unanswered")
}
