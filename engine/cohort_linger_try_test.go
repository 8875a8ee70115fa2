package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// A lingering node is held by no one, so a try on its lock is granted,
// whoever tries. These are tries of this engine that are not the
// lingering cohort's own key, which a try of that key is passed (see
// TestCohortLingerTryIsPassed): another recipe on the same path, a
// reader beside a lingering writer, a strict-FIFO or revocable mutex.
// The engine sends the lingering node back and makes the try's node once
// the delete is answered.

// tryBesideLinger lingers on path with lingerer, then has try take the
// lock, rounds times; every try must be granted.
func tryBesideLinger(t *testing.T, eng *engine.Engine, path string,
	linger func(context.Context) (*lock.Lease, error), try func(context.Context) (*lock.Lease, error)) {
	t.Helper()
	ctx := context.Background()
	const rounds = 20
	for i := range rounds {
		l, err := linger(ctx)
		if err != nil {
			t.Fatalf("round %d: the lingering recipe: %v", i, err)
		}
		release(t, l)
		eventually(t, "the linger settled", func() bool { return eng.InFlight() == 0 && eng.CohortListed(path) })
		got, err := try(ctx)
		if err != nil {
			t.Fatalf("round %d of %d: a try with nobody holding the lock failed: %v", i+1, rounds, err)
		}
		release(t, got)
	}
}

func TestCohortLingerTryOfAnotherRecipeIsGranted(t *testing.T) {
	eng := startEngine(t, lingering)
	root := testRoot(t)
	cases := []struct {
		name string
		try  func(path string) func(context.Context) (*lock.Lease, error)
	}{
		{"strict FIFO mutex", func(p string) func(context.Context) (*lock.Lease, error) {
			return lock.NewMutex(eng, p, lock.WithStrictFIFO()).TryAcquire
		}},
		{"revocable mutex", func(p string) func(context.Context) (*lock.Lease, error) {
			return lock.NewMutex(eng, p, lock.WithRevocation()).TryAcquire
		}},
		{"mutex of another owner", func(p string) func(context.Context) (*lock.Lease, error) {
			return lock.NewMutex(eng, p, lock.WithOwner("other")).TryAcquire
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := fmt.Sprintf("%s/m%d", root, i)
			tryBesideLinger(t, eng, p, lock.NewMutex(eng, p).Lock, c.try(p))
		})
	}
	t.Run("reader beside a lingering writer", func(t *testing.T) {
		rw := lock.NewRWMutex(eng, root+"/rw")
		tryBesideLinger(t, eng, rw.Path(), rw.Writer().Lock, rw.Reader().TryAcquire)
	})
}

// marked waits until every lock node under p is marked lingering, as the
// lingering engine writes once its last holder released: a try of another
// client tells a lingering node from a held one by that mark.
func marked(t *testing.T, raw *zk.Conn, p string) {
	t.Helper()
	eventually(t, "the lingering node marked", func() bool {
		nodes := ephemerals(t, raw, p)
		for _, n := range nodes {
			_, st, err := raw.Get(n)
			if err != nil || st.Version%2 != 1 {
				return false
			}
		}
		return len(nodes) > 0
	})
}

// Another engine's try on a lock this engine lingers on is granted: it
// reads the marked node ahead, waits, and is let in by the give-back its
// arrival causes; its own recipe or another (a semaphore, whose guard
// lingers) alike.
func TestCohortLingerTryOfAnotherEngineIsGranted(t *testing.T) {
	lingerer, other := startEngine(t, lingering), startEngine(t, lingering)
	raw := rawConn(t)
	root := testRoot(t)
	ctx := context.Background()
	const rounds = 20
	t.Run("mutex", func(t *testing.T) {
		p := root + "/m"
		for i := range rounds {
			lingerOnce(t, lingerer, lock.NewMutex(lingerer, p))
			marked(t, raw, p)
			got, err := lock.NewMutex(other, p).TryAcquire(ctx)
			if err != nil {
				t.Fatalf("round %d of %d: another engine's try with nobody holding the lock failed: %v", i+1, rounds, err)
			}
			release(t, got)
		}
	})
	t.Run("semaphore of 3", func(t *testing.T) {
		p := root + "/s"
		mine, err := lock.NewSemaphore(lingerer, p, 3)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := lock.NewSemaphore(other, p, 3)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rounds {
			l, err := mine.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			release(t, l)
			marked(t, raw, p+"/locks")
			got, err := theirs.TryAcquire(ctx)
			if err != nil {
				t.Fatalf("round %d of %d: another engine's semaphore try with no lease held failed: %v", i+1, rounds, err)
			}
			release(t, got)
		}
	})
	t.Run("held", func(t *testing.T) {
		// A node held, marked from an earlier linger or not, still keeps
		// the other engine's try out.
		p := root + "/h"
		m := lock.NewMutex(lingerer, p)
		lingerOnce(t, lingerer, m)
		marked(t, raw, p)
		held := mustGet(t, m.Acquire(ctx)) // a pass: held, still marked
		// Bounded, so that a try left waiting on the mark fails here
		// rather than hang: it must fail on the unmark, one write away.
		tctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := lock.NewMutex(other, p).TryAcquire(tctx); !errors.Is(err, engine.ErrWouldBlock) {
			t.Fatalf("another engine's try on a held lock: %v, want ErrWouldBlock", err)
		}
		release(t, held)
	})
}
