package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// A release queued in one turn with 100 acquisitions of 25 KiB of node data
// each: the creates and the delete must not go out as one multi too large
// to send, nor may one refused batch fail writes that would succeed alone,
// nor a failed delete leave the released node blocking its path.
func TestLargeBatchFailsNothingAndOrphansNothing(t *testing.T) {
	ctx := context.Background()
	root := testRoot(t)
	gate := newLoopGate(root + "/gate")
	eng := startEngine(t, engine.Config{Observer: gate.observe})
	raw := rawConn(t)
	const n = 100
	for i := range n {
		mkdirs(t, raw, fmt.Sprintf("%s/p%d", root, i))
	}
	big := lock.WithOwner(strings.Repeat("x", 25<<10))

	held, err := lock.NewMutex(eng, root+"/held").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gateF := gate.hold(t, func() *engine.Future[*engine.Lease] { return lock.NewMutex(eng, root+"/gate").Acquire(ctx) })
	// The loop is held: the release and every acquisition are handled in
	// one turn, and their writes queued together.
	released := held.ReleaseAsync()
	acquired := make([]*engine.Future[*engine.Lease], n)
	for i := range n {
		acquired[i] = lock.NewMutex(eng, fmt.Sprintf("%s/p%d", root, i), big).Acquire(ctx)
	}
	gate.release()

	if _, err := released.Wait(ctx); err != nil {
		t.Errorf("release: %v", err)
	}
	failed, firstErr := 0, error(nil)
	for _, f := range acquired {
		l, err := f.Wait(ctx)
		if err != nil {
			if failed++; firstErr == nil {
				firstErr = err
			}
			continue
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("release %s: %v", l.Node(), err)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d acquisitions failed, the first with: %v", failed, n, firstErr)
	}
	if l, err := gateF.Wait(ctx); err == nil {
		l.Release(ctx)
	}
	var left []string
	defer func() {
		if len(left) > 0 {
			t.Logf("lock nodes left: %v", left)
		}
	}()
	eventually(t, "no lock node left", func() bool {
		left = ephemerals(t, raw, root)
		return len(left) == 0
	})
	t.Logf("stats: %+v", eng.Stats())
}
