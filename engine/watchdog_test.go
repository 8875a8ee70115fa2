package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// The watchdog loses held leases itself once the deadline (the send time
// of the latest answered request + 0.8 × the granted timeout here) has
// passed, refuses grants from then on, and trusts again when a request
// sent in time is answered; leases lost stay lost.
func TestTrustLapsesAtDeadlineAndComesBack(t *testing.T) {
	var clock fakeClock
	var lapses []bool
	tr := newTestWatchdog(&clock, &lapses)
	defer tr.stop()
	clock.set(10 * time.Second)
	tr.Handshake(10*time.Second, 0x10, hourMs)
	deadline := 10*time.Second + 48*time.Minute

	held := &Lease{}
	if !tr.admit(held, 0x10) {
		t.Fatal("not trusted after the handshake was answered")
	}
	clock.set(deadline - time.Nanosecond)
	tr.check()
	if closedChan(held.Lost()) || !tr.admit(&Lease{}, 0x10) {
		t.Fatal("lost before the deadline")
	}
	clock.set(deadline)
	tr.check()
	if !closedChan(held.Lost()) || !errors.Is(held.Err(), ErrLost) {
		t.Fatalf("at the deadline: lost=%v err=%v, want Lost() closed with ErrLost", closedChan(held.Lost()), held.Err())
	}
	if tr.admit(&Lease{}, 0x10) {
		t.Fatal("granted after the deadline")
	}

	tr.Answered(10 * time.Second) // a late reply to a request sent long ago
	if tr.admit(&Lease{}, 0x10) {
		t.Fatal("trusted again on a reply to a request sent before the last one heard")
	}
	tr.Answered(deadline - time.Second) // sent a second before the lapse
	again := &Lease{}
	if !tr.admit(again, 0x10) {
		t.Fatal("not trusted again when a request sent in time is answered")
	}
	if held.Err() == nil {
		t.Fatal("a lost lease came back")
	}
	if want := []bool{false, true, false}; !slices.Equal(lapses, want) {
		t.Fatalf("trust changes %v, want %v", lapses, want)
	}
}

// until tells the deadline as a time: as far ahead of now as the deadline
// is ahead of the clock, later with each answer, and the zero Time once
// trust lapsed.
func TestTrustUntilIsTheDeadline(t *testing.T) {
	var clock fakeClock
	var lapses []bool
	tr := newTestWatchdog(&clock, &lapses)
	defer tr.stop()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := tr.until(now); !got.IsZero() {
		t.Fatalf("before any session: until %v, want the zero Time", got)
	}
	clock.set(10 * time.Second)
	tr.Handshake(10*time.Second, 0x10, hourMs)
	clock.set(20 * time.Second)
	if got, want := tr.until(now), now.Add(48*time.Minute-10*time.Second); !got.Equal(want) {
		t.Fatalf("until %v, want %v (the deadline, 48m after the handshake was sent, less the 10s since)", got, want)
	}
	tr.Answered(15 * time.Second)
	if got, want := tr.until(now), now.Add(48*time.Minute-5*time.Second); !got.Equal(want) {
		t.Fatalf("after an answer to a request sent at 15s: until %v, want %v", got, want)
	}
	clock.set(15*time.Second + 48*time.Minute)
	if got := tr.until(now); !got.IsZero() {
		t.Fatalf("at the deadline: until %v, want the zero Time", got)
	}
	tr.check()
	if got := tr.until(now); !got.IsZero() {
		t.Fatalf("after the lapse: until %v, want the zero Time", got)
	}
}

// A grant decided after the deadline but before the timer ran (or before
// the loop heard of it) is refused, and the lapse happens then.
func TestTrustAdmitReadsTheClock(t *testing.T) {
	var clock fakeClock
	var lapses []bool
	tr := newTestWatchdog(&clock, &lapses)
	defer tr.stop()
	tr.Handshake(0, 0x10, hourMs)
	held := &Lease{}
	tr.admit(held, 0x10)
	clock.set(48 * time.Minute)
	if tr.admit(&Lease{}, 0x10) {
		t.Fatal("admitted at the deadline")
	}
	if !closedChan(held.Lost()) || !slices.Equal(lapses, []bool{false, true}) {
		t.Fatalf("refused without the lapse: lost=%v changes=%v", closedChan(held.Lost()), lapses)
	}
}

// A grant is admitted only in the session the watchdog follows: once a
// new session's handshake is answered, a grant the loop decided on a reply
// of the old one (it has not heard of the expiry yet) is refused, though
// the new session is trusted.
func TestTrustAdmitsOnlyItsSession(t *testing.T) {
	var clock fakeClock
	var lapses []bool
	tr := newTestWatchdog(&clock, &lapses)
	defer tr.stop()
	tr.Handshake(0, 0x10, hourMs)
	if !tr.admit(&Lease{}, 0x10) || !tr.follows(0x10) {
		t.Fatal("the session of the handshake is not trusted")
	}
	clock.set(time.Minute)
	tr.Handshake(time.Minute, 0x11, hourMs) // the old session expired; a new one
	if tr.admit(&Lease{}, 0x10) || tr.follows(0x10) {
		t.Fatal("a grant in the old session admitted after a new session's handshake")
	}
	if !tr.admit(&Lease{}, 0x11) {
		t.Fatal("the new session is not trusted")
	}
}

// Without a readable granted timeout the watchdog never assumes more than
// the server can have granted: the smaller of the timeout asked for and
// the smallest granted before.
func TestTrustTimeoutWhenUnread(t *testing.T) {
	var clock fakeClock
	var lapses []bool
	tr := newTestWatchdog(&clock, &lapses) // asks for an hour
	defer tr.stop()
	session := int64(0x10)
	for _, c := range []struct {
		ms   int32
		want time.Duration
	}{
		{0, time.Hour},
		{int32(30 * time.Minute / time.Millisecond), 30 * time.Minute},
		{0, 30 * time.Minute},
		{int32(40 * time.Minute / time.Millisecond), 40 * time.Minute},
		{0, 30 * time.Minute},
	} {
		session++ // each a session of its own: within one, the smallest grant stays
		tr.Handshake(0, session, c.ms)
		if got := grantedTimeout(tr); got != c.want {
			t.Fatalf("after a handshake granting %dms: timeout %v, want %v", c.ms, got, c.want)
		}
	}
}

func grantedTimeout(t *watchdog) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.timeout
}

// A step back of the wall clock does not delay Lost(): the deadline is
// measured on the monotonic clock. The clock here is the engine's own,
// read through a time.Now whose wall-clock reading jumps back an hour
// right after the session is trusted.
func TestTrustIgnoresWallClockSteps(t *testing.T) {
	var stepped atomic.Bool
	now := func() time.Time {
		n := time.Now()
		if stepped.Load() {
			n = wallSteppedBack(t, n, time.Hour)
		}
		return n
	}
	start := now()
	clock := monotonicSince(now)
	var mu sync.Mutex
	var lapses []bool
	tr := newWatchdog(clock, time.Second, 200*time.Millisecond, func(lapsed, _ bool, _ time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		lapses = append(lapses, lapsed)
	})
	defer tr.stop()
	tr.Handshake(clock(), 0x10, 300) // trusted for 240ms from now
	held := &Lease{}
	if !tr.admit(held, 0x10) {
		t.Fatal("not trusted after the handshake")
	}
	stepped.Store(true)
	if wall := now().Sub(start.Round(0)); wall > -59*time.Minute {
		t.Fatalf("the wall clock reads %v since the start: the step did not happen", wall)
	}
	if elapsed := clock(); elapsed < 0 {
		t.Fatalf("the engine's clock went back to %v with the wall clock", elapsed)
	}
	select {
	case <-held.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("Lost() not closed 30s after a 240ms deadline: the wall clock's step back delayed it")
	}
	tr.stop() // the lapse has told the loop once stop returns
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(lapses, []bool{false, true}) {
		t.Fatalf("trust changes %v, want trusted then lapsed", lapses)
	}
}

// wallSteppedBack is t with its wall-clock reading moved back by d (whole
// seconds) and its monotonic reading kept: what time.Now returns once the
// system clock has been stepped back by d. No API makes such a reading, so
// this edits the fields of time.Time (wall: a has-monotonic bit, 33 bits of
// seconds, 30 bits of nanoseconds; ext: the monotonic reading) and checks
// that the result reads as intended, failing if that layout ever changes.
func wallSteppedBack(tb testing.TB, t time.Time, d time.Duration) time.Time {
	type timeFields struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	const hasMonotonic, nsecBits = 1 << 63, 30
	if unsafe.Sizeof(t) != unsafe.Sizeof(timeFields{}) || (*timeFields)(unsafe.Pointer(&t)).wall&hasMonotonic == 0 {
		tb.Fatal("time.Time no longer has the layout this test edits")
	}
	stepped := t
	(*timeFields)(unsafe.Pointer(&stepped)).wall -= uint64(d/time.Second) << nsecBits
	if stepped.Sub(t) != 0 || t.UnixNano()-stepped.UnixNano() != int64(d) {
		tb.Fatalf("time.Time no longer has the layout this test edits: stepped %v from %v", stepped, t)
	}
	return stepped
}

// The engine reads the session timeout the server granted from the
// handshake, whatever it asked for: a server whose maxSessionTimeout is
// below the request grants less, one whose minSessionTimeout is above it
// grants more. Were the value not read, the deadline would use the
// requested 20s against a server that expires the session after 2s.
func TestTrustReadsGrantedTimeout(t *testing.T) {
	srv := zkserver.StartT(t, zkserver.Options{MinSessionTimeout: time.Second, MaxSessionTimeout: 2 * time.Second})
	for _, c := range []struct{ asked, want time.Duration }{
		{20 * time.Second, 2 * time.Second},
		{600 * time.Millisecond, time.Second},
	} {
		e, err := Start(context.Background(), Config{Servers: []string{srv.Addr()}, SessionTimeout: c.asked})
		if err != nil {
			t.Fatal(err)
		}
		got := grantedTimeout(e.watchdog)
		e.Close()
		if got != c.want {
			t.Errorf("asked %v of a server granting 1s to 2s: the engine uses %v, want %v", c.asked, got, c.want)
		}
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

func newTestWatchdog(clock *fakeClock, lapses *[]bool) *watchdog {
	return newWatchdog(clock.read, time.Hour, 12*time.Minute, func(lapsed, _ bool, _ time.Duration) {
		*lapses = append(*lapses, lapsed)
	})
}

func heard(t *watchdog) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.heard
}

func closedChan(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// What a handshake tells the watchdog: trust from its send time, in the
// session it names; none at all when it names none (the server says the
// session expired), and every held lease lost; a new session trusted from
// its own handshake on. (What a connection tells it: TestTrackedConnHandshake
// in engine/internal/serverconn.)
func TestTrustHandshakes(t *testing.T) {
	var clock fakeClock
	var lapses []bool
	tr := newTestWatchdog(&clock, &lapses)
	defer tr.stop()
	clock.set(2 * time.Second)
	if tr.admit(&Lease{}, 0x10) || len(lapses) != 0 {
		t.Fatalf("trusted (changes %v) before any handshake", lapses)
	}
	tr.Handshake(2*time.Second, 0x10, hourMs)
	held := &Lease{}
	if !tr.admit(held, 0x10) || heard(tr) != 2*time.Second {
		t.Fatalf("not trusted from the answered handshake sent at 2s (heard at %v)", heard(tr))
	}
	clock.set(3 * time.Second)
	tr.Handshake(3*time.Second, 0, hourMs)
	if tr.admit(&Lease{}, 0x10) || !closedChan(held.Lost()) {
		t.Fatal("still trusted, or the held lease not lost, after the server said the session expired")
	}
	clock.set(4 * time.Second)
	tr.Handshake(4*time.Second, 0x11, hourMs)
	if !tr.admit(&Lease{}, 0x11) || heard(tr) != 4*time.Second {
		t.Fatalf("a new session is not trusted from its handshake (heard at %v)", heard(tr))
	}
	if want := []bool{false, true, false}; !slices.Equal(lapses, want) {
		t.Fatalf("trust changes %v, want %v", lapses, want)
	}
}

// A session's timeout is the smallest any of its handshakes granted: each
// server grants within bounds of its own, and the leader expires the
// session that long after the touch a follower the client left still
// forwards, with the timeout of its connection. A new session starts
// afresh.
func TestTrustKeepsTheSessionsSmallestTimeout(t *testing.T) {
	var clock fakeClock
	var lapses []bool
	tr := newTestWatchdog(&clock, &lapses) // asks for an hour, margin 12 minutes
	defer tr.stop()
	tr.Handshake(0, 0x10, hourMs)
	if got, want := tr.Lifetime(), 48*time.Minute; got != want {
		t.Fatalf("lifetime %v after an hour's grant, want %v", got, want)
	}
	tr.Handshake(time.Second, 0x10, 2*hourMs) // another server grants two hours
	if got, want := tr.Lifetime(), 48*time.Minute; got != want {
		t.Fatalf("lifetime %v after a second handshake of the session granted two hours, want %v: the hour still bounds it", got, want)
	}
	tr.Handshake(2*time.Second, 0x11, 2*hourMs)
	if got, want := tr.Lifetime(), 96*time.Minute; got != want {
		t.Fatalf("lifetime %v of a new session granted two hours, want %v", got, want)
	}
}
