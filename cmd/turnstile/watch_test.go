package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
)

// A watch prints, as text, the holder as it began, a waiter that queues and
// gives up, the next waiter's grant after the release, and that waiter's
// release.
func TestWatchText(t *testing.T) {
	ctx := testCtx(t)
	p := lockPath(t)
	a, b := startEngine(t), startEngine(t)

	first, err := lock.NewMutex(a, p, lock.WithOwner("first")).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := startWatch(ctx, "-servers", shared.Addr(), "watch", p)
	lines := func(n int) []string {
		t.Helper()
		return w.await(t, ctx, fmt.Sprintf("%d lines", n), func(l []string) bool { return len(l) >= n })
	}
	lines(1) // the holder as the watch began: the watch is on
	gctx, giveUp := context.WithCancel(ctx)
	quitter := lock.NewMutex(b, p, lock.WithOwner("quitter")).Acquire(gctx)
	lines(2)
	giveUp()
	if _, err := quitter.Wait(ctx); err == nil {
		t.Fatal("the quitter was granted")
	}
	lines(3)
	next := lock.NewMutex(b, p, lock.WithOwner("next")).Acquire(ctx)
	lines(4)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := next.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lines(6)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := lines(7)
	w.end(t)
	t.Logf("turnstile watch %s:\n%s", p, w.out)

	// time, event, node, client, what is known of its times, owner=…
	line := regexp.MustCompile(`^\S+\s+(\S+)\s+(\S+)\s+(\S+)\s+` +
		`(held since before the watch, queued [0-9.µmsh]+ ago|held [0-9.µmsh]+|waited [0-9.µmsh]+|queued [0-9.µmsh]+ ago)\s+(owner="[^"]*")`)
	times := strings.NewReplacer("held since before the watch, queued", "held-before", " ago", "")
	var seen []string
	for _, l := range got {
		m := line.FindStringSubmatch(l)
		if m == nil || !strings.HasPrefix(m[2], p+"/_c_") || m[3] != "turnstile" {
			t.Fatalf("watch line %q", l)
		}
		seen = append(seen, m[1]+" "+strings.Fields(times.Replace(m[4]))[0]+" "+m[5])
	}
	want := []string{
		`holding queued owner="first"`,
		`queued queued owner="quitter"`,
		`left waited owner="quitter"`,
		`queued queued owner="next"`,
		`released held-before owner="first"`,
		`granted waited owner="next"`,
		`released held owner="next"`,
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("watch lines read as\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// -for ends a watch, without error.
func TestWatchFor(t *testing.T) {
	r := cliCtx(t, testCtx(t), "watch", "-for", "200ms", lockPath(t))
	if r.code != exitOK || r.stdout != "" {
		t.Fatalf("watch -for of an empty path: %v", r)
	}
}

// A watch whose server goes away says so, says when it is back, and then
// reports what changed meanwhile.
func TestWatchAcrossServerRestart(t *testing.T) {
	ctx := testCtx(t)
	srv := zkserver.StartT(t, zkserver.Options{})
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	p := lockPath(t)
	held, err := lock.NewMutex(eng, p, lock.WithOwner("survivor")).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}

	w := startWatch(ctx, "-servers", srv.Addr(), "watch", "-json", p)
	events := func(until string) []string {
		t.Helper()
		var evs []string
		w.await(t, ctx, until, func(lines []string) bool {
			evs = evs[:0]
			for _, ev := range w.events(t, lines) {
				evs = append(evs, ev.Event)
			}
			return slices.Contains(evs, until)
		})
		return evs
	}
	events(evHolding)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	events(evDisconnected)
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	events(evReconnected)
	held.Release(ctx) // lost or not, its node goes
	got := events(evReleased)
	w.end(t)
	// Only the order matters: a reconnection may be tried, and
	// reported, more than once.
	want := []string{evHolding, evDisconnected, evReconnected, evReleased}
	at := 0
	for _, ev := range got {
		if at < len(want) && ev == want[at] {
			at++
		}
	}
	if at != len(want) || got[len(got)-1] != evReleased {
		t.Fatalf("watch printed %q, want %q in that order", got, want)
	}
	t.Logf("turnstile watch -json across a restart: %q", got)
}
