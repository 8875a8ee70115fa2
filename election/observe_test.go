package election_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
)

// receive waits for the next leader on ch, failing the test when ctx ends
// or ch is closed.
func receive(t *testing.T, ctx context.Context, ch <-chan election.Leader) election.Leader {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("observer channel closed")
		}
		return l
	case <-ctx.Done():
		t.Fatal("no leader observed")
	}
	return election.Leader{}
}

// Every term is observed, in order: each leader resigns only once the
// observer has reported it, so no term can slip by unobserved. An observer
// that reads nothing meanwhile finds only the latest leader; one that joins
// late starts with the current leader.
func TestObserveSeesEveryTermInOrder(t *testing.T) {
	ctx := bounded(t)
	a := startEngine(t, engine.Config{})
	b := startEngine(t, engine.Config{})
	o := startEngine(t, engine.Config{})
	conn := inspect(t)
	path := electionPath(t)
	eo := election.New(o, path)
	obsCtx, stopObserving := context.WithCancel(ctx)
	observed := eo.Observe(obsCtx)
	slow := eo.Observe(obsCtx)

	const n = 8
	var terms []*engine.Future[*election.Leadership]
	for i := range n {
		eng := a
		if i%2 == 1 {
			eng = b
		}
		terms = append(terms, election.New(eng, path).Campaign(ctx, fmt.Appendf(nil, "candidate-%d", i)))
		// One at a time, so that the order of the nodes is the order here.
		eventually(t, "candidate queued", func() bool { return len(children(t, conn, path)) == i+2 }) // and the observer's
	}

	var late <-chan election.Leader
	for i, f := range terms {
		got := receive(t, ctx, observed)
		l, err := f.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Node != l.Node() || string(got.Value) != fmt.Sprintf("candidate-%d", i) {
			t.Fatalf("term %d: observed %s %q, want %s %q", i, got.Node, got.Value, l.Node(), l.Value())
		}
		if i == n/2 {
			late = eo.Observe(obsCtx)
			if got := receive(t, ctx, late); got.Node != l.Node() {
				t.Fatalf("a late observer began with %s, want the current leader %s", got.Node, l.Node())
			}
		}
		if err := l.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := terms[n-1].Wait(ctx)
	// The slow observer read nothing meanwhile: it finds the latest leader,
	// at most after one older leader that was the latest when its channel
	// was last filled (observers are told one after another). Never an older
	// leader after a newer one.
	first := receive(t, ctx, slow)
	if first.Node != last.Node() {
		if seqOfNode(first.Node) >= seqOfNode(last.Node()) {
			t.Fatalf("the slow observer found %s, want the latest leader %s", first.Node, last.Node())
		}
		if got := receive(t, ctx, slow); got.Node != last.Node() {
			t.Fatalf("the slow observer found %s after %s, want the latest leader %s", got.Node, first.Node, last.Node())
		}
	}
	select {
	case l := <-slow:
		t.Fatalf("the slow observer got %s after the latest leader", l.Node)
	default:
	}

	stopObserving()
	for _, ch := range []<-chan election.Leader{observed, slow, late} {
		for range ch { // drains what is left, ends when closed
		}
	}
	eventually(t, "no node once every term ended and observing stopped", func() bool {
		return len(children(t, conn, path)) == 0
	})
}

// Observers cost no goroutine each, and share one node; elections cost no
// goroutine each either.
func TestThousandsOfObserversAndElections(t *testing.T) {
	ctx := bounded(t)
	eng := startEngine(t, engine.Config{})
	conn := inspect(t)
	path := electionPath(t)
	el := election.New(eng, path)
	leader, err := el.Campaign(ctx, []byte("leader")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()

	const observers = 1000
	var chans []<-chan election.Leader
	for range observers {
		chans = append(chans, el.Observe(ctx))
	}
	for _, ch := range chans {
		if got := receive(t, ctx, ch); got.Node != leader.Node() {
			t.Fatalf("observed %s, want %s", got.Node, leader.Node())
		}
	}
	if n := len(children(t, conn, path)); n != 2 {
		t.Fatalf("%d nodes under the election path, want the leader's and one observer's", n)
	}

	const elections = 1000
	var waiting []*engine.Future[*election.Leadership]
	for i := range elections {
		e := election.New(eng, fmt.Sprintf("%s-%d", path, i))
		if _, err := e.Campaign(ctx, nil).Wait(ctx); err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, e.Campaign(ctx, nil))
	}
	eventually(t, "every second candidate waits", func() bool {
		s := eng.Stats()
		return s.Watches+s.LocalWatches >= elections // behind a leader of the same engine, without a server watch
	})
	eventually(t, "goroutines settle", func() bool { return runtime.NumGoroutine() < before+50 })
	t.Logf("goroutines: %d before, %d with %d observers and %d elections of two candidates",
		before, runtime.NumGoroutine(), observers, elections)
	for _, f := range waiting {
		if !pending(f) {
			t.Fatal("a second candidate was elected beside the first")
		}
	}
}

// seqOfNode is a node path's sequence number: its last ten characters,
// which order the candidates of one election.
func seqOfNode(node string) string { return node[max(0, len(node)-10):] }
