package serverconn

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Which server a connection reaches, and keeping the connection honest.
// Only the leader expires sessions (a standalone server is its own
// leader), so only what reaches the leader's session tracker moves the
// trust deadline: every reply of a server known to be the leader, and the
// handshake of any server (a follower revalidates the session with the
// leader before it answers). See DESIGN.md, "The trust deadline".

// serverMode is a server's role as its srvr four-letter word says.
type serverMode int

const (
	modeUnknown  serverMode = iota // no answer, or one the engine cannot read
	modeFollower                   // a follower or an observer
	modeLeader                     // the leader, or a standalone server
)

func (m serverMode) String() string {
	switch m {
	case modeLeader:
		return "leader"
	case modeFollower:
		return "follower"
	}
	return "unknown"
}

// parseMode reads the "Mode:" line of a srvr answer.
func parseMode(b []byte) serverMode {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "Mode:")
		if !ok {
			continue
		}
		switch strings.TrimSpace(v) {
		case "leader", "standalone":
			return modeLeader
		case "follower", "observer":
			return modeFollower
		}
	}
	return modeUnknown
}

// fourLetter sends a four-letter word to addr through the configured
// dialer, on a connection of its own, and returns the answer. reached,
// if not nil, is called once the connection is made.
func (e *Conns) fourLetter(addr, word string, timeout time.Duration, reached func()) ([]byte, error) {
	c, err := e.cfg.Dialer("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if reached != nil {
		reached()
	}
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, word); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(c, 64<<10))
}

// serverMode asks the server at addr for its role.
func (e *Conns) serverMode(addr string, timeout time.Duration, reached func()) serverMode {
	b, err := e.fourLetter(addr, "srvr", timeout, reached)
	if err != nil && len(b) == 0 {
		return modeUnknown
	}
	return parseMode(b)
}

// pick chooses the address to connect to among Config.Servers when the
// engine prefers the leader (a ProbeGrace), asking each for its role at
// once: the first leader to answer, else a follower (asked, the client's
// own choice, if it answered as one), waiting probeGrace after the first
// follower's answer for a leader's. A leader's replies all move the
// deadline, with no syncs. Asking all at once also passes over
// unreachable servers in one dial timeout, where the client would give
// each its own. When no role came within the dial timeout: a server that
// at least accepted the connection (asked if it did), else asked.
func (e *Conns) pick(asked string) string {
	type answer struct {
		addr    string
		mode    serverMode
		reached bool // only that: the connection was made, the role is to come
	}
	servers := e.cfg.Servers
	answers := make(chan answer, 2*len(servers))
	for _, a := range servers {
		e.bg.Add(1)
		go func() {
			defer e.bg.Done()
			mode := e.serverMode(a, e.cfg.DialTimeout, func() { answers <- answer{addr: a, reached: true} })
			answers <- answer{addr: a, mode: mode}
		}()
	}
	deadline := time.NewTimer(e.cfg.DialTimeout)
	defer deadline.Stop()
	var grace <-chan time.Time
	follower, reached := "", ""
	for left := len(servers); left > 0; {
		select {
		case a := <-answers:
			if a.reached {
				if reached == "" || a.addr == asked {
					reached = a.addr
				}
				continue
			}
			left--
			switch a.mode {
			case modeLeader:
				return a.addr
			case modeFollower:
				if follower == "" || a.addr == asked {
					follower = a.addr
				}
				if grace == nil {
					grace = time.After(e.cfg.ProbeGrace)
				}
			}
		case <-grace:
			return follower
		case <-deadline.C:
			left = 0
		}
	}
	switch {
	case follower != "":
		return follower
	case reached != "":
		return reached
	}
	return asked
}

// probeRole asks the server of c, once its handshake is answered, whether
// it is the leader. The answer is about one instant while c was open, and
// a server changes role only by closing every client connection; so if it
// says leader, it was the leader all the time c is open: every reply on c
// to a request sent after the answer came (so answered after that
// instant, on c still open) is the leader's. An earlier request's is too,
// but a later one's proves more.
func (e *Conns) probeRole(c *trackedConn) {
	defer e.bg.Done()
	timeout := max(e.cfg.DialTimeout, c.watchdog.Lifetime()/4)
	mode := modeUnknown
	for try := 0; try < 2 && mode == modeUnknown; try++ {
		select {
		case <-c.done:
			return
		default:
		}
		mode = e.serverMode(c.addr, timeout, nil)
	}
	if mode == modeLeader {
		c.confirmLeader(c.watchdog.Clock())
	}
	e.cfg.Log.Debug("server role", slog.String("server", c.addr), slog.String("mode", mode.String()))
}

// pingRequest is a ping: length 8, xid −2, opcode 11.
var pingRequest = []byte{0, 0, 0, 8, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 11}

// keep watches the connection until it is closed. It closes it, so that
// the client connects again, when
//   - the server has sent nothing for a quarter of the session's lifetime
//     while a request (or the handshake, or a sync) waits for its answer:
//     the client itself would wait two thirds of the session timeout;
//   - a sync has waited a quarter of the lifetime for its answer, though
//     the server answers other requests: a follower cut from its leader
//     answers pings but no sync;
//   - the server said the session expired (the client leaves that
//     connection open).
//
// Otherwise, on a server known to be the leader, it sends a ping when
// nothing waits for an answer, so that a silent server is noticed, and a
// leader's answer moves the deadline, within a tenth of the lifetime; on
// any other server it sends a sync a quarter gap after the last one was
// answered, whatever else waits, and the chain of their answers moves the
// deadline (sync.go). It never closes a connection that answers: nothing
// suspends a lease on a server that keeps answering.
func (c *trackedConn) keep() {
	e := c.eng
	defer e.bg.Done()
	defer e.conns.remove(c)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		t.Reset(c.keepWait())
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		why, ping, sync := c.keepLook()
		switch {
		case ping:
			c.send(pingRequest)
			continue
		case sync:
			if !c.send(syncRequest) {
				c.mu.Lock()
				c.syncs.out = false // not sent: a ping is being written
				c.mu.Unlock()
			}
			continue
		case why == "":
			continue
		}
		e.cfg.Log.Debug("closing the connection", slog.String("server", c.addr), slog.String("why", why))
		e.hosts.redialAtOnce()
		_ = c.Close()
		return
	}
}

// keepWait is how long the keeper waits before its next look: a tenth of
// the lifetime, or until the next sync is due on a connection to a server
// not known to be the leader, whichever comes first.
func (c *trackedConn) keepWait() time.Duration {
	life := c.watchdog.Lifetime()
	wait := life / 10
	every := c.syncEvery()
	now := c.watchdog.Clock()
	c.mu.Lock()
	if c.welcomed && !c.leader && !c.syncs.out {
		// Wake when the sync is due, not at the next tick after it.
		wait = min(wait, c.syncs.last+every-now)
	}
	c.mu.Unlock()
	return max(wait, time.Millisecond)
}

// keepLook is what the keeper does when it looks: close the connection
// (why says why), send a ping, send a sync, or nothing. It is apart from
// keep so that the simulator, which runs no keeper goroutine, looks the
// same way. A sync it asks for counts as sent (one at a time).
func (c *trackedConn) keepLook() (why string, ping, sync bool) {
	life := c.watchdog.Lifetime()
	every := c.syncEvery()
	now := c.watchdog.Clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	waiting := (c.sent.greeted && !c.welcomed) || c.sent.waiting() || c.syncs.out
	silent := now - time.Duration(c.lastRead.Load())
	switch {
	case c.welcomed && c.session == 0:
		return "session expired", false, false
	case waiting && silent >= life/4:
		return "server silent for " + silent.Round(time.Millisecond).String(), false, false
	case c.syncs.out && now-c.syncs.asked >= life/4:
		// A follower cut from its leader goes on answering pings, but
		// not the syncs the leader must answer.
		return "sync unanswered for " + (now - c.syncs.asked).Round(time.Millisecond).String(), false, false
	case c.welcomed && !c.leader && !c.syncs.out && now-c.syncs.last >= every:
		c.syncs.out, c.syncs.asked = true, now
		return "", false, true
	case c.welcomed && c.leader && !waiting:
		return "", true, false
	}
	return "", false, false
}

// send writes a ping or a sync on its own goroutine, so that a write that
// blocks never holds up the keeper (which closes the connection if no
// answer comes); one at a time: false when one is being written.
func (c *trackedConn) send(frame []byte) bool {
	if !c.pinging.CompareAndSwap(false, true) {
		return false
	}
	c.eng.bg.Add(1)
	go func() {
		defer c.eng.bg.Done()
		defer c.pinging.Store(false)
		_, _ = c.Write(frame)
	}()
	return true
}

// connSet is the engine's open connections, for Close to close any the
// client left open.
type connSet struct {
	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	closed bool
}

func (s *connSet) add(c *trackedConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.open == nil {
		s.open = make(map[*trackedConn]struct{})
	}
	s.open[c] = struct{}{}
	return true
}

func (s *connSet) remove(c *trackedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, c)
}

// closeAll closes every connection and refuses new ones.
func (s *connSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	open := make([]*trackedConn, 0, len(s.open))
	for c := range s.open {
		open = append(open, c)
	}
	s.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}

// Close ends what the engine runs beside the client: its connections'
// keepers, role probes and pings. The client's goroutines have exited.
func (e *Conns) Close() {
	e.conns.closeAll()
	e.bg.Wait()
}

// hostList gives the client its servers in turn, and tells it to wait (a
// second) before dialing again once every server was tried since the last
// connection, as the client's own list does, but for one thing: after the
// engine itself closed a connection (to a silent server, or a follower
// whose sync went unanswered) the next dial comes at once, even with one server, whose
// every reconnection the client's list would delay by a second.
type hostList struct {
	mu      sync.Mutex
	servers []string
	next    int
	tries   int  // Next calls since the last Connected
	now     bool // the engine closed the connection: dial again at once
}

// firstServer is the turn of the next engine's first server, from a random
// start in each process.
var firstServer = func() *atomic.Uint64 {
	var a atomic.Uint64
	a.Store(rand.Uint64())
	return &a
}()

// Init orders the servers as ZooKeeper's client does, shuffled, but for
// the first: the engines of one process take the servers (sorted) first
// in turn, so that their sessions spread evenly (a dozen engines on three
// servers: four on each, or, when one serves no clients, the four meant
// for it shared at random by the rest), where independent shuffles would
// put nine of twelve on one server about once in a hundred runs.
func (h *hostList) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = slices.Sorted(slices.Values(servers))
	if n := len(h.servers); n > 1 {
		first := int(firstServer.Add(1) % uint64(n))
		h.servers[0], h.servers[first] = h.servers[first], h.servers[0]
		rest := h.servers[1:]
		rand.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	}
	// The first dial comes at once, and the wait after every server was
	// tried once, as with the client's list.
	h.tries, h.now = -1, true
	return nil
}

func (h *hostList) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *hostList) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.servers[h.next]
	h.next = (h.next + 1) % len(h.servers)
	h.tries++
	wait := h.tries%len(h.servers) == 0 && !h.now
	h.now = false
	return s, wait
}

func (h *hostList) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries = 0
}

// redialAtOnce makes the next dial come without the client's wait.
func (h *hostList) redialAtOnce() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = true
}

// checkTick reads the server's tickTime (the conf four-letter word, where
// the server allows it) and warns when the margin does not cover it: a
// leader cut off from its quorum may answer for about a tick after the
// followers stopped waiting for it, and the new leader counts the
// session's timeout from its own start. See DESIGN.md.
func (e *Conns) CheckTick(addr string, margin time.Duration) {
	b, _ := e.fourLetter(addr, "conf", max(e.cfg.DialTimeout, time.Second), nil)
	tick := time.Duration(0)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "tickTime="); ok {
			if ms, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				tick = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if tick > 0 {
		e.tick.Store(int64(tick))
	}
	switch {
	case tick == 0:
		e.cfg.Log.Info("the server's tickTime is unknown (its conf four-letter word is not allowed): "+
			"Lost() closes in time behind a partition only if the lost margin exceeds it",
			slog.String("server", addr), slog.Duration("margin", margin))
	case margin <= tick:
		e.cfg.Log.Warn("the lost margin does not exceed the server's tickTime: "+
			"behind a partition of the leader, Lost() may close after another client is granted",
			slog.String("server", addr), slog.Duration("margin", margin), slog.Duration("tickTime", tick))
	}
}

var _ net.Conn = (*trackedConn)(nil)

// OnLeader reports whether a connection is open to a server known to be
// the leader (or standalone), whose every answer moves the trust deadline.
func (e *Conns) OnLeader() bool {
	e.conns.mu.Lock()
	defer e.conns.mu.Unlock()
	for c := range e.conns.open {
		c.mu.Lock()
		leader := c.leader
		c.mu.Unlock()
		if leader {
			return true
		}
	}
	return false
}
