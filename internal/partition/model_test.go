//go:build linux

package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/netns"
	"github.com/turnstile-go/turnstile/internal/zkmodel"
)

// The differential test of zkmodel's ensemble (the simulator's model of a
// follower cut from its leader): the same script runs on a real 3-node
// ensemble, cut by real partitions, and on the model, and what a client
// sees must be the same, in the same order. The script: a holder's client,
// connected to a follower only, makes an ephemeral node; a watcher on the
// leader's side, never cut, watches it; the follower and the holder are
// cut from the leader and the other follower; the cut heals after a while.
// What is compared, per case, is the order of:
//
//   - "deleted": the watcher sees the node deleted (the leader expired the
//     holder's session);
//   - "ping after deleted": the holder's client reads a ping's answer after
//     that (the cut follower answered a session its leader had expired);
//   - "closed": the holder's connection is closed by its server;
//   - "healed": the cut ends;
//   - "expired", or "lives": what the holder's client learns after the
//     heal (its session expired; or it is connected and its node is
//     there).
//
// Each case's cut is shorter than the session, longer than the session
// but shorter than syncLimit ticks, or longer than both.

const (
	diffTick      = 250 * time.Millisecond
	diffSyncLimit = 16 // ticks: the follower gives up its leader 4 s into the cut
	diffSession   = 2 * time.Second
)

// diffCase is one cut: how long it lasts, and the transcript expected.
type diffCase struct {
	name string
	cut  time.Duration
	want []string
}

var diffCases = []diffCase{
	{"short", 1 * time.Second, []string{"healed", "lives"}},
	{"past-session", 3200 * time.Millisecond, []string{"deleted", "ping after deleted", "healed", "closed", "expired"}},
	{"past-syncLimit", 6 * time.Second, []string{"deleted", "ping after deleted", "closed", "healed", "expired"}},
}

// seen is what one run saw, with when (on one clock), from which the
// transcript is made.
type seen struct {
	deleted, lastPing, closed, healed time.Duration // 0: never
	after                             string        // "expired" or "lives"
}

func (s seen) transcript() []string {
	type ev struct {
		at   time.Duration
		what string
	}
	// The heal first: a connection closed at the heal's instant (the
	// model's follower closes it as it learns of the expiry) follows it.
	evs := []ev{{s.healed, "healed"}}
	if s.deleted > 0 {
		evs = append(evs, ev{s.deleted, "deleted"})
		if s.lastPing > s.deleted {
			evs = append(evs, ev{s.lastPing, "ping after deleted"})
		}
	}
	if s.closed > 0 {
		evs = append(evs, ev{s.closed, "closed"})
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return int(a.at - b.at) })
	var out []string
	for _, e := range evs {
		out = append(out, e.what)
	}
	return append(out, s.after)
}

// TestModelMatchesEnsembleUnderCut runs each case on the model and on the
// real ensemble and compares the transcripts, and each with the one the
// case expects (so that a model and a server that both changed cannot
// agree on nothing).
func TestModelMatchesEnsembleUnderCut(t *testing.T) {
	l := newLab(t, labOptions{tick: diffTick, syncLimit: diffSyncLimit, clients: len(diffCases)})
	for i, dc := range diffCases {
		t.Run(dc.name, func(t *testing.T) {
			model := modelRun(t, dc.cut).transcript()
			real := l.realRun(t, i, dc.cut).transcript()
			t.Logf("model: %v; ensemble: %v", model, real)
			if !slices.Equal(model, real) {
				t.Errorf("the model saw %v, the ensemble %v", model, real)
			}
			if !slices.Equal(real, dc.want) {
				t.Errorf("the ensemble saw %v, the case expects %v", real, dc.want)
			}
		})
	}
}

// modelRun is the script on zkmodel, on a simulated clock in steps of
// 10 ms; the holder's client pings every third of its session timeout, as
// go-zookeeper does.
func modelRun(t *testing.T, cut time.Duration) seen {
	t.Helper()
	epoch := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	m := zkmodel.New(zkmodel.Config{TickTime: diffTick, Followers: 2, SyncLimit: diffSyncLimit}, epoch)
	const follower = zkmodel.MemberID(1)
	holder, timeout, err := m.ConnectTo(epoch, follower, diffSession)
	if err != nil {
		t.Fatal(err)
	}
	watcher, _, err := m.ConnectTo(epoch, zkmodel.TheLeader, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.Submit(epoch, holder, zkmodel.Request{Xid: 1, Op: zkmodel.OpCreate, Path: "/diff", Mode: zkmodel.Ephemeral}))
	must(m.Submit(epoch, watcher, zkmodel.Request{Xid: 1, Op: zkmodel.OpExists, Path: "/diff", Watch: true}))
	for m.Pending(watcher) > 0 {
		m.Next(watcher)
	}
	for m.Pending(holder) > 0 {
		m.Next(holder)
	}
	// The cut comes a second in, after the holder's client has pinged.
	const step = 10 * time.Millisecond
	start := time.Second
	var s seen
	connected, nextPing := true, timeout/3
	for now := step; now < start+cut+10*time.Second; now += step {
		at := epoch.Add(now)
		m.Tick(at)
		if now == start {
			must(m.Cut(at, follower))
		}
		if now == start+cut {
			m.Heal(at, follower)
			s.healed = now - start
		}
		if connected && now >= nextPing {
			must(m.Ping(at, holder))
			nextPing = now + timeout/3
		}
		for m.Pending(watcher) > 0 {
			if msg, _ := m.Next(watcher); msg.Kind == zkmodel.MsgEvent && msg.Event.Type == zkmodel.EventNodeDeleted && s.deleted == 0 {
				s.deleted = now - start
			}
		}
		for connected && m.Pending(holder) > 0 {
			switch msg, _ := m.Next(holder); msg.Kind {
			case zkmodel.MsgPing:
				if now > start {
					s.lastPing = now - start
				}
			case zkmodel.MsgClosed:
				s.closed, connected = now-start, false
				must(m.Disconnect(at, holder))
			}
		}
		if s.healed == 0 {
			continue
		}
		// After the heal, the holder's client looks: reconnected where
		// it must, or still connected.
		if !connected {
			_, err := m.ReconnectTo(at, follower, holder, zkmodel.SetWatches{})
			switch {
			case errors.Is(err, zkmodel.ErrSessionExpired):
				s.after = "expired"
				return s
			case err != nil:
				continue // the follower is not back yet
			}
			connected = true
		}
		if _, _, ok := m.Node("/diff"); ok && now >= start+cut+diffSession {
			s.after = "lives"
			return s
		}
	}
	t.Fatalf("the model's holder learned nothing after the heal: %+v", s)
	return s
}

// realRun is the script on the lab's ensemble: the holder's client runs on
// client host i, the watcher on the control host.
func (l *lab) realRun(t *testing.T, i int, cut time.Duration) seen {
	t.Helper()
	l.waitServing(t)
	leader, fs := l.roles(t)
	follower, other := fs[0], fs[1]
	host := l.clients[i]
	path := fmt.Sprintf("/diff-%d", i)

	pings := &pingLog{}
	holder, hEvents, err := zk.Connect([]string{l.ens.Servers[follower].Addr()}, diffSession,
		zk.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
			c, err := host.Dial(network, address, timeout)
			if err != nil {
				return nil, err
			}
			return &pingConn{Conn: c, log: pings}, nil
		}), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	watcher, wEvents, err := zk.Connect([]string{l.ens.Servers[leader].Addr()}, 10*time.Second,
		zk.WithDialer(l.ctl.Dial), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	go func() {
		for range wEvents {
		}
	}()
	waitState(t, hEvents, zk.StateHasSession)
	if _, err := holder.Create(path, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	watch := watchExisting(t, watcher, path)
	time.Sleep(time.Second) // the holder's client pings meanwhile

	sides := [][]*netns.Host{{l.servers[follower], host}, {l.servers[leader], l.servers[other]}}
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	if err := netns.Partition(sides[0], sides[1]); err != nil {
		t.Fatal(err)
	}
	healed := false
	heal := func() {
		if !healed {
			healed = true
			if err := netns.Heal(append(sides[0], sides[1]...)...); err != nil {
				t.Error(err)
			}
		}
	}
	defer heal()

	var s seen
	healTimer := time.After(cut)
	bound := time.After(cut + 40*time.Second)
	for s.after == "" {
		select {
		case ev := <-watch:
			if ev.Type == zk.EventNodeDeleted && s.deleted == 0 {
				s.deleted = since()
			}
		case ev := <-hEvents:
			switch {
			case ev.State == zk.StateDisconnected && s.closed == 0:
				s.closed = since()
			case ev.State == zk.StateExpired:
				s.after = "expired"
			}
		case <-healTimer:
			heal()
			s.healed = since()
			healTimer = nil
		case <-time.After(100 * time.Millisecond):
			// Still connected a session timeout after the heal: is the
			// node there?
			if healed && s.closed == 0 && since() >= s.healed+diffSession {
				if ok, _, err := holder.Exists(path); err == nil && ok && holder.State() == zk.StateHasSession {
					s.after = "lives"
				}
			}
		case <-bound:
			t.Fatalf("the holder's client learned nothing %v after the heal: %+v", 40*time.Second, s)
		}
	}
	s.lastPing = pings.last(start)
	return s
}

// watchExisting sets a watch on path, a node another client has just made.
// ZooKeeper orders what one client sees, not what two see: the holder's
// follower answered the create once the leader had committed it, but the
// leader may apply it a moment after, so a read on the leader can still
// miss it. The watcher asks again until it sees the node.
func watchExisting(t *testing.T, watcher *zk.Conn, path string) <-chan zk.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for reads := 1; ; reads++ {
		ok, _, watch, err := watcher.ExistsW(path)
		if err == nil && ok {
			if reads > 1 {
				t.Logf("the watcher saw %s at its read %d", path, reads)
			}
			return watch
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher does not see %s within 10 s: %v %v", path, ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitState(t *testing.T, events <-chan zk.Event, want zk.State) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within 30 s", want)
		}
	}
}

// pingConn is a client connection that notes when each answer to a ping
// (a reply frame of xid −2) is read.
type pingConn struct {
	net.Conn
	log    *pingLog
	buf    []byte
	frames int
}

type pingLog struct {
	mu sync.Mutex
	at []time.Time
}

// last is the time after start of the last ping answer read; 0 if none.
func (p *pingLog) last(start time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.at) == 0 || p.at[len(p.at)-1].Before(start) {
		return 0
	}
	return p.at[len(p.at)-1].Sub(start)
}

func (c *pingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.buf = append(c.buf, b[:n]...)
	for len(c.buf) >= 4 {
		size := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+size {
			break
		}
		c.frames++
		if c.frames > 1 && size >= 4 && int32(binary.BigEndian.Uint32(c.buf[4:])) == -2 {
			c.log.mu.Lock()
			c.log.at = append(c.log.at, time.Now())
			c.log.mu.Unlock()
		}
		c.buf = c.buf[4+size:]
	}
	return n, err
}
