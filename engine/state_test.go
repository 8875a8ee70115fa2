package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
)

// stateBound is how long a test waits for a state the engine must reach:
// far beyond the session timeout of these tests.
const stateBound = 60 * time.Second

// awaitState reads states from ch until want, failing on a closed channel
// or after stateBound; it returns the states read, want last.
func awaitState(t *testing.T, ch <-chan engine.State, want engine.State) []engine.State {
	t.Helper()
	var seen []engine.State
	timeout := time.After(stateBound)
	for {
		select {
		case s, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %v, before %v", seen, want)
			}
			seen = append(seen, s)
			if s == want {
				return seen
			}
		case <-timeout:
			t.Fatalf("states %v, never %v", seen, want)
		}
	}
}

// With no lock held, a follower sees the connection cut (suspended), the
// session's trust lapse (lapsed: cut off, the engine cannot hear whether
// the server expired it), a trusted session again (connected) and
// Close (closed), in that order, and the channel then closes. State
// agrees at each step.
func TestStateChangesFollowPartitionAndClose(t *testing.T) {
	var p netfault.Partition
	eng := startEngine(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial})
	if s := eng.State(); s != engine.StateConnected {
		t.Fatalf("state after Start: %v", s)
	}
	ch := eng.StateChanges(context.Background())
	awaitState(t, ch, engine.StateConnected)

	p.Cut()
	awaitState(t, ch, engine.StateSuspended)
	awaitState(t, ch, engine.StateLapsed)
	p.Heal()
	awaitState(t, ch, engine.StateConnected)
	if s := eng.State(); s != engine.StateConnected {
		t.Errorf("State after the heal: %v", s)
	}

	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	awaitState(t, ch, engine.StateClosed)
	if s, ok := <-ch; ok {
		t.Errorf("after closed: %v, want the channel closed", s)
	}
	if s := eng.State(); s != engine.StateClosed {
		t.Errorf("State after Close: %v", s)
	}
	// A follower that comes late reads closed, once.
	late := eng.StateChanges(context.Background())
	if s := <-late; s != engine.StateClosed {
		t.Errorf("late follower: %v", s)
	}
	if _, ok := <-late; ok {
		t.Error("late follower's channel open")
	}
}

// A follower whose context ends stops following: its channel closes.
func TestStateChangesEndWithContext(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	ch := eng.StateChanges(ctx)
	if s := <-ch; s != engine.StateConnected {
		t.Fatalf("first state: %v", s)
	}
	cancel()
	select {
	case s, ok := <-ch:
		if ok {
			t.Fatalf("after cancel: %v, want the channel closed", s)
		}
	case <-time.After(stateBound):
		t.Fatal("channel not closed after cancel")
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[engine.State]string{
		engine.StateConnected: "connected", engine.StateSuspended: "suspended",
		engine.StateExpired: "expired", engine.StateClosed: "closed", engine.StateLapsed: "lapsed", engine.State(0): "State(0)",
	} {
		if got := s.String(); got != want {
			t.Errorf("%d: %q, want %q", int(s), got, want)
		}
	}
}
