package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// A try on a held lock fails with ErrWouldBlock, whatever was written into
// the holder's node. A revocation request (lock.Revoke, Curator's
// Revoker) writes the holder's node's data, and so moves its data version
// to 1: odd, the mark a cohort's lingering node carries. Another engine's
// try reads the node ahead as a lingering one, held by no one, and waits
// for it to go, where it must fail: however long the holder keeps the
// lock, revocable and asked to let go, or not revocable and never told.
//
// The try is left to run until it has ended or waits with nothing in
// flight, then the holder lets go: a try that waited is granted then,
// though the lock was held for the whole of its attempt.
func TestTryFailsOnAHolderAskedToLetGo(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   []lock.Option
		revoke bool
	}{
		{"no revocation request (control)", nil, false},
		{"revocable holder", []lock.Option{lock.WithRevocation()}, true},
		{"holder not revocable", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			holderEng, other := startEngine(t, engine.Config{}), startEngine(t, engine.Config{})
			raw := rawConn(t)
			p := testRoot(t) + "/m"
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			held, err := lock.NewMutex(holderEng, p, c.opts...).Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c.revoke {
				if err := lock.Revoke(ctx, other, held.Node()); err != nil {
					t.Fatal(err)
				}
			}
			if _, st, err := raw.Get(held.Node()); err == nil {
				t.Logf("the holder's node: data version %d", st.Version)
			}
			got, ended, err := tryThen(t, func() (*lock.Lease, error) { return lock.NewMutex(other, p).TryAcquire(ctx) },
				func() bool { return len(ephemerals(t, raw, p)) == 2 && other.InFlight() == 0 },
				func() { release(t, held) })
			if got != nil {
				release(t, got)
			}
			if !errors.Is(err, engine.ErrWouldBlock) {
				t.Fatalf("a try while the lock was held (ended before the release: %v): %v, want ErrWouldBlock", ended, err)
			}
		})
	}
}

// tryThen runs try until it has ended or waiting reports it waits, then
// calls then (a release, a loop let go), and returns the try's outcome
// and whether it had ended before then.
func tryThen(t *testing.T, try func() (*lock.Lease, error), waiting func() bool, then func()) (*lock.Lease, bool, error) {
	t.Helper()
	type outcome struct {
		l   *lock.Lease
		err error
	}
	tried := make(chan outcome, 1)
	go func() {
		l, err := try()
		tried <- outcome{l, err}
	}()
	var out outcome
	ended := false
	eventually(t, "the try ended, or waits", func() bool {
		select {
		case out = <-tried:
			ended = true
			return true
		default:
			return waiting()
		}
	})
	then()
	if !ended {
		out = <-tried
	}
	return out.l, ended, out.err
}
