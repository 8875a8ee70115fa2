package election_test

import (
	"context"
	"sync"
	"testing"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/seam"
)

// An Election given a Runtime does every off-loop thing through it: the
// observer's goroutine, its end with its context, and the reads of Leader
// and of the observer, on a real server.
func TestRuntimeCarriesObserveAndLeader(t *testing.T) {
	ctx := bounded(t)
	eng := startEngine(t, engine.Config{})
	path := electionPath(t)

	var mu sync.Mutex
	calls := make(map[string]int)
	count := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		calls[what]++
	}
	rt := seam.ElectionRuntime{
		Go: func(f func()) { count("go"); go f() },
		AfterFunc: func(ctx context.Context, f func()) func() bool {
			count("afterfunc")
			return context.AfterFunc(ctx, f)
		},
		Children: func(ctx context.Context, p string) ([]string, error) {
			count("children")
			return seam.Children(eng, ctx, p)
		},
		Data: func(ctx context.Context, p string) ([]byte, error) { count("data"); return seam.Data(eng, ctx, p) },
	}
	seam.SetElectionRuntime(eng, rt)
	e := election.New(eng, path)
	seam.ForgetElectionRuntime(eng)
	ld, err := e.Campaign(ctx, []byte("a")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obsCtx, stop := context.WithCancel(ctx)
	observed := e.Observe(obsCtx)
	if got := receive(t, ctx, observed); got.Node != ld.Node() || string(got.Value) != "a" {
		t.Fatalf("observed %s %q, want %s %q", got.Node, got.Value, ld.Node(), "a")
	}
	l, err := e.Leader(ctx)
	if err != nil || l.Node != ld.Node() {
		t.Fatalf("Leader = %s, %v; want %s", l.Node, err, ld.Node())
	}
	stop()
	for range observed { // closed by the AfterFunc the Runtime registered
	}
	if err := ld.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, what := range []string{"go", "afterfunc", "children", "data"} {
		if calls[what] == 0 {
			t.Errorf("the Runtime's %s was never called: %v", what, calls)
		}
	}
	if calls["data"] < 2 {
		t.Errorf("data read %d times, want the observer's and Leader's: %v", calls["data"], calls)
	}
}
