package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/internal/zktest"
	"github.com/turnstile-go/turnstile/lock"
)

// cycle takes and releases m once and returns the grant's token.
func cycle(t *testing.T, ctx context.Context, m *lock.Mutex) int64 {
	t.Helper()
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	token := l.Token()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	return token
}

// On a real server: an engine cycling on one path pins it and then takes
// the lock with a create and a delete, no listing; another client's
// acquisition in between makes the next cycle list again; tokens keep
// increasing across all of it.
func TestListingFreeCycle(t *testing.T) {
	ctx := context.Background()
	root := testRoot(t)
	path := root + "/hot"
	e1 := startEngine(t, engine.Config{})
	e2 := startEngine(t, engine.Config{})
	m1, m2 := lock.NewMutex(e1, path), lock.NewMutex(e2, path)

	var tokens []int64
	const cycles = 12
	before := e1.Stats()
	for range cycles {
		tokens = append(tokens, cycle(t, ctx, m1))
	}
	s := e1.Stats()
	lists, predicted := s.Lists-before.Lists, s.Predicted-before.Predicted
	if lists+predicted != cycles {
		t.Fatalf("%d cycles: %d listings sent and %d answered from a create's number, want them to add up", cycles, lists, predicted)
	}
	if predicted < cycles/2 {
		t.Fatalf("%d cycles on one path: only %d without a listing (%d listed)", cycles, predicted, lists)
	}
	conn := rawConn(t)
	children, _, err := conn.Children(path)
	if err != nil || !slices.ContainsFunc(children, nodename.IsPin) {
		t.Fatalf("children of %s: %v (%v), want the engine's pin", path, children, err)
	}

	// Another client takes the lock: e1's next create gets a number past
	// the prediction and lists.
	tokens = append(tokens, cycle(t, ctx, m2))
	s = e1.Stats()
	tokens = append(tokens, cycle(t, ctx, m1))
	if after := e1.Stats(); after.Lists != s.Lists+1 || after.Predicted != s.Predicted {
		t.Fatalf("after another client's cycle: %d listings, %d predicted, want one listing more (%d) and no prediction (%d)",
			after.Lists, after.Predicted, s.Lists+1, s.Predicted)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("token of grant %d is %d, not above %d: %v", i, tokens[i], tokens[i-1], tokens)
		}
	}

	// A holder by prediction excludes: e2 waits until e1 lets go.
	tokens = tokens[:0]
	for range 3 {
		cycle(t, ctx, m1)
	}
	s = e1.Stats()
	l1, err := m1.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e1.Stats().Predicted != s.Predicted+1 {
		t.Fatalf("the holder was not granted by prediction: %+v", e1.Stats())
	}
	f2 := m2.Acquire(ctx)
	eventually(t, "e2's node is queued behind e1's", func() bool {
		children, _, _ := conn.Children(path)
		return len(slices.DeleteFunc(children, nodename.IsPin)) == 2
	})
	if _, done, _ := f2.Result(); done {
		t.Fatal("e2 was granted while e1 held")
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := f2.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token() <= l1.Token() {
		t.Fatalf("e2's token %d is not above e1's %d", l2.Token(), l1.Token())
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Config.NoPin: every cycle lists, and no pin is ever made.
func TestNoPinListsEveryCycle(t *testing.T) {
	ctx := context.Background()
	path := testRoot(t) + "/cold"
	// Made before: a path the engine makes holds its first node without a
	// listing (cold keys), which is no pin's doing.
	mkdirs(t, rawConn(t), path)
	e := startEngine(t, engine.Config{NoPin: true})
	m := lock.NewMutex(e, path)
	for range 6 {
		cycle(t, ctx, m)
	}
	if s := e.Stats(); s.Pins != 0 || s.Predicted != 0 || s.Lists != 6 {
		t.Fatalf("NoPin: %d pin requests, %d predicted, %d listings; want 0, 0, 6", s.Pins, s.Predicted, s.Lists)
	}
	if eph := zktest.Ephemerals(t, rawConn(t), path); len(eph) != 0 {
		t.Fatalf("NoPin left %v", eph)
	}
}
