package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/fence"
	"github.com/turnstile-go/turnstile/fence/sqlfence"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/turnstiletest"
)

// The stalled holder, with real leases of a real ZooKeeper: holder A reads
// the balance, stalls past its session (the server expires it), holder B
// is granted the lock and adds 10, then A wakes and writes what it read
// plus 1. Unfenced, B's deposit is lost; fenced, A's write is refused
// naming B's token, and the balance keeps B's deposit.
func TestStalledHolder(t *testing.T) {
	zk := turnstiletest.Start(t, 1)
	start := func() *engine.Engine {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		eng, err := engine.Start(ctx, engine.Config{Servers: zk.Servers, Dialer: zk.Dial})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		return eng
	}
	for _, fenced := range []bool{false, true} {
		name := map[bool]string{false: "unfenced", true: "fenced"}[fenced]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			db := freshDB(t)
			engA, engB := start(), start()
			path := "/acct-" + name
			f := newFence(t, db, path, sqlfence.Options{})
			write := func(l *engine.Lease, read func(ctx context.Context, tx *sql.Tx) (int64, error), delta int64) error {
				apply := func(ctx context.Context, tx *sql.Tx) error {
					b, err := read(ctx, tx)
					if err != nil {
						return err
					}
					_, err = tx.ExecContext(ctx, "UPDATE accounts SET balance = $1 WHERE id = 1", b+delta)
					return err
				}
				if !fenced {
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					defer tx.Rollback()
					if err := apply(ctx, tx); err != nil {
						return err
					}
					return tx.Commit()
				}
				return f.Do(ctx, fence.TokenOf(l), apply)
			}
			current := func(ctx context.Context, tx *sql.Tx) (b int64, err error) {
				err = tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&b)
				return b, err
			}

			a, err := lock.NewMutex(engA, path).Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			readByA := balance(t, db)
			// A stalls: its session expires meanwhile, and its node with it.
			if err := zk.ExpireSession(ctx, engA.SessionID()); err != nil {
				t.Fatal(err)
			}
			b, err := lock.NewMutex(engB, path).Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := write(b, current, 10); err != nil {
				t.Fatalf("B's deposit: %v", err)
			}
			// A wakes and writes what it read before the stall.
			err = write(a, func(context.Context, *sql.Tx) (int64, error) { return readByA, nil }, 1)
			got := balance(t, db)
			if !fenced {
				if err != nil || got != readByA+1 {
					t.Fatalf("unfenced: A's write %v, balance %d: the control shows no lost update", err, got)
				}
				t.Logf("unfenced: balance %d, B's deposit of 10 lost", got)
				return
			}
			var stale *fence.StaleError
			if !errors.As(err, &stale) || stale.Token != a.Token() || stale.Admitted != b.Token() {
				t.Fatalf("fenced: A's write: %v, want refused for B's token %d", err, b.Token())
			}
			if got != readByA+10 {
				t.Fatalf("fenced: balance %d, want %d", got, readByA+10)
			}
			_ = b.Release(ctx)
		})
	}
}
