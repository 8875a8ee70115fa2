//go:build linux

package partition

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netns"
	"github.com/turnstile-go/turnstile/lock"
)

// The survival measurements are long (minutes): they run only when
// TURNSTILE_SURVIVAL_TRIALS says how many trials each makes (make
// partition). Each prints "survival <case>: N of M leases kept".
func survivalTrials(t *testing.T) int {
	n, _ := strconv.Atoi(os.Getenv("TURNSTILE_SURVIVAL_TRIALS"))
	if n <= 0 {
		t.Skip("a measurement of minutes: set TURNSTILE_SURVIVAL_TRIALS (make partition)")
	}
	return n
}

// serverOf is the index of the member whose connections include session.
func (l *lab) serverOf(t *testing.T, session int64) int {
	t.Helper()
	want := fmt.Sprintf("sid=0x%x", session)
	for i, s := range l.ens.Servers {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		out, err := s.FourLetterWord(ctx, "cons")
		cancel()
		if err == nil && strings.Contains(out, want) {
			return i
		}
	}
	return -1
}

// waitOn waits until session is connected to a member other than those
// of avoid, and returns it; -1 after 10 s.
func (l *lab) waitOn(t *testing.T, session int64, avoid ...int) int {
	t.Helper()
	for range 100 {
		if i := l.serverOf(t, session); i >= 0 && !contains(avoid, i) {
			return i
		}
		time.Sleep(100 * time.Millisecond)
	}
	return -1
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// trial is one holder through one fault: true if its lease outlived the
// fault by window without Lost() closing.
type trialFn func(t *testing.T, l *lab, i int) (kept bool, what string)

func survive(t *testing.T, name string, session time.Duration, trial trialFn) {
	trials := survivalTrials(t)
	l := newLab(t, labOptions{tick: tick, syncLimit: syncLimit, clients: 1})
	kept := 0
	for i := range trials {
		ok, what := trial(t, l, i)
		if ok {
			kept++
		}
		t.Logf("trial %d: %s: kept %v", i, what, ok)
		if err := netns.Heal(l.net.Hosts()...); err != nil {
			t.Fatal(err)
		}
		for _, h := range l.servers {
			_ = h.LinkUp()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := l.ens.WaitReady(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		l.waitServing(t)
	}
	fmt.Printf("survival %s (session %v): %d of %d leases kept\n", name, session, kept, trials)
	t.Logf("survival %s (session %v): %d of %d leases kept", name, session, kept, trials)
}

// hold starts an engine on the lab's client host and takes a mutex.
func hold(t *testing.T, l *lab, servers []string, session time.Duration, i int) (*engine.Engine, *lock.Lease) {
	t.Helper()
	return holdWith(t, l, engine.Config{Servers: servers, SessionTimeout: session}, i)
}

func holdWith(t *testing.T, l *lab, cfg engine.Config, i int) (*engine.Engine, *lock.Lease) {
	t.Helper()
	e := engineWith(t, l.clients[0], cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lease, err := lock.NewMutex(e, "/survival-"+strconv.Itoa(i)).Lock(ctx)
	if err != nil {
		t.Fatalf("trial %d: %v", i, err)
	}
	return e, lease
}

// kept watches the lease for window and then ends the trial's engine.
func keptFor(e *engine.Engine, lease *lock.Lease, session int64, window time.Duration) bool {
	select {
	case <-lease.Lost():
	case <-time.After(window):
	}
	ok := lease.Err() == nil && e.SessionID() == session
	_ = e.Close()
	return ok
}

// With a 2 s session, the holder's server and one more are cut from the
// holder (a quorum stays whole among the servers): the holder must move to
// the third. Even trials: it is on whichever server its shuffled list
// gave it, cut with another. Odd trials: it is on a follower, having
// been cut from the leader first, and then cut from that follower too.
// The cut comes at a random instant of the engine's own rhythm.
func TestSurvivalTwoServersCut(t *testing.T) {
	survive(t, "two of three servers cut from the client", session, func(t *testing.T, l *lab, i int) (bool, string) {
		c := l.clients[0]
		leader, fs := l.roles(t)
		all := l.addrs(0, 1, 2)
		var e *engine.Engine
		var lease *lock.Lease
		var cut []int
		what := ""
		if i%2 == 0 {
			e, lease = hold(t, l, all, session, i)
			cur := l.waitOn(t, e.SessionID())
			if cur < 0 {
				t.Fatalf("trial %d: session on no server", i)
			}
			other := fs[0]
			if cur == other {
				other = leader
			}
			cut = []int{cur, other}
			what = fmt.Sprintf("on %s (leader %s), cut from it and %s", l.servers[cur].Name, l.servers[leader].Name, l.servers[other].Name)
		} else {
			if err := c.Block(l.servers[leader]); err != nil {
				t.Fatal(err)
			}
			e, lease = hold(t, l, all, session, i)
			cur := l.waitOn(t, e.SessionID(), leader)
			if cur < 0 {
				t.Fatalf("trial %d: session on no follower", i)
			}
			cut = []int{cur, leader}
			what = fmt.Sprintf("on follower %s, cut from it and the leader %s", l.servers[cur].Name, l.servers[leader].Name)
		}
		sess := e.SessionID()
		time.Sleep(time.Duration(rand.Int64N(int64(session / 2))))
		var hs []*netns.Host
		for _, s := range cut {
			hs = append(hs, l.servers[s])
		}
		if err := c.Block(hs...); err != nil {
			t.Fatal(err)
		}
		t.Logf("trial %d: cut at %s", i, time.Now().UTC().Format("15:04:05.000"))
		return keptFor(e, lease, sess, 3*session), what
	})
}

// With a 10 s session, the link of the holder's server goes down (the
// server is cut from everyone): even trials the leader (the ensemble
// elects another), odd trials a follower (the holder lists only the
// followers, so it is on one).
func TestSurvivalServerLinkDown(t *testing.T) {
	const long = 10 * time.Second
	survive(t, "the holder's server's link down", long, linkDown(long, false))
}

// With a 2 s session, the link of the holder's follower goes down. (The
// leader's, with so short a session, loses every lease: the ensemble's
// election outlasts it.)
func TestSurvivalFollowerLinkDown(t *testing.T) {
	survive(t, "the holder's follower's link down", session, linkDown(session, true))
}

// With the session on the leader (PreferLeader puts it there), the
// leader's link goes down: with a 10 s session the lease must survive;
// with a 2 s session it is the case no engine setting saves, as the
// ensemble's election (syncLimit × tickTime before the followers give the
// leader up, then the vote) outlasts the session.
func TestSurvivalLeaderLinkDown(t *testing.T) {
	for _, session := range []time.Duration{10 * time.Second, session} {
		t.Run(session.String(), func(t *testing.T) { survive(t, "the holder's leader's link down", session, leaderDown(session)) })
	}
}

func leaderDown(session time.Duration) trialFn {
	return func(t *testing.T, l *lab, i int) (bool, string) {
		leader, _ := l.roles(t)
		e, lease := holdWith(t, l, engine.Config{Servers: l.addrs(0, 1, 2), SessionTimeout: session, PreferLeader: true}, i)
		cur := l.waitOn(t, e.SessionID())
		if cur != leader {
			t.Fatalf("trial %d: session on member %d, not the leader %d", i, cur, leader)
		}
		sess := e.SessionID()
		time.Sleep(time.Duration(rand.Int64N(int64(session / 2))))
		if err := l.servers[cur].LinkDown(); err != nil {
			t.Fatal(err)
		}
		return keptFor(e, lease, sess, 2*session), "on the leader " + l.servers[cur].Name + ", its link down"
	}
}

func linkDown(session time.Duration, followersOnly bool) trialFn {
	return func(t *testing.T, l *lab, i int) (bool, string) {
		leader, fs := l.roles(t)
		servers := l.addrs(0, 1, 2)
		if followersOnly || i%2 == 1 {
			servers = l.addrs(fs...)
		}
		e, lease := hold(t, l, servers, session, i)
		cur := l.waitOn(t, e.SessionID())
		if cur < 0 {
			t.Fatalf("trial %d: session on no server", i)
		}
		role := "follower"
		if cur == leader {
			role = "leader"
		}
		sess := e.SessionID()
		time.Sleep(time.Duration(rand.Int64N(int64(session / 2))))
		if err := l.servers[cur].LinkDown(); err != nil {
			t.Fatal(err)
		}
		t.Logf("trial %d: link down at %s", i, time.Now().UTC().Format("15:04:05.000"))
		return keptFor(e, lease, sess, 2*session), fmt.Sprintf("on the %s %s, its link down", role, l.servers[cur].Name)
	}
}
