package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// A lingering node is held by no one, so another engine's try on its lock
// is granted. Config accepts an ACL that grants every right the lock
// recipe needs but the write (read, create, delete), yet the mark that
// tells other clients a node lingers is a write: refused, the node's data
// version stays even, as a held node's, and the other engine's try fails
// with ErrWouldBlock though nobody holds the lock. The cohort machine takes
// its Mark as made whatever the write's outcome (the core only logs a
// refusal): the node lingers on unmarked, and only the try's own arrival,
// seen through the cohort's watch, sends it back, after the try has read
// it as held.
//
// The lingerer's loop is held still while the try runs, so that the try's
// arrival cannot make it give the node back before the try has read the
// node's mark, as it may on a quick loopback; it is let go once the try's
// node is queued (or the try has ended), and a try that waited on the mark
// is let in by the give-back. With an open ACL the same steps grant the
// try: the held loop alone does not make it fail.
func TestCohortLingerTryOfAnotherEngineIsGrantedThoughTheMarkIsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		acl  []zk.ACL
	}{
		{"open ACL", nil},
		{"ACL without write", zk.WorldACL(zk.PermRead | zk.PermCreate | zk.PermDelete)},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := lingering
			cfg.ACL = c.acl
			tryBesideHeldLinger(t, cfg)
		})
	}
}

func tryBesideHeldLinger(t *testing.T, cfg engine.Config) {
	lingerer, other := startEngine(t, cfg), startEngine(t, engine.Config{})
	raw := rawConn(t)
	p := testRoot(t) + "/m"
	lingerOnce(t, lingerer, lock.NewMutex(lingerer, p))
	if n := lingerer.Stats().Marks; n == 0 {
		t.Fatalf("the linger sent no mark")
	}
	for _, n := range ephemerals(t, raw, p) {
		if _, st, err := raw.Get(n); err == nil {
			t.Logf("lingering node %s: data version %d (odd: marked)", n, st.Version)
		}
	}
	resume := lingerer.HoldLoop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, _, err := tryThen(t, func() (*lock.Lease, error) { return lock.NewMutex(other, p).TryAcquire(ctx) },
		func() bool { return len(ephemerals(t, raw, p)) == 2 }, resume)
	if err != nil {
		t.Fatalf("another engine's try with nobody holding the lock (its node lingers): %v", err)
	}
	release(t, got)
}
