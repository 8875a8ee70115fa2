//go:build linux

package partition

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// sessionsOn counts the client sessions each member holds now (cons).
func (l *lab) sessionsOn(t *testing.T) []int {
	t.Helper()
	n := make([]int, len(l.ens.Servers))
	for i, s := range l.ens.Servers {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		out, err := s.FourLetterWord(ctx, "cons")
		cancel()
		if err == nil {
			n[i] = strings.Count(out, "sid=0x")
		}
	}
	return n
}

// Twelve engines on a 3-member ensemble spread their sessions over it, as
// ZooKeeper clients do: no member holds more than 8 of the 12; with
// leaderServes=no, none is on the leader.
func TestSessionsSpread(t *testing.T) {
	for _, noLeader := range []bool{false, true} {
		t.Run("leaderServesNo="+strconv.FormatBool(noLeader), func(t *testing.T) {
			l := newLab(t, labOptions{tick: tick, syncLimit: syncLimit, clients: 1, leaderServesNo: noLeader})
			leader, _ := l.roles(t)
			var es []*engine.Engine
			for range 12 {
				es = append(es, engineOn(t, l.clients[0], l.addrs(0, 1, 2), session))
			}
			var on []int
			for range 50 { // a session's connection shows in cons once it is made
				if on = l.sessionsOn(t); on[0]+on[1]+on[2] >= 12 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("sessions on s1, s2, s3: %v (leader s%d)", on, leader+1)
			for i, n := range on {
				if n > 8 {
					t.Errorf("%s holds %d of the 12 sessions", l.servers[i].Name, n)
				}
			}
			if noLeader && on[leader] != 0 {
				t.Errorf("the leader %s, which serves no clients, holds %d sessions", l.servers[leader].Name, on[leader])
			}
			for _, e := range es {
				_ = e.Close()
			}
		})
	}
}

// On an ensemble whose leader takes no clients, an engine starts, holds a
// lock through a follower for a minute with no suspension (nothing
// reconnects a follower that answers), and fails over when that
// follower's link goes down: with a 10 s session its lease survives. A
// test of minutes: make partition runs it.
func TestLeaderServesNoHoldsAndFailsOver(t *testing.T) {
	survivalTrials(t)
	const long = 10 * time.Second
	l := newLab(t, labOptions{tick: tick, syncLimit: syncLimit, clients: 1, leaderServesNo: true})
	leader, _ := l.roles(t)
	e := engineOn(t, l.clients[0], l.addrs(0, 1, 2), long)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lease, err := lock.NewMutex(e, "/leaderserves").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sess := e.SessionID()
	cur := l.waitOn(t, sess)
	if cur < 0 || cur == leader {
		t.Fatalf("session on member %d, the leader is %d", cur, leader)
	}
	// A minute on the follower: no renewal suspends the lease.
	select {
	case <-lease.Suspended():
		t.Fatal("the lease was suspended on a healthy follower")
	case <-lease.Lost():
		t.Fatalf("the lease was lost on a healthy follower: %v", lease.Err())
	case <-time.After(time.Minute):
	}
	if err := l.servers[cur].LinkDown(); err != nil {
		t.Fatal(err)
	}
	next := l.waitOn(t, sess, cur)
	if next < 0 || next == leader {
		t.Fatalf("after %s's link went down, the session is on member %d (leader %d)", l.servers[cur].Name, next, leader)
	}
	select {
	case <-lease.Lost():
		t.Fatalf("the lease was lost in the failover: %v", lease.Err())
	case <-time.After(long):
	}
	if e.SessionID() != sess {
		t.Fatalf("session %#x, want %#x", e.SessionID(), sess)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	if err := lease.Release(rctx); err != nil {
		t.Fatalf("release after the failover: %v", err)
	}
}
