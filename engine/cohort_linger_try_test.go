package engine_test

import (
	"context"
	"fmt"
	"testing"

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
