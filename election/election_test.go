package election_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
)

// pending reports whether a campaign is still waiting.
func pending(f *engine.Future[*election.Leadership]) bool {
	_, ok, _ := f.Result()
	return !ok
}

// Candidates lead one at a time, in the order they joined, even with one
// value on one engine; a leader that resigns and campaigns again goes to
// the back; every term's token is above the last.
func TestCampaignOrderAndResignGoesToTheBack(t *testing.T) {
	ctx := bounded(t)
	eng := startEngine(t, engine.Config{})
	conn := inspect(t)
	el := election.New(eng, electionPath(t))

	first, err := el.Campaign(ctx, []byte("same")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := el.Campaign(ctx, []byte("same"))
	eventually(t, "two candidates", func() bool { return len(children(t, conn, el.Path())) == 2 })
	third := el.Campaign(ctx, []byte("same"))
	eventually(t, "three candidates", func() bool { return len(children(t, conn, el.Path())) == 3 })
	for _, c := range children(t, conn, el.Path()) {
		if !strings.HasPrefix(c, "_c_") || !strings.Contains(c, "-latch-") {
			t.Errorf("candidate node %q: want Curator LeaderLatch's _c_<uuid>-latch-<seq>", c)
		}
	}
	if !pending(second) || !pending(third) {
		t.Fatal("a second leader was elected beside the first")
	}
	if string(first.Value()) != "same" {
		t.Errorf("Value() = %q", first.Value())
	}

	termCtx := first.Context()
	if err := termCtx.Err(); err != nil {
		t.Fatalf("the leader's context: %v", err)
	}
	if err := first.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(termCtx); !errors.Is(cause, engine.ErrNotHeld) {
		t.Errorf("the term's context after Resign: cause %v, want ErrNotHeld", cause)
	}
	again := el.Campaign(ctx, []byte("same")) // behind third
	lead2, err := second.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !pending(third) || !pending(again) {
		t.Fatal("two leaders at once")
	}
	terms := []*election.Leadership{first, lead2}
	for _, next := range []*engine.Future[*election.Leadership]{third, again} {
		if err := terms[len(terms)-1].Resign(ctx); err != nil {
			t.Fatal(err)
		}
		l, err := next.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		terms = append(terms, l)
	}
	for i := 1; i < len(terms); i++ {
		if terms[i].Token() <= terms[i-1].Token() {
			t.Errorf("term %d token %d not above term %d's %d", i, terms[i].Token(), i-1, terms[i-1].Token())
		}
		if terms[i].Node() == terms[i-1].Node() {
			t.Errorf("terms %d and %d share node %s", i-1, i, terms[i].Node())
		}
	}
	if err := terms[len(terms)-1].Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Resign(ctx); !errors.Is(err, engine.ErrNotHeld) {
		t.Errorf("second resign: %v, want ErrNotHeld", err)
	}
	eventually(t, "no candidate left", func() bool { return len(children(t, conn, el.Path())) == 0 })
}

func TestLeaderNamesTheLeader(t *testing.T) {
	ctx := bounded(t)
	a := startEngine(t, engine.Config{})
	b := startEngine(t, engine.Config{})
	path := electionPath(t)
	ea, eb := election.New(a, path), election.New(b, path)

	if _, err := eb.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader of an election never held: %v, want ErrNoLeader", err)
	}
	la, err := ea.Campaign(ctx, []byte("node-a")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := eb.Campaign(ctx, []byte("node-b"))
	got, err := eb.Leader(ctx)
	if err != nil || got.Node != la.Node() || string(got.Value) != "node-a" {
		t.Fatalf("Leader() = %+v, %v; want %s with value node-a", got, err, la.Node())
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := waiting.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ea.Leader(ctx); err != nil || got.Node != lb.Node() || string(got.Value) != "node-b" {
		t.Fatalf("Leader() = %+v, %v; want %s with value node-b", got, err, lb.Node())
	}
	if err := lb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ea.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader after the last resign: %v, want ErrNoLeader", err)
	}
	if _, err := election.New(a, "no/slash").Leader(ctx); !errors.Is(err, engine.ErrInvalidPath) {
		t.Fatalf("Leader of a relative path: %v, want ErrInvalidPath", err)
	}
	if _, err := election.New(a, "no/slash").Campaign(ctx, nil).Wait(ctx); !errors.Is(err, engine.ErrInvalidPath) {
		t.Fatalf("Campaign on a relative path: %v, want ErrInvalidPath", err)
	}
}

// A candidate that gives up before it is elected leaves no node, whether it
// was waiting or its create was still in flight.
func TestCancelLeavesNoNode(t *testing.T) {
	ctx := bounded(t)
	eng := startEngine(t, engine.Config{})
	conn := inspect(t)
	el := election.New(eng, electionPath(t))
	leader, err := el.Campaign(ctx, []byte("leader")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}

	waitCtx, cancelWaiting := context.WithCancel(ctx)
	waiting := el.Campaign(waitCtx, []byte("waiting"))
	eventually(t, "the candidate queued", func() bool { return len(children(t, conn, el.Path())) == 2 })
	var early []*engine.Future[*election.Leadership]
	for range 20 {
		c, cancel := context.WithCancel(ctx)
		early = append(early, el.Campaign(c, []byte("early")))
		cancel() // at once: the create may well be in flight
	}
	cancelWaiting()
	for _, f := range append(early, waiting) {
		if _, err := f.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled campaign: %v, want context.Canceled", err)
		}
	}
	eventually(t, "only the leader's node", func() bool { return len(children(t, conn, el.Path())) == 1 })
	if err := leader.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no node", func() bool { return len(children(t, conn, el.Path())) == 0 })
}
