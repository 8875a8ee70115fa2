package election_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
)

// receiveValue reads ch until it receives a leader with value want, and
// fails if any leader it receives meanwhile is not node.
func receiveValue(t *testing.T, ch <-chan election.Leader, node, want string) {
	t.Helper()
	ctx := bounded(t)
	for {
		l := receive(t, ctx, ch)
		if l.Node != node {
			t.Fatalf("observed leader %s (%q), want %s", l.Node, l.Value, node)
		}
		if string(l.Value) == want {
			return
		}
	}
}

// A leader proclaims new values without a new election: Value, Leader and
// observers see each, an observer on another engine (told by the
// node's data watch) as well as one on the leader's own Election (whose
// engine tells it nothing of its own node's data). The term and its token
// stay the same. (Failing first, with observe.go as before: the observers
// never receive "second".)
func TestProclaim(t *testing.T) {
	ctx := bounded(t)
	a := startEngine(t, engine.Config{})
	o := startEngine(t, engine.Config{})
	path := electionPath(t)
	el := election.New(a, path)
	remote := election.New(o, path).Observe(ctx)
	local := el.Observe(ctx)

	l, err := el.Campaign(ctx, []byte("first")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := l.Node()
	receiveValue(t, remote, node, "first")
	receiveValue(t, local, node, "first")
	token := l.Token()
	for _, v := range []string{"second", "third"} {
		if err := l.Proclaim(ctx, []byte(v)); err != nil {
			t.Fatalf("Proclaim(%q): %v", v, err)
		}
		if string(l.Value()) != v {
			t.Errorf("Value() = %q after Proclaim(%q)", l.Value(), v)
		}
		receiveValue(t, remote, node, v)
		receiveValue(t, local, node, v)
		got, err := el.Leader(ctx)
		if err != nil || got.Node != node || string(got.Value) != v {
			t.Errorf("Leader() = %s %q, %v; want %s %q", got.Node, got.Value, err, node, v)
		}
	}
	if !l.Held() || l.Token() != token {
		t.Errorf("after Proclaim: held %v, token %d (was %d)", l.Held(), l.Token(), token)
	}
	if err := l.Proclaim(ctx, make([]byte, engine.MaxDataLen+1)); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("Proclaim of an oversized value: %v, want ErrInvalidRequest", err)
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Proclaim(ctx, []byte("late")); !errors.Is(err, engine.ErrNotHeld) {
		t.Errorf("Proclaim after Resign: %v, want ErrNotHeld", err)
	}
}

// A deposed leader cannot overwrite: its node deleted behind its back (as
// the server does when its session expires), the next candidate leads,
// and the old leader's Proclaim fails with ErrLost, leaving the new
// leader's value as it was.
func TestProclaimDeposed(t *testing.T) {
	ctx := bounded(t)
	a := startEngine(t, engine.Config{})
	b := startEngine(t, engine.Config{})
	conn := inspect(t)
	path := electionPath(t)
	old, err := election.New(a, path).Campaign(ctx, []byte("old")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	standby := election.New(b, path).Campaign(ctx, []byte("new"))
	eventually(t, "the standby queued", func() bool { return len(children(t, conn, path)) == 2 })
	if err := conn.Delete(old.Node(), -1); err != nil {
		t.Fatal(err)
	}
	next, err := standby.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Proclaim(ctx, []byte("overwritten")); !errors.Is(err, engine.ErrLost) {
		t.Errorf("the deposed leader's Proclaim: %v, want ErrLost", err)
	}
	got, err := election.New(b, path).Leader(ctx)
	if err != nil || got.Node != next.Node() || string(got.Value) != "new" {
		t.Errorf("Leader() = %s %q, %v; want %s \"new\"", got.Node, got.Value, err, next.Node())
	}
	if err := next.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// Proclaim writes only over its own term's value: a value written to the
// leader's node by anyone else since is not overwritten (the write is
// versioned); the next Proclaim after a successful one goes through.
func TestProclaimVersioned(t *testing.T) {
	ctx := bounded(t)
	a := startEngine(t, engine.Config{})
	conn := inspect(t)
	path := electionPath(t)
	l, err := election.New(a, path).Campaign(ctx, []byte("v0")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(ctx)
	for _, v := range []string{"v1", "v2"} {
		if err := l.Proclaim(ctx, []byte(v)); err != nil {
			t.Fatalf("Proclaim(%q): %v", v, err)
		}
	}
	if _, err := conn.Set(l.Node(), []byte("theirs"), -1); err != nil {
		t.Fatal(err)
	}
	if err := l.Proclaim(ctx, []byte("mine")); !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("Proclaim over another's write: %v, want ErrBadVersion", err)
	}
	if data, _, err := conn.Get(l.Node()); err != nil || string(data) != "theirs" {
		t.Errorf("the node after a refused Proclaim: %q, %v; want \"theirs\"", data, err)
	}
	if string(l.Value()) != "v2" {
		t.Errorf("Value() = %q after a refused Proclaim, want \"v2\"", l.Value())
	}
}

// A term that ends while its Proclaim is in flight is reported, not a
// success: the reply to the write is held back until the term's trust has
// lapsed (Lost closed), and Proclaim then fails with the loss.
func TestProclaimEndedInFlight(t *testing.T) {
	ctx := bounded(t)
	var g netfault.Gate
	// Trust lapses 5 s after the last answer; the client gives the
	// connection up only after about 13 s of silence.
	a := startEngine(t, engine.Config{Dialer: g.Dial, SessionTimeout: 20 * time.Second, LostMargin: 15 * time.Second})
	path := electionPath(t)
	l, err := election.New(a, path).Campaign(ctx, []byte("v0")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g.Hold()
	defer g.Release() // before the engine's Close, which would wait on the gate
	// The client's read already waiting when the gate closed takes the
	// next reply: a Proclaim answered by it is tried again, and the next
	// one's reply is held.
	var done chan error
	for attempt := 0; ; attempt++ {
		done = make(chan error, 1)
		go func() { done <- l.Proclaim(ctx, []byte("late")) }()
		select {
		case <-l.Lost():
		case err := <-done:
			if err != nil || attempt > 0 {
				t.Fatalf("Proclaim %d returned %v with the gate closed", attempt, err)
			}
			continue
		case <-ctx.Done():
			t.Fatal("the term never lapsed")
		}
		break
	}
	g.Release()
	if err := <-done; !errors.Is(err, engine.ErrLost) {
		t.Errorf("Proclaim whose term ended in flight: %v, want ErrLost", err)
	}
}
