//go:build unix

package main

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/internal/wait"
	"github.com/turnstile-go/turnstile/lock"
)

// One mutex shared by turnstile, Curator and kazoo: a turnstile holder,
// then a Curator, a kazoo and another turnstile contender queued in that
// order. The command names the holder and the waiters in queue order,
// revokes each holder in turn (every one of them is revocable), and its
// watch, running throughout, sees every queueing, grant and release in
// order.
//
// Curator and kazoo must not share a path where one of them waits for the
// other to let go of the first place (Curator sorts kazoo's names by their
// random id); here Curator queues ahead of kazoo and waits only for
// turnstile, and kazoo, told Curator's pattern, waits for Curator.
func TestSharedMutexWithCuratorAndKazoo(t *testing.T) {
	cp := curator(t)
	kazoo(t)
	ctx := testCtx(t)
	lockPath := lockPath(t)

	holder, err := lock.NewMutex(startEngine(t), lockPath, lock.WithOwner("first"), lock.WithRevocation()).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(ctx)

	watch := startWatch(ctx, "-servers", shared.Addr(), "watch", "-json", lockPath)
	defer watch.end(t)
	// nodeEvents waits until the watch printed n events about nodes
	// (session events aside) and returns them.
	nodeEvents := func(n int) []watchEvent {
		t.Helper()
		var evs []watchEvent
		watch.await(t, ctx, fmt.Sprintf("%d events", n), func(lines []string) bool {
			evs = evs[:0]
			for _, ev := range watch.events(t, lines) {
				if ev.Node != nil {
					evs = append(evs, ev)
				}
			}
			return len(evs) >= n
		})
		return evs
	}
	nodeEvents(1) // the holder, as the watch began

	peer := interop.PeerConfig{Connect: shared.Addr(), Path: lockPath, HoldRevocable: true, Timeout: peerTimeout}
	cur, err := interop.StartCurator(ctx, cp, peer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cur.Kill)
	waitForWaiters(t, lockPath, 1)
	kz, err := interop.StartKazoo(ctx, peer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kz.Kill)
	waitForWaiters(t, lockPath, 2)
	last := lock.NewMutex(startEngine(t), lockPath, lock.WithOwner("last")).Acquire(ctx)
	waitForWaiters(t, lockPath, 3)

	kazooData := fmt.Sprintf("peer.py pid=%d revocable", kz.PID())
	l, _ := lockAt(t, lockPath)
	t.Logf("turnstile locks %s -json:\n%s", lockPath, cli(t, "locks", "-json", lockPath).stdout)
	t.Logf("turnstile locks %s:\n%s", lockPath, cli(t, "locks", lockPath).stdout)
	if l.Recipe != recipeMutex || !slices.Equal(names(l.Holders), []string{"turnstile:first"}) ||
		l.Holders[0].Node != holder.Node() {
		t.Fatalf("holders: %+v, want turnstile's first at %s", l.Holders, holder.Node())
	}
	clients := []string{}
	for _, w := range l.Waiters {
		clients = append(clients, w.Client)
	}
	if !slices.Equal(clients, []string{"curator", "kazoo", "turnstile"}) ||
		l.Waiters[1].Data != kazooData || l.Waiters[2].Owner.Owner != "last" {
		t.Fatalf("waiters: %+v, want Curator's, then kazoo's (%q), then turnstile's last", l.Waiters, kazooData)
	}

	// Revoke the turnstile holder: it lets go, and Curator holds.
	if r := cli(t, "revoke", lockPath); r.code != exitOK || r.stdout != "revocation requested: "+holder.Node()+"\n" {
		t.Fatalf("revoke the turnstile holder: %v", r)
	}
	<-holder.Revoked()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	curNode, err := cur.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkHolder(t, lockPath, curNode, "curator:"+l.Waiters[0].Data)

	// Revoke Curator's holder: kazoo holds.
	if r := cli(t, "revoke", lockPath); r.code != exitOK || !strings.Contains(r.stdout, curNode) {
		t.Fatalf("revoke the Curator holder: %v", r)
	}
	kzNode, err := kz.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkHolder(t, lockPath, kzNode, "kazoo:"+kazooData)

	// Revoke kazoo's holder by its node's name: the last turnstile
	// contender holds.
	if r := cli(t, "revoke", lockPath, path.Base(kzNode)); r.code != exitOK || !strings.Contains(r.stdout, kzNode) {
		t.Fatalf("revoke the kazoo holder by name: %v", r)
	}
	lastLease, err := last.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkHolder(t, lockPath, lastLease.Node(), "turnstile:last")
	for _, p := range []*interop.Peer{cur, kz} {
		if r, err := p.Wait(); err != nil || !strings.Contains(r.Output, "REVOKED") {
			t.Errorf("%s: %v\n%s", p, err, r.Output)
		}
	}
	if err := lastLease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, "holders", lockPath); r.code != exitNone {
		t.Fatalf("holders once every contender left: %v", r)
	}

	// What the watch saw, in order.
	nodes := map[string]string{
		holder.Node(): "turnstile:first", curNode: "curator", kzNode: "kazoo", lastLease.Node(): "turnstile:last",
	}
	want := []string{
		"holding turnstile:first",
		"queued curator", "queued kazoo", "queued turnstile:last",
		"released turnstile:first", "granted curator",
		"released curator", "granted kazoo",
		"released kazoo", "granted turnstile:last",
		"released turnstile:last",
	}
	got := nodeEvents(len(want))
	var seen []string
	for _, ev := range got {
		seen = append(seen, ev.Event+" "+nodes[ev.Node.Node])
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("watch saw:\n%s\nwant:\n%s\noutput:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"), watch.out)
	}
	t.Logf("turnstile watch -json %s:\n%s", lockPath, watch.out)
}

// A read-write lock with readers of turnstile and Curator holding, and a
// turnstile writer and a kazoo reader waiting behind it; a semaphore of two
// leases held by turnstile with a Curator acquirer waiting, then holding.
func TestReadWriteAndSemaphoreWithCuratorAndKazoo(t *testing.T) {
	cp := curator(t)
	kazoo(t)
	ctx := testCtx(t)
	root := lockPath(t)
	eng := startEngine(t)

	// Read-write lock.
	rwPath := root + "/rw"
	reader, err := lock.NewRWMutex(eng, rwPath, lock.WithOwner("reader")).Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Release(ctx)
	long := interop.PeerConfig{Connect: shared.Addr(), Iterations: 1, Hold: peerTimeout, Timeout: peerTimeout}
	curRead := long
	curRead.Path, curRead.Recipe = rwPath, "read"
	cr, err := interop.StartCurator(ctx, cp, curRead)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cr.Kill)
	wait.Until(t, "Curator's reader holds", func() bool {
		l, ok := lockAt(t, rwPath)
		return ok && len(l.Holders) == 2
	})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lock.NewRWMutex(eng, rwPath, lock.WithOwner("writer")).Writer().Acquire(wctx)
	waitForWaiters(t, rwPath, 1)
	kr, err := interop.StartKazoo(ctx, curRead)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kr.Kill)
	waitForWaiters(t, rwPath, 2)

	l, _ := lockAt(t, rwPath)
	t.Logf("turnstile locks %s:\n%s", rwPath, cli(t, "locks", rwPath).stdout)
	if got := kindsAndClients(l.Holders); l.Recipe != recipeRW || !slices.Equal(got, []string{"read turnstile", "read curator"}) {
		t.Errorf("rw holders: %v", got)
	}
	if got := kindsAndClients(l.Waiters); !slices.Equal(got, []string{"write turnstile", "read kazoo"}) {
		t.Errorf("rw waiters: %v", got)
	}

	// Semaphore of two leases.
	semPath := root + "/sem"
	var leases []*lock.Lease
	for _, owner := range []string{"lease-1", "lease-2"} {
		s, _ := lock.NewSemaphore(eng, semPath, 2, lock.WithOwner(owner))
		l, err := s.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		leases = append(leases, l)
	}
	curSem := long
	curSem.Path, curSem.Recipe, curSem.Leases = semPath, "semaphore", 2
	cs, err := interop.StartCurator(ctx, cp, curSem)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Kill)
	// Curator's acquirer takes the semaphore's mutex, makes its lease node
	// and waits: once it has, that node stands for it, in place of its
	// mutex node.
	wait.Until(t, "Curator's acquirer shown by its lease node", func() bool {
		l, _ = lockAt(t, semPath)
		return slices.Equal(kindsAndClients(l.Waiters), []string{"lease curator"})
	})
	if got := names(l.Holders); l.Recipe != recipeSemaphore || !slices.Equal(got, []string{"turnstile:lease-1", "turnstile:lease-2"}) {
		t.Errorf("semaphore holders: %v", got)
	}
	t.Logf("turnstile locks %s:\n%s", semPath, cli(t, "locks", semPath).stdout)

	if err := leases[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "Curator's lease granted", func() bool {
		l, _ := lockAt(t, semPath)
		return slices.Equal(kindsAndClients(l.Holders), []string{"lease turnstile", "lease curator"}) && len(l.Waiters) == 0
	})
}

// checkHolder demands that holders -json names exactly node, and who.
func checkHolder(t *testing.T, lockPath, node, who string) {
	t.Helper()
	var holders []nodeView
	cliJSON(t, &holders, exitOK, "holders", lockPath)
	if len(holders) != 1 || holders[0].Node != node || whoIs(holders[0]) != who {
		t.Fatalf("holders of %s: %+v, want %s (%s)", lockPath, holders, node, who)
	}
	r := cli(t, "holders", lockPath)
	if f := strings.Fields(r.stdout); len(f) < 2 || f[0] != node {
		t.Fatalf("holders text: %v", r)
	}
}

// waitForWaiters waits until the lock at p has n waiters.
func waitForWaiters(t *testing.T, p string, n int) {
	t.Helper()
	wait.Until(t, fmt.Sprintf("%d waiter(s) at %s", n, p), func() bool {
		l, ok := lockAt(t, p)
		return ok && len(l.Waiters) == n
	})
}

func kindsAndClients(nodes []nodeView) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.Kind+" "+n.Client)
	}
	return out
}
