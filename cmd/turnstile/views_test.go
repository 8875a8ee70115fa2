package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/internal/wait"
)

// turnstile's election nodes are not listed as Curator's: an observer is
// turnstile's (Curator has none), a candidate of a session that observes
// too is turnstile's, and a candidate nothing tells apart from a Java
// LeaderLatch's is "curator|turnstile". Times are labelled as what they
// are: when the node queued, its age, not how long a holder has held; in
// JSON to the millisecond, without float noise.
func TestViewsTellTheTruth(t *testing.T) {
	ctx := testCtx(t)
	path := lockPath(t)
	a, b := startEngine(t), startEngine(t)
	leader, err := election.New(a, path).Campaign(ctx, []byte("alpha")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Resign(ctx)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	election.New(b, path).Campaign(cctx, []byte("beta"))
	seen := election.New(b, path).Observe(cctx)
	<-seen

	var l lockView
	wait.Until(t, "a candidate waiting and an observer", func() bool {
		l, _ = lockAt(t, path)
		return len(l.Waiters) == 1 && len(l.Observers) == 1
	})
	if got := l.Observers[0].Client; got != "turnstile" {
		t.Errorf("observer's client %q, want turnstile", got)
	}
	if got := l.Waiters[0].Client; got != "turnstile" {
		t.Errorf("client of a candidate whose session observes: %q, want turnstile", got)
	}
	if got := l.Holders[0].Client; got != "curator|turnstile" {
		t.Errorf("client of a candidate nothing tells apart: %q, want curator|turnstile", got)
	}

	// Give the nodes an age whose float noise would show.
	time.Sleep(20 * time.Millisecond)
	raw := cli(t, "locks", "-json", path).stdout
	if strings.Contains(raw, `"age_seconds"`) || strings.Contains(raw, `"since"`) || !strings.Contains(raw, `"queued_at"`) {
		t.Errorf("JSON keys: want queued_at and node_age_seconds:\n%s", raw)
	}
	for _, m := range regexp.MustCompile(`"node_age_seconds": ([0-9.e+-]+)`).FindAllStringSubmatch(raw, -1) {
		if frac, ok := strings.CutPrefix(m[1], strings.SplitN(m[1], ".", 2)[0]+"."); ok && len(frac) > 3 {
			t.Errorf("node_age_seconds %s: more than milliseconds", m[1])
		}
	}
	text := cli(t, "locks", path).stdout
	if !regexp.MustCompile(`leader .* queued [0-9.ms]+ ago`).MatchString(text) {
		t.Errorf("locks text does not say when the leader queued:\n%s", text)
	}
}

// seconds keeps whole milliseconds, so JSON prints them as they are.
func TestSecondsRounded(t *testing.T) {
	for d, want := range map[time.Duration]float64{
		1132 * time.Millisecond:                      1.132,
		1132*time.Millisecond + 400*time.Microsecond: 1.132,
		-time.Second:     0,
		90 * time.Second: 90,
	} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %v, want %v", d, got, want)
		}
	}
}
