package main

import (
	"context"
	"encoding/json"
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
	out, errOut := newSyncBuffer(), newSyncBuffer()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() { done <- run(wctx, []string{"-servers", shared.Addr(), "watch", p}, out, errOut) }()
	lines := func(n int) []string {
		t.Helper()
		for {
			got, changed := out.lines()
			if len(got) >= n {
				return got
			}
			select {
			case <-changed:
			case code := <-done:
				t.Fatalf("watch ended (%d) after %q: %s", code, got, errOut)
			case <-ctx.Done():
				t.Fatalf("watch printed %q, want %d lines", got, n)
			}
		}
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
	stop()
	if code := <-done; code != exitOK {
		t.Fatalf("watch exited %d: %s", code, errOut)
	}
	t.Logf("turnstile watch %s:\n%s", p, out)

	var seen []string
	for _, line := range got {
		// time, event, node, client, "held"/"waited"/"age" d, owner=…
		f := strings.Fields(line)
		if len(f) < 7 || !strings.HasPrefix(f[2], p+"/_c_") || f[3] != "turnstile" {
			t.Fatalf("watch line %q", line)
		}
		seen = append(seen, f[1]+" "+f[4]+" "+f[6])
	}
	want := []string{
		`holding age owner="first"`,
		`queued age owner="quitter"`,
		`left waited owner="quitter"`,
		`queued age owner="next"`,
		`released held owner="first"`,
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

	out, errOut := newSyncBuffer(), newSyncBuffer()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() { done <- run(wctx, []string{"-servers", srv.Addr(), "watch", "-json", p}, out, errOut) }()
	events := func(until string) []string {
		t.Helper()
		for {
			lines, changed := out.lines()
			var evs []string
			for _, line := range lines {
				var ev watchEvent
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("watch printed %q: %v", line, err)
				}
				evs = append(evs, ev.Event)
			}
			if slices.Contains(evs, until) {
				return evs
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("watch printed %q, never %s: %s", evs, until, errOut)
			}
		}
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
	stop()
	if code := <-done; code != exitOK {
		t.Fatalf("watch exited %d: %s", code, errOut)
	}
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
