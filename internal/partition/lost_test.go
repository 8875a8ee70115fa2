//go:build linux

package partition

import (
	"context"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netns"
	"github.com/turnstile-go/turnstile/lock"
)

// The ensemble of issue 22: tickTime 250 ms, a 2 s session, and the
// zkserver default syncLimit of 5 s (20 ticks), for which a follower cut
// from its leader goes on answering its clients for up to 5 s.
const (
	tick      = 250 * time.Millisecond
	syncLimit = 20
	session   = 2 * time.Second
)

// A holder whose server is a follower cut off, with the holder, from the
// leader and the other follower: the follower loses the quorum but goes
// on answering the holder's pings for up to syncLimit × tickTime, while
// the leader expires the session and grants the lock to a client on the
// majority side. The holder's Lost() must close before that grant.
func TestLostBeforeOtherGrantFollowerCut(t *testing.T) {
	l := newLab(t, labOptions{tick: tick, syncLimit: syncLimit, clients: 2})
	leader, fs := l.roles(t)
	follower, other := fs[0], fs[1]
	holderHost, waiterHost := l.clients[0], l.clients[1]
	t.Logf("leader %s, holder on follower %s", l.servers[leader].Name, l.servers[follower].Name)

	holder := engineOn(t, holderHost, l.addrs(follower), session)
	waiter := engineOn(t, waiterHost, l.addrs(leader, other), session)
	lostBeforeGrant(t, holder, waiter, func() error {
		return netns.Partition(
			[]*netns.Host{l.servers[follower], holderHost},
			[]*netns.Host{l.servers[leader], l.servers[other], waiterHost})
	})
}

// A holder on the leader, cut off with it from both followers: the
// followers elect a new leader, which expires the session, while the old
// one goes on answering until it sees it has lost its quorum.
func TestLostBeforeOtherGrantLeaderCut(t *testing.T) {
	l := newLab(t, labOptions{tick: tick, syncLimit: syncLimit, clients: 2})
	leader, fs := l.roles(t)
	holderHost, waiterHost := l.clients[0], l.clients[1]
	t.Logf("holder on leader %s", l.servers[leader].Name)

	holder := engineOn(t, holderHost, l.addrs(leader), session)
	waiter := engineOn(t, waiterHost, l.addrs(fs...), session)
	lostBeforeGrant(t, holder, waiter, func() error {
		return netns.Partition(
			[]*netns.Host{l.servers[leader], holderHost},
			[]*netns.Host{l.servers[fs[0]], l.servers[fs[1]], waiterHost})
	})
}

// Two clients, their sessions spread over the ensemble as their shuffled
// lists put them, are left with one follower, cut with them from the
// leader and the other follower: that follower answers them for up to
// syncLimit × tickTime while the leader expires both sessions, and then
// serves no one. Once the network heals, the waiter queues again under a
// new session and is granted; the holder's Lost() must have closed first.
func TestLostBeforeOtherGrantClientsWithMinorityFollower(t *testing.T) {
	l := newLab(t, labOptions{tick: tick, syncLimit: syncLimit, clients: 2})
	leader, fs := l.roles(t)
	follower, other := fs[0], fs[1]
	holderHost, waiterHost := l.clients[0], l.clients[1]
	holder := engineOn(t, holderHost, l.addrs(0, 1, 2), session)
	waiter := engineOn(t, waiterHost, l.addrs(0, 1, 2), session)
	t.Logf("leader %s; holder on %d, waiter on %d; both left with follower %s", l.servers[leader].Name,
		l.serverOf(t, holder.SessionID())+1, l.serverOf(t, waiter.SessionID())+1, l.servers[follower].Name)
	heal := time.AfterFunc(time.Hour, func() {})
	t.Cleanup(func() { heal.Stop() })
	lostBeforeGrant(t, holder, waiter, func() error {
		heal.Stop()
		// Heal well after the follower gave up its leader (syncLimit ×
		// tickTime, 5 s) and the leader expired both sessions.
		heal = time.AfterFunc(8*time.Second, func() { _ = netns.Heal(l.net.Hosts()...) })
		return netns.Partition(
			[]*netns.Host{l.servers[follower], holderHost, waiterHost},
			[]*netns.Host{l.servers[leader], l.servers[other]})
	})
}

// lostBeforeGrant has holder take a mutex and waiter queue for it, cuts
// the network, and waits for the waiter's grant: at the moment the test
// sees that grant, the holder's Lost() must already be closed.
func lostBeforeGrant(t *testing.T, holder, waiter *engine.Engine, cut func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path = "/partition"
	lease, err := lock.NewMutex(holder, path).Lock(ctx)
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	fut := lock.NewMutex(waiter, path).Acquire(ctx)
	// The waiter's node is queued once it shows among the participants.
	for {
		ps, err := lock.Participants(ctx, waiter, path)
		if err == nil && len(ps) == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the waiter never queued: %v %v", ps, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if _, done, _ := fut.Result(); done {
		t.Fatal("the waiter was granted while the holder held")
	}

	var lostAt time.Time
	lostSeen := make(chan struct{})
	go func() {
		defer close(lostSeen)
		select {
		case <-lease.Lost():
			lostAt = time.Now()
		case <-ctx.Done():
		}
	}()
	cutAt := time.Now()
	if err := cut(); err != nil {
		t.Fatal(err)
	}
	got, err := fut.Wait(ctx)
	grantAt := time.Now()
	// The order the test sees: was the holder's Lost() closed when the
	// waiter's grant came?
	var lostFirst bool
	select {
	case <-lease.Lost():
		lostFirst = true
	default:
	}
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	defer got.Release(context.Background())
	if !lostFirst {
		<-lostSeen
		lost := "never, within the test's bound"
		if !lostAt.IsZero() {
			lost = lostAt.Sub(cutAt).Round(time.Millisecond).String() + " after the cut"
		}
		t.Fatalf("the waiter was granted %v after the cut while the holder's Lost() was open (it closed %s)",
			grantAt.Sub(cutAt).Round(time.Millisecond), lost)
	}
	<-lostSeen
	t.Logf("holder lost %v after the cut, waiter granted %v after it",
		lostAt.Sub(cutAt).Round(time.Millisecond), grantAt.Sub(cutAt).Round(time.Millisecond))
}
