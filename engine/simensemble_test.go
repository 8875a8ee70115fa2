package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/turnstile-go/turnstile/internal/zkmodel"
	"github.com/turnstile-go/turnstile/lock"
)

// The ensemble, a schedule choice of one seed in three: the model is a
// leader and two followers (zkmodel's ensemble.go), and the fault only a
// follower shows is scheduled from the seed: a follower isolated from its
// leader, with some clients on its side, for a while. A client on that
// side can reach only the follower, which goes on answering its pings for
// syncLimit ticks while the leader may expire its session.
//
// Each client's server list names some members: all three, one follower,
// or both followers. It connects to a member as the engine's pick chooses
// among those it can reach: the leader if it answers, else a follower.
// The engine's trackedConn reads every frame (engine.SimWire), so the
// trust deadline moves by the engine's own rules: every answer of a
// connection whose srvr probe said leader, the handshake and the chain of
// the keeper's syncs otherwise; and its keeper's looks run on the
// simulated clock, pinging a leader, syncing through a follower, closing
// a silent connection. With one server, as before, the client has no keeper: the
// single server's seeds explore what they explored before.

// ensemble is the world's ensemble; nil: one server.
type ensemble struct {
	// isolated is the follower cut from the leader now, 0 when none; the
	// clients whose side is true are on its side of the partition.
	isolated zkmodel.MemberID
	side     map[*client]bool
	cuts     int // the isolations so far, to tell a heal's timer its own
	// quiet: the clients on the isolated follower's side acquire nothing
	// new meanwhile (half the isolations). A write waits for the leader,
	// and a session's later requests and pings wait behind it, so a busy
	// client's connection to a cut follower falls silent and is closed
	// within a quarter of the lifetime; an idle holder's is answered.
	quiet bool
	// holder, in half the ensembles, is a client that only takes a mutex
	// and holds it a while, again and again, through one follower: the
	// holder of issue 22, whose connection is idle but for pings.
	holder *client
}

// quietFor reports whether c's workload acquires, reads or cancels
// nothing now (the holder's own acquisitions aside).
func (e *ensemble) quietFor(c *client) bool {
	return e != nil && (c == e.holder || e.isolated != 0 && e.quiet && e.side[c])
}

// stillFor reports whether c releases nothing now.
func (e *ensemble) stillFor(c *client) bool {
	return e != nil && e.isolated != 0 && e.quiet && e.side[c]
}

// holdMoves adds the holder's move: a mutex, when it has no acquisition
// open, taken under a context never cancelled.
func (w *world) holdMoves(add func(int, string, func())) {
	e := w.ens
	if e == nil || !w.faults || e.holder == nil || e.holder.exited || e.holder.closing || e.stillFor(e.holder) || w.busy(e.holder) > 0 {
		return
	}
	c := e.holder
	add(6, "hold", func() {
		p := simPaths[w.rng.IntN(len(simPaths))]
		ctx, cancel := context.WithCancel(context.Background())
		a := &acq{id: len(w.acqs) + 1, c: c, kind: kindMutex, paths: []string{p}, cancel: cancel}
		await(w, a, lock.NewMutex(c.eng, p).Acquire(ctx), grantLease)
		w.acqs = append(w.acqs, a)
		w.open = append(w.open, a)
		w.tracef("%s: acquire %v (the holder)", c.name, a)
	})
}

// newEnsemble chooses, from the seed's generator of its own, whether the
// world is an ensemble, and then its syncLimit and each client's server
// list.
func newEnsemble(seed uint64, nClients int) (*ensemble, zkmodel.Config, [][]zkmodel.MemberID, int) {
	rng := rand.New(rand.NewPCG(seed, 0xe75e))
	if rng.IntN(3) != 0 {
		return nil, zkmodel.Config{}, nil, -1
	}
	cfg := zkmodel.Config{Followers: 2, SyncLimit: 3 + rng.IntN(8)}
	lists := make([][]zkmodel.MemberID, nClients)
	for i := range lists {
		switch rng.IntN(4) {
		case 0:
			lists[i] = []zkmodel.MemberID{0, 1, 2}
		case 1, 2:
			lists[i] = []zkmodel.MemberID{zkmodel.MemberID(1 + rng.IntN(2))}
		default:
			lists[i] = []zkmodel.MemberID{1, 2}
		}
	}
	holder := -1
	if rng.IntN(2) == 0 {
		holder = rng.IntN(nClients)
		lists[holder] = []zkmodel.MemberID{zkmodel.MemberID(1 + rng.IntN(2))}
	}
	return &ensemble{side: make(map[*client]bool)}, cfg, lists, holder
}

// on is what a trace line says of the member a connection is on.
func (e *ensemble) on(m zkmodel.MemberID) string {
	if e == nil {
		return ""
	}
	if m == zkmodel.TheLeader {
		return " on the leader"
	}
	return fmt.Sprintf(" on follower %d", m)
}

// reaches reports whether c can reach member m now.
func (e *ensemble) reaches(c *client, m zkmodel.MemberID) bool {
	if e == nil || e.isolated == 0 {
		return true
	}
	return e.side[c] == (m == e.isolated)
}

// pick is the member c dials: the leader among those of its list it can
// reach, else the first follower that says it is one, else any it can
// reach (which refuses the handshake); false when it reaches none.
func (c *client) pick() (zkmodel.MemberID, bool) {
	w := c.w
	if w.ens == nil {
		return zkmodel.TheLeader, true
	}
	var reach []zkmodel.MemberID
	for _, m := range c.members {
		if w.ens.reaches(c, m) {
			reach = append(reach, m)
		}
	}
	if len(reach) == 0 {
		return 0, false
	}
	for _, want := range []string{"leader", "follower"} {
		for _, m := range reach {
			if w.model.Role(m) == want {
				return m, true
			}
		}
	}
	return reach[0], true
}

// unanswered handles a handshake member did not answer (err from the
// model); false when it was answered, with a session or with its expiry.
func (c *client) unanswered(m zkmodel.MemberID, err error) bool {
	w := c.w
	switch {
	case errors.Is(err, zkmodel.ErrStalled):
		// The follower waits for its leader: the handshake stays
		// unanswered until the engine's keeper finds the server silent.
		w.tracef("%s: handshake with follower %d unanswered", c.name, m)
		c.dialing = true
		w.ens.keep(c)
		return true
	case errors.Is(err, zkmodel.ErrNotServing):
		// The server closes the connection at once; the client tries
		// again after its pause.
		w.tracef("%s: follower %d serves no client", c.name, m)
		c.wire = nil
		c.partitionedUntil = w.clock.now + time.Second
		return true
	case err != nil && !errors.Is(err, zkmodel.ErrSessionExpired):
		panic(fmt.Sprintf("sim: handshake of %s: %v", c.name, err))
	}
	return false
}

// keep runs the engine's keeper of c's connection on the simulated clock,
// for as long as it is c's connection.
func (e *ensemble) keep(c *client) {
	if e == nil {
		return
	}
	wire := c.wire
	var look func()
	look = func() {
		if c.wire != wire || c.exited {
			return
		}
		why, ping, sync := wire.KeepLook()
		switch {
		case ping && c.up:
			c.sendPing()
		case sync && c.up:
			c.sendSync()
		case why != "":
			c.w.tracef("%s: the engine closes the connection: %s", c.name, why)
			if c.dialing {
				c.dialing, c.wire = false, nil
				return
			}
			c.lose()
			return
		}
		c.w.clock.afterFunc(wire.KeepWait(), look)
	}
	c.w.clock.afterFunc(wire.KeepWait(), look)
}

// welcomed is a follower's handshake answered, in the faulty phase: the
// follower may be isolated within the next sixth of the session timeout:
// always when the client holds a lease and waits for no answer, one time
// in eight otherwise,
// calm spell or not. A partition comes at any time; but the trust
// deadline of a client on a follower rests on its latest handshake, so a
// cut soon after one, while it holds, is where a deadline that counted
// the follower's later answers would outlast the session on the leader.
func (e *ensemble) welcomed(c *client) {
	w := c.w
	if e == nil || c.member == zkmodel.TheLeader || !w.faults || e.isolated != 0 {
		return
	}
	odds, quiet := 8, false
	if slices.ContainsFunc(c.eng.Leases(), func(l *lock.Lease) bool { return l.Held() }) && len(c.unsent)+len(c.waiting) == 0 {
		odds, quiet = 1, true
	}
	if w.rng.IntN(odds) != 0 {
		return
	}
	f, cuts := c.member, e.cuts
	d := time.Duration(w.rng.Int64N(int64(simSessionTimeout / 6)))
	w.tracef("%s: follower %d to be cut in %v (quiet %v)", c.name, f, d, quiet)
	w.clock.afterFunc(d, func() {
		if e.cuts == cuts && e.isolated == 0 && w.faults {
			w.isolateFollower(f, quiet)
		}
	})
}

// isolate is the fault: a follower cut from the leader, some clients on
// its side (every client connected to it, three in four of the others
// whose list names it, one in four of the rest), for up to three session
// timeouts. A connection that crosses the cut is lost.
func (w *world) isolate() {
	w.isolateFollower(zkmodel.MemberID(1+w.rng.IntN(w.model.Members()-1)), w.rng.IntN(2) == 0)
}

func (w *world) isolateFollower(f zkmodel.MemberID, quiet bool) {
	e := w.ens
	d := time.Duration(w.rng.Int64N(int64(3 * simSessionTimeout)))
	for _, c := range w.clients {
		odds := 1
		switch {
		case (c.up || c.dialing) && c.member == f:
			odds = 4
		case slices.Contains(c.members, f):
			odds = 3
		}
		e.side[c] = w.rng.IntN(4) < odds
	}
	e.isolated = f
	e.quiet = quiet
	e.cuts++
	if err := w.model.Cut(w.at(), f); err != nil {
		panic(err)
	}
	w.tracef("follower %d cut from the leader for %v, with %s (quiet %v)", f, d, w.sideNames(), e.quiet)
	for _, c := range w.clients {
		if (c.up || c.dialing) && !e.reaches(c, c.member) {
			w.tracef("%s: its connection crosses the cut", c.name)
			if c.dialing {
				c.dialing, c.wire = false, nil
			} else {
				c.lose()
			}
		}
	}
	cut := e.cuts
	w.clock.afterFunc(d, func() {
		if e.cuts == cut && e.isolated != 0 {
			w.heal()
		}
	})
}

func (w *world) sideNames() string {
	var names []string
	for _, c := range w.clients {
		if w.ens.side[c] {
			names = append(names, c.name)
		}
	}
	if len(names) == 0 {
		return "no client"
	}
	return fmt.Sprint(names)
}

// heal ends the isolation.
func (w *world) heal() {
	e := w.ens
	if e == nil || e.isolated == 0 {
		return
	}
	w.model.Heal(w.at(), e.isolated)
	w.tracef("follower %d linked to the leader again", e.isolated)
	e.isolated = 0
	clear(e.side)
}
