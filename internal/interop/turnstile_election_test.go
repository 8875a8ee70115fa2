package interop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/interop"
)

// campaignAcquire makes each acquisition one term of a candidate of el.
func campaignAcquire(el *election.Election) interop.Acquirer {
	return func(ctx context.Context, worker int, _ bool) (func(context.Context) error, error) {
		l, err := el.Campaign(ctx, fmt.Appendf(nil, "turnstile-%d", worker)).Wait(ctx)
		if err != nil {
			return nil, err
		}
		return l.Resign, nil
	}
}

// turnstile candidates and Curator LeaderLatch candidates in one election:
// never two leaders at once across the languages, and both sides lead in
// turn, every term of each.
func TestTurnstileWithCuratorLeaderLatch(t *testing.T) {
	mixed(t, curatorStarter(t), interop.PeerConfig{
		Recipe: "latch", Workers: 2, Iterations: 15, Hold: 3 * time.Millisecond,
	}, func(eng *engine.Engine, path string) interop.Acquirer {
		return campaignAcquire(election.New(eng, path))
	})
}

// turnstile reads a Curator leader's node and participant id, observes the
// Curator term and the turnstile term after it, and is elected when the
// Curator leader resigns.
func TestTurnstileObservesAndFollowsCuratorLeader(t *testing.T) {
	cp := curator(t)
	ctx := testCtx(t)
	eng := turnstileEngine(t)
	path := lockPath(t)
	el := election.New(eng, path)
	observed := el.Observe(ctx)

	// The Curator leader holds long enough for the turnstile candidate to
	// queue behind it; the checks below do not depend on how long.
	peer, err := interop.StartCurator(ctx, cp, interop.PeerConfig{
		Connect: zookeeper(t), Path: path, Recipe: "latch", Workers: 1, Iterations: 1,
		Hold: 3 * time.Second, Timeout: peerTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peer.Kill)
	node, err := peer.WaitLine(ctx, "LEADER ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(node, path+"/_c_") || !strings.Contains(node, "-latch-") {
		t.Errorf("Curator's leader node %q: want %s/_c_<uuid>-latch-<seq>", node, path)
	}
	wantID := fmt.Sprintf("curator-%d-0", peer.PID())
	mine := el.Campaign(ctx, []byte("turnstile"))
	got, err := el.Leader(ctx)
	if err != nil || got.Node != node || string(got.Value) != wantID {
		t.Fatalf("Leader() = %s %q, %v; want %s %q", got.Node, got.Value, err, node, wantID)
	}
	first := <-observed
	if first.Node != node || string(first.Value) != wantID {
		t.Fatalf("observed %s %q first, want the Curator leader %s %q", first.Node, first.Value, node, wantID)
	}

	l, err := mine.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second := <-observed; second.Node != l.Node() {
		t.Fatalf("observed %s after the Curator leader, want turnstile's %s", second.Node, l.Node())
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	checkAll(t, []*interop.Peer{peer}, waitAll(t, peer), 1)
}
