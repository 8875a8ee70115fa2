package lock_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
)

// waitClosed waits for ch, failing the test after a generous bound: a hang
// guard, not a timing check.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("never: %s", what)
	}
}

func TestRevokeTellsARevocableHolder(t *testing.T) {
	holderEng := startEngine(t, engine.Config{})
	revokerEng := startEngine(t, engine.Config{})
	ctx := context.Background()
	path := lockRoot(t) + "/r"

	held, err := lock.NewMutex(holderEng, path, lock.WithRevocation()).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A waiter queues behind; revoking is how it asks the holder to hurry.
	waiting := lock.NewMutex(revokerEng, path).Acquire(ctx)
	if err := lock.Revoke(ctx, revokerEng, held.Node()); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, "Revoked closes after Revoke", held.Revoked())
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := waiting.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next.Release(ctx)

	if err := lock.Revoke(ctx, revokerEng, held.Node()); !errors.Is(err, engine.ErrNoNode) {
		t.Fatalf("revoking a released node: %v, want ErrNoNode", err)
	}
	if err := lock.Revoke(ctx, revokerEng, "relative/path"); !errors.Is(err, engine.ErrInvalidPath) {
		t.Fatalf("revoking an invalid path: %v, want ErrInvalidPath", err)
	}
}

// Without WithRevocation a grant costs no revocation watch.
func TestNotRevocableCostsNoWatch(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	ctx := context.Background()
	l, err := lock.NewMutex(eng, lockRoot(t)+"/plain").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
	if s := eng.Stats(); s.RevokeWatches != 0 {
		t.Fatalf("%d revocation watches for a lock without revocation", s.RevokeWatches)
	}
}

func TestParticipantsInQueueOrder(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	ctx := context.Background()
	path := lockRoot(t) + "/who"

	holder, err := lock.NewMutex(eng, path, lock.WithOwner("first")).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(ctx)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, owner := range []string{"second", "third"} {
		lock.NewMutex(eng, path, lock.WithOwner(owner)).Acquire(cctx)
		// Queue them in a known order: wait until each node exists.
		eventually(t, owner+" queued", func() bool {
			ps, err := lock.Participants(ctx, eng, path)
			return err == nil && len(ps) > 0 && owner == ownerOf(t, ps[len(ps)-1])
		})
	}
	// Another application's child in the same directory is ignored.
	if _, err := conn.Create(path+"/not-a-lock-node", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	ps, err := lock.Participants(ctx, eng, path)
	if err != nil {
		t.Fatal(err)
	}
	var owners []string
	for _, p := range ps {
		owners = append(owners, ownerOf(t, p))
		if p.Kind != queue.KindMutex || p.Client != queue.Curator {
			t.Errorf("%s: kind %v client %v, want a Curator-named mutex node", p.Node, p.Kind, p.Client)
		}
	}
	if len(ps) != 3 || owners[0] != "first" || owners[1] != "second" || owners[2] != "third" {
		t.Fatalf("participants %v, want first, second, third", owners)
	}
	if !ps[0].Holds || ps[1].Holds || ps[2].Holds {
		t.Fatalf("holds: %v %v %v, want only the first", ps[0].Holds, ps[1].Holds, ps[2].Holds)
	}
	if ps[0].Node != holder.Node() || ps[0].Seq >= ps[1].Seq || ps[1].Seq >= ps[2].Seq {
		t.Fatalf("nodes out of order: %+v", ps)
	}
	if _, err := lock.Participants(ctx, eng, path+"/missing"); !errors.Is(err, engine.ErrNoNode) {
		t.Fatalf("participants of a missing path: %v, want ErrNoNode", err)
	}
}

func ownerOf(t *testing.T, p lock.Participant) string {
	t.Helper()
	var d struct {
		Host  string `json:"host"`
		PID   int    `json:"pid"`
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal(p.Data, &d); err != nil || d.Host == "" || d.PID == 0 {
		t.Fatalf("%s: data %q is not turnstile's {host, pid, owner}: %v", p.Node, p.Data, err)
	}
	return d.Owner
}
