package engine

import (
	"cmp"
	"maps"
	"math/bits"
	"slices"
	"sync"
	"time"
)

// watchdog is the engine's watchdog over its session. It knows until
// when the server cannot have expired the session, closes the Lost channel
// of every held lease itself when that moment passes, and then tells the
// loop; it needs nothing from the loop to do so, so a loop busy for seconds
// delays no loss.
//
// Only the leader expires a session, once its tracker has not been
// touched for the session timeout it granted. A request touches the
// session there before it is answered if the leader itself answers it,
// or if it is a handshake (a follower revalidates the session with the
// leader before it answers); through a follower, a chain of syncs proves
// a touch after the first of them was sent (serverconn's sync.go); a
// follower's other answers prove nothing about the leader's clock. Hence
// the deadline:
//
//	send time of the latest such request answered
//	  + granted timeout − LostMargin × granted timeout / SessionTimeout
//
// measured on the monotonic clock. Requests are the client's own requests,
// its pings and the connect handshake of each connection; replies are
// matched to them by xid, and counted on a connection whose server is
// known to be the leader, or through a closed chain of syncs (see
// engine/internal/serverconn, which also learns the servers' roles and
// keeps the deadline ahead). What proves nothing
// does not count: a connection that was merely opened (connecting is not
// hearing), a watch notification, a reply to no request of this
// connection, a reply that says the session expired or moved.
type watchdog struct {
	clock func() time.Duration // monotonic time, see monotonicClock
	asked time.Duration        // Config.SessionTimeout
	// margin is Config.LostMargin, for a session timeout of asked. It
	// covers the time the holder needs to notice Lost() and stop, timer
	// lateness, and drift between the client's and the server's clocks. It
	// scales with the timeout the server grants, staying the same share of
	// it: kept as a duration, a server granting far less than asked (its
	// maxSessionTimeout) would leave a margin longer than the timeout
	// itself, and no lease would ever be trusted.
	margin time.Duration
	// changed tells the loop that trust lapsed (true) or came back, and,
	// with a lapse, whether it lapsed because the server said the session
	// expired, and the margin then (the holders' time to stop). It is
	// called with mu held, so the loop hears of changes in the order they
	// happened, and it must not block.
	changed func(lapsed, expired bool, margin time.Duration)

	mu      sync.Mutex
	session int64 // the session the latest answered handshake named; 0 when none
	// timeout is the smallest session timeout any handshake of session
	// timeout: each server grants within its own [minSessionTimeout,
	// maxSessionTimeout], and the leader sets the session's expiry at
	// every touch from the timeout that touch carries. A follower the
	// client left forwards, with its next ping reply, a touch carrying
	// the timeout its connection had, so the leader may expire the
	// session that long after that touch, however much longer a later
	// handshake elsewhere timeout.
	timeout time.Duration
	// lifetime is how long after heard the session is trusted: granted
	// less the margin scaled to it.
	lifetime time.Duration
	// smallest is the smallest timeout any handshake granted this engine:
	// the server's maxSessionTimeout is at least that small when it is below
	// what was asked. See timeoutOf.
	smallest time.Duration
	heard    time.Duration // when the latest request the server answered for session was sent
	// lapsed: the deadline has passed, or there is no session. No lease may
	// be granted meanwhile; held ones are lost.
	lapsed bool
	held   map[*Lease]struct{} // granted leases not yet lost or ended
	timer  timer               // fires at the deadline, or later: see check
	// afterFunc arms timer: time.AfterFunc, or the simulator's.
	afterFunc func(d time.Duration, f func()) timer
	stopped   bool
}

// monotonicClock returns a clock that reads the time elapsed since it was
// made, on the monotonic clock.
func monotonicClock() func() time.Duration { return monotonicSince(time.Now) }

// monotonicSince reads now's time elapsed since its first reading. A
// time.Now reading carries the monotonic clock and Sub of two such readings
// uses it, so a step of the wall clock (NTP, an operator, a resumed VM)
// neither brings the deadline closer nor pushes it away. Never compute the
// deadline from wall-clock readings (UnixNano, decoded or rounded times): a
// step back of the wall clock would delay every loss by the step.
func monotonicSince(now func() time.Time) func() time.Duration {
	start := now()
	return func() time.Duration { return now().Sub(start) }
}

func newWatchdog(clock func() time.Duration, asked, margin time.Duration, changed func(lapsed, expired bool, margin time.Duration)) *watchdog {
	return &watchdog{
		clock:     clock,
		asked:     asked,
		margin:    margin,
		changed:   changed,
		lapsed:    true, // no session yet
		afterFunc: realAfterFunc,
		held:      make(map[*Lease]struct{}),
	}
}

// sessionID is the session the latest answered handshake named; 0 when
// none. The client reports a new session after the handshake that made it
// was read, so the runtime takes the session of that report from here.
func (t *watchdog) sessionID() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

// Handshake is the server's answer to the connect request sent at sent: a
// session (0: the server says the session expired) and the timeout it
// granted, in milliseconds (0 when the answer did not carry one).
func (t *watchdog) Handshake(sent time.Duration, session int64, timeoutMs int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	if session == 0 {
		// The server said so: the leases are lost to the expiry.
		t.lapse(ErrSessionExpired)
		t.session = 0
		return
	}
	if session != t.session {
		// A new session: whatever was held is the old session's, whose
		// nodes are gone. Its deadline passed long ago (the server expired
		// it), so this lapse has normally happened already.
		t.lapse(ErrSessionExpired)
		t.session, t.heard, t.timeout = session, sent, 0
	}
	if g := t.timeoutOf(timeoutMs); t.timeout == 0 || g < t.timeout {
		t.timeout = g
	}
	// margin × granted / asked, rounded up, in 128 bits: the product of
	// two durations overflows 64. The quotient is below granted, as
	// margin is below asked (Config checks it), so it fits.
	hi, lo := bits.Mul64(uint64(t.margin), uint64(t.timeout))
	scaled, rem := bits.Div64(hi, lo, uint64(t.asked))
	if rem > 0 {
		scaled++
	}
	t.lifetime = t.timeout - time.Duration(scaled)
	t.heardAt(sent)
}

// Answered records the reply to a request sent at sent.
func (t *watchdog) Answered(sent time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || t.session == 0 {
		return
	}
	t.heardAt(sent)
}

// heardAt moves the deadline to what a request answered after being sent
// at sent proves, and restores trust if that deadline is still ahead: the
// same session answers again, so waiters may be granted once more. Leases
// lost meanwhile stay lost. mu is held.
func (t *watchdog) heardAt(sent time.Duration) {
	t.heard = max(t.heard, sent)
	if !t.lapsed {
		return // the timer, when it fires, finds the later deadline
	}
	left := t.deadline() - t.clock()
	if left <= 0 {
		return
	}
	t.lapsed = false
	if t.timer == nil {
		t.timer = t.afterFunc(left, t.check)
	} else {
		t.timer.Reset(left)
	}
	t.changed(false, false, 0)
}

// timeoutOf is the session timeout a handshake granted. When the
// handshake carried none that can be read, it is the smaller of the
// timeout asked for and the smallest any handshake of this engine granted:
// the server grants what was asked, clamped to its [minSessionTimeout,
// maxSessionTimeout]. It grants less only when its maximum is smaller,
// and a grant read earlier is an upper bound on that maximum. Anything
// larger could be more than the server granted, and the deadline would
// then fall after the server may expire the session.
func (t *watchdog) timeoutOf(ms int32) time.Duration {
	if ms > 0 {
		d := time.Duration(ms) * time.Millisecond
		if t.smallest == 0 || d < t.smallest {
			t.smallest = d
		}
		return d
	}
	d := t.asked
	if t.smallest > 0 && t.smallest < d {
		d = t.smallest
	}
	return d
}

// Clock reads the watchdog's monotonic clock.
func (t *watchdog) Clock() time.Duration { return t.clock() }

// Lifetime is how long after heard the session is trusted: from the
// granted timeout once a handshake was read, else from the one asked.
func (t *watchdog) Lifetime() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lifetime > 0 {
		return t.lifetime
	}
	return t.asked - t.margin
}

// marginNow is the margin, scaled to the granted timeout once known.
func (t *watchdog) marginNow() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.marginLocked()
}

// marginLocked is marginNow with mu held.
func (t *watchdog) marginLocked() time.Duration {
	if t.lifetime > 0 {
		return t.timeout - t.lifetime
	}
	return t.margin
}

// until is the trust deadline as a time read with now: the zero Time
// when the session is not trusted.
func (t *watchdog) until(now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || t.lapsed {
		return time.Time{}
	}
	left := t.deadline() - t.clock()
	if left <= 0 {
		return time.Time{}
	}
	return now.Add(left)
}

// deadline is when the server might expire the session, less the margin,
// on t.clock. mu is held.
func (t *watchdog) deadline() time.Duration {
	return t.heard + t.lifetime
}

// check runs on the timer's own goroutine. Answers move the deadline
// without touching the timer (thousands a second would each reset it), so
// the timer may fire early: it then waits for the rest.
func (t *watchdog) check() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || t.lapsed {
		return
	}
	if left := t.deadline() - t.clock(); left > 0 {
		t.timer.Reset(left)
		return
	}
	t.lapse(ErrLost)
}

// lapse ends trust: every held lease is lost at once, with cause (ErrLost
// when the deadline passed, ErrSessionExpired when the server said the
// session expired), then the loop is told. mu is held.
//
// The leases are lost in the order of their ids (the order the core took
// their acquisitions in), not the held map's, which is random on each
// run: whoever watches several leases sees them lost in an order that
// follows from what happened, and the simulator's runs from their seeds.
func (t *watchdog) lapse(cause error) {
	if t.lapsed {
		return
	}
	t.lapsed = true
	held := slices.SortedFunc(maps.Keys(t.held), func(a, b *Lease) int { return cmp.Compare(a.id, b.id) })
	for _, l := range held {
		l.markLost(cause)
	}
	clear(t.held)
	t.changed(true, cause == ErrSessionExpired, t.marginLocked())
}

// admit registers a lease about to be granted in session, the session the
// loop knows, so that a lapse loses it; false when the session is not
// trusted now, and then no one may be granted. It reads the clock too: the
// timer may not have run yet although the deadline has passed, or the loop
// may have decided the grant before it heard of a lapse.
//
// It is false as well when the session trusted now is not session: the
// loop has not yet heard that session end, so the reply that decided the
// grant may be one of the old session, whose nodes the server removed
// when it expired it, and another client may hold the lock already. A new
// session's trust says nothing about the old one's replies.
func (t *watchdog) admit(l *Lease, session int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || t.lapsed || session != t.session {
		return false
	}
	if t.clock() >= t.deadline() {
		t.lapse(ErrLost)
		return false
	}
	t.held[l] = struct{}{}
	return true
}

// follows reports whether session is the one the watchdog follows now.
func (t *watchdog) follows(session int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return session == t.session
}

// forget drops a lease that was lost or has ended.
func (t *watchdog) forget(l *Lease) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.held, l)
}

// stop ends the watch for good: the engine is shutting down.
func (t *watchdog) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
}

// vouches reports whether the watchdog holds l, admitted and not lost, in
// the session it trusts now, and the deadline has not passed: a cohort's
// local pass is a grant, and asks what a grant asks (see admit). A
// deadline passed unnoticed ends trust here, as in admit. now is the time
// it read.
func (t *watchdog) vouches(l *Lease) (ok bool, now time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now = t.clock()
	if _, held := t.held[l]; !held || t.stopped || t.lapsed {
		return false, now
	}
	if now >= t.deadline() {
		t.lapse(ErrLost)
		return false, now
	}
	return true, now
}
