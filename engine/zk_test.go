package engine

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
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

// The granted timeout and deadlines in these tests are an hour long, so
// that the watchdog's real timer never fires while they run: they call
// check themselves.
const hourMs = int32(time.Hour / time.Millisecond)

func newTestTrust(clock *fakeClock, lapses *[]bool) *sessionTrust {
	return newSessionTrust(clock.read, time.Hour, 12*time.Minute, func(lapsed bool) {
		*lapses = append(*lapses, lapsed)
	})
}

func heard(t *sessionTrust) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.heard
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
		var lapses []bool
		c := &trackedConn{trust: newTestTrust(&clock, &lapses), zxid: new(atomic.Int64)}
		inPieces(rng, stream, 1+trial%64, c.read)
		if got := c.zxid.Load(); got != want {
			t.Fatalf("trial %d: zxid %#x, want %#x", trial, got, want)
		}
		if c.in.have != 0 || c.in.skip != 0 || c.in.frames != 5 {
			t.Fatalf("trial %d: scanner at have %d, skip %d after %d frames; want a frame boundary after 5", trial, c.in.have, c.in.skip, c.in.frames)
		}
		c.trust.stop()
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
		var lapses []bool
		c := &trackedConn{trust: newTestTrust(&clock, &lapses), zxid: new(atomic.Int64)}
		c.confirmLeader(0) // the leader's connection: every answer counts
		for _, w := range writes {
			clock.set(w.at)
			inPieces(rng, w.bytes, 1+trial%20, func(p []byte) {
				c.wrote(p, clock.read())
				clock.advance(time.Millisecond) // later pieces of a frame go out later
			})
		}
		if c.trust.admit(&Lease{}, 0x10) {
			t.Fatalf("trial %d: trusted before the server said a word", trial)
		}
		for _, r := range reads {
			inPieces(rng, r.bytes, 1+trial%20, c.read)
			if got := heard(c.trust); got != r.heard {
				t.Fatalf("trial %d: after the %s, heard at %v, want %v", trial, r.what, got, r.heard)
			}
		}
		if len(lapses) != 1 || lapses[0] {
			t.Fatalf("trial %d: trust changes %v, want one: trusted at the handshake", trial, lapses)
		}
		c.trust.stop()
	}
}

// Connecting is not hearing: a connection whose handshake is never
// answered trusts nothing; a handshake answered with no session (the
// server says it expired) ends trust at once; a new session is trusted
// from its own handshake on.
func TestTrackedConnHandshake(t *testing.T) {
	var clock fakeClock
	var lapses []bool
	tr := newTestTrust(&clock, &lapses)
	defer tr.stop()

	silent := &trackedConn{trust: tr, zxid: new(atomic.Int64)}
	clock.set(time.Second)
	silent.wrote(connectRequest(), clock.read())
	clock.set(2 * time.Second)
	if tr.admit(&Lease{}, 0x10) || len(lapses) != 0 {
		t.Fatalf("trusted (changes %v) with a handshake sent and never answered", lapses)
	}

	first := &trackedConn{trust: tr, zxid: new(atomic.Int64)}
	first.wrote(connectRequest(), clock.read())
	first.read(connectResponse(hourMs, 0x10))
	held := &Lease{}
	if !tr.admit(held, 0x10) || heard(tr) != 2*time.Second {
		t.Fatalf("not trusted from the answered handshake sent at 2s (heard at %v)", heard(tr))
	}

	clock.set(3 * time.Second)
	expired := &trackedConn{trust: tr, zxid: new(atomic.Int64)}
	expired.wrote(connectRequest(), clock.read())
	expired.read(connectResponse(hourMs, 0))
	if tr.admit(&Lease{}, 0x10) || !closedChan(held.Lost()) {
		t.Fatal("still trusted, or the held lease not lost, after the server said the session expired")
	}

	clock.set(4 * time.Second)
	renewed := &trackedConn{trust: tr, zxid: new(atomic.Int64)}
	renewed.wrote(connectRequest(), clock.read())
	renewed.read(connectResponse(hourMs, 0x11))
	if !tr.admit(&Lease{}, 0x11) || heard(tr) != 4*time.Second {
		t.Fatalf("a new session is not trusted from its handshake (heard at %v)", heard(tr))
	}
	if want := []bool{false, true, false}; !slices.Equal(lapses, want) {
		t.Fatalf("trust changes %v, want %v", lapses, want)
	}
}

func closedChan(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
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
	var lapses []bool
	tr := newTestTrust(&clock, &lapses)
	defer tr.stop()
	c := &trackedConn{trust: tr, zxid: new(atomic.Int64)}

	clock.set(time.Second)
	c.wrote(connectRequest(), clock.read())
	c.read(connectResponse(hourMs, 0x10))
	for i, at := range []time.Duration{2 * time.Second, 3 * time.Second} {
		clock.set(at)
		c.wrote(requestFrame(pingXid, 0), clock.read())
		c.wrote(requestFrame(int32(i+1), 10), clock.read())
	}
	c.read(replyFrame(pingXid, 5, 0, 0))
	c.read(replyFrame(1, 5, 0, 0))
	if got := heard(tr); got != time.Second {
		t.Fatalf("a follower's replies moved the deadline: heard at %v, want the handshake's 1s", got)
	}

	c.confirmLeader(3500 * time.Millisecond)
	clock.set(4 * time.Second)
	c.wrote(requestFrame(3, 10), clock.read())
	c.read(replyFrame(pingXid, 6, 0, 0)) // sent at 3s, before the role was known
	c.read(replyFrame(2, 6, 0, 0))       // likewise
	if got := heard(tr); got != time.Second {
		t.Fatalf("heard at %v after replies to requests sent before the role was known, want 1s", got)
	}
	c.read(replyFrame(3, 7, 0, 0))
	if got := heard(tr); got != 4*time.Second {
		t.Fatalf("heard at %v after the leader answered a request sent at 4s, want 4s", got)
	}
}
