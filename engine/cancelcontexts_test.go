package engine

import (
	"context"
	"errors"
	"testing"
)

// Contexts that end with one Done channel share a group, a context that
// never ends has none, and a followed group is told once, with the cause,
// when its context ends.
func TestCancelContextsNameByDoneAndTellTheEndOnce(t *testing.T) {
	var g cancelContexts
	if id := g.Group(context.Background()); id != 0 {
		t.Fatalf("a context that never ends is in group %d, want 0", id)
	}
	cause := errors.New("gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	a := g.Group(ctx)
	if b := g.Group(ctx); a == 0 || b != a {
		t.Fatalf("one context named groups %d and %d, want one non-zero", a, b)
	}
	other, stop := context.WithCancel(context.Background())
	defer stop()
	if c := g.Group(other); c == a {
		t.Fatalf("two contexts share group %d", c)
	}
	// afterDone keeps f, and the test runs it once ctx has ended: the
	// test's stand-in for context.AfterFunc, without its goroutine.
	var pending []func()
	afterDone := func(_ context.Context, f func()) func() bool {
		pending = append(pending, f)
		return func() bool { return true }
	}
	var told []error
	g.Follow(a, afterDone, func(group uint64, err error) {
		if group != a {
			t.Errorf("told of group %d, want %d", group, a)
		}
		told = append(told, err)
	})
	g.Follow(a, afterDone, func(uint64, error) { t.Error("a group followed twice") })
	cancel(cause)
	for _, f := range pending {
		f()
	}
	if len(told) != 1 || !errors.Is(told[0], cause) {
		t.Fatalf("told %v, want the cause once", told)
	}
}

// A group dropped stops being followed and is forgotten: its context,
// named again, is a new group. DropAll stops every follow.
func TestCancelContextsDropStopsFollowingAndForgets(t *testing.T) {
	var g cancelContexts
	stopped := 0
	afterDone := func(context.Context, func()) func() bool {
		return func() bool { stopped++; return true }
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := g.Group(ctx)
	g.Follow(a, afterDone, func(uint64, error) {})
	g.Drop(a)
	if stopped != 1 {
		t.Fatalf("Drop stopped following %d times, want 1", stopped)
	}
	b := g.Group(ctx)
	if b == a {
		t.Fatal("a dropped group is still named")
	}
	g.Follow(b, afterDone, func(uint64, error) {})
	other, stopOther := context.WithCancel(context.Background())
	defer stopOther()
	g.Group(other) // named, never followed: nothing to stop
	g.DropAll()
	if stopped != 2 {
		t.Fatalf("stopped following %d times after DropAll, want 2", stopped)
	}
	if c := g.Group(ctx); c == b {
		t.Fatal("DropAll kept a group named")
	}
}
