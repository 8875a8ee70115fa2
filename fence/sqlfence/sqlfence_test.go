package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq"
	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/fence"
	"github.com/turnstile-go/turnstile/fence/internal/pgserver"
	"github.com/turnstile-go/turnstile/fence/sqlfence"
)

var pg *pgserver.Server

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgserver.Shared(m, &pg)) }

var dbSeq struct {
	sync.Mutex
	n int
}

// freshDB makes a database of the test's own on the shared server, with
// an accounts table and a history of the admitted writes.
func freshDB(t *testing.T) *sql.DB {
	t.Helper()
	dbSeq.Lock()
	dbSeq.n++
	name := fmt.Sprintf("t%d", dbSeq.n)
	dbSeq.Unlock()
	ctx := context.Background()
	admin, err := sql.Open("postgres", pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("postgres", pg.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		"CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL)",
		"INSERT INTO accounts VALUES (1, 0)",
		"CREATE TABLE history (seq bigserial PRIMARY KEY, token bigint NOT NULL)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func newFence(t *testing.T, db *sql.DB, path string, opts sqlfence.Options) *sqlfence.Fence {
	t.Helper()
	f, err := sqlfence.New(db, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.CreateTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

func balance(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var b int64
	if err := db.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

func fenceToken(t *testing.T, db *sql.DB, path string) int64 {
	t.Helper()
	var tok int64
	err := db.QueryRow("SELECT token FROM turnstile_fence WHERE path = $1", path).Scan(&tok)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func setBalance(v int64) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = $1 WHERE id = 1", v)
		return err
	}
}

// A fresh token is admitted and its write commits with it; a stale one is
// refused, names the winner, and its write does not run.
func TestStaleRefusedFreshAdmitted(t *testing.T) {
	db := freshDB(t)
	f := newFence(t, db, "/locks/a", sqlfence.Options{})
	ctx := context.Background()
	if err := f.Do(ctx, fence.Token{Path: "/locks/a", Value: 20}, setBalance(20)); err != nil {
		t.Fatalf("fresh token (the path's first): %v", err)
	}
	if err := f.Do(ctx, fence.Token{Path: "/locks/a", Value: 20}, setBalance(21)); err != nil {
		t.Fatalf("the same grant again: %v", err)
	}
	ran := false
	err := f.Do(ctx, fence.Token{Path: "/locks/a", Value: 10}, func(ctx context.Context, tx *sql.Tx) error {
		ran = true
		return nil
	})
	var stale *fence.StaleError
	if !errors.As(err, &stale) || !errors.Is(err, fence.ErrStale) || stale.Admitted != 20 || stale.Token != 10 {
		t.Fatalf("stale token: %v, want a StaleError of 10 beaten by 20", err)
	}
	if ran {
		t.Fatal("the stale write ran")
	}
	if b, tok := balance(t, db), fenceToken(t, db, "/locks/a"); b != 21 || tok != 20 {
		t.Fatalf("balance %d token %d, want 21 and 20", b, tok)
	}
	if err := f.Do(ctx, fence.Token{Path: "/locks/a", Value: 30}, setBalance(30)); err != nil {
		t.Fatalf("a later grant: %v", err)
	}
	if b, tok := balance(t, db), fenceToken(t, db, "/locks/a"); b != 30 || tok != 30 {
		t.Fatalf("balance %d token %d, want 30 and 30", b, tok)
	}
}

// In the caller's own transaction, a write made before a refused check
// does not commit, even when the caller goes on as if the check passed.
func TestRefusedLeavesNothingBehind(t *testing.T) {
	db := freshDB(t)
	f := newFence(t, db, "/locks/a", sqlfence.Options{})
	ctx := context.Background()
	if err := f.Do(ctx, fence.Token{Path: "/locks/a", Value: 50}, setBalance(50)); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []fence.Token{{Path: "/locks/a", Value: 40}, {Path: "/locks/b", Value: 90}} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 999 WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO history (token) VALUES ($1)", tok.Value); err != nil {
			t.Fatal(err)
		}
		err = f.Check(ctx, tx, tok)
		if !errors.Is(err, fence.ErrStale) && !errors.Is(err, fence.ErrWrongLock) {
			t.Fatalf("check of %+v: %v, want a refusal", tok, err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 998 WHERE id = 1"); err == nil {
			t.Fatalf("%+v: a statement after the refusal succeeded", tok)
		}
		if err := tx.Commit(); err == nil {
			t.Fatalf("%+v: a refused transaction committed", tok)
		}
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM history").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if b, tok := balance(t, db), fenceToken(t, db, "/locks/a"); b != 50 || tok != 50 || n != 0 {
		t.Fatalf("balance %d token %d history %d, want 50, 50 and 0", b, tok, n)
	}
	var rows int
	if err := db.QueryRow("SELECT count(*) FROM turnstile_fence WHERE path = '/locks/b'").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("the other lock's refused check left a row (%d, %v)", rows, err)
	}
}

// A failed write commits neither itself nor its token.
func TestFailedWriteRecordsNothing(t *testing.T) {
	db := freshDB(t)
	f := newFence(t, db, "/locks/a", sqlfence.Options{})
	ctx := context.Background()
	boom := errors.New("boom")
	err := f.Do(ctx, fence.Token{Path: "/locks/a", Value: 7}, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 7 WHERE id = 1"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("write error: %v", err)
	}
	var rows int
	if err := db.QueryRow("SELECT count(*) FROM turnstile_fence").Scan(&rows); err != nil || rows != 0 || balance(t, db) != 0 {
		t.Fatalf("a failed write left fence rows %d (%v), balance %d", rows, err, balance(t, db))
	}
}

func TestInvalid(t *testing.T) {
	db := freshDB(t)
	if _, err := sqlfence.New(nil, "/p", sqlfence.Options{}); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("nil db: %v", err)
	}
	if _, err := sqlfence.New(db, "", sqlfence.Options{}); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("empty path: %v", err)
	}
	if _, err := sqlfence.New(db, "/p", sqlfence.Options{Table: "x; DROP TABLE accounts"}); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("table name: %v", err)
	}
	f := newFence(t, db, "/p", sqlfence.Options{Table: "public.fences"})
	ctx := context.Background()
	if err := f.Do(ctx, fence.Token{Path: "/p", Value: 0}, setBalance(1)); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("zero token: %v", err)
	}
	if err := f.Do(ctx, fence.Token{Path: "/p", Value: 1}, nil); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("nil write: %v", err)
	}
	if err := f.Check(ctx, nil, fence.Token{Path: "/p", Value: 1}); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("nil tx: %v", err)
	}
	if err := f.Do(ctx, fence.Token{Path: "/p", Value: 3}, setBalance(3)); err != nil || balance(t, db) != 3 {
		t.Errorf("in a table of its own: %v", err)
	}
}

// Holders with interleaved tokens, many at once, each reading the balance
// and writing it plus one in a fenced transaction: every admitted
// increment is in the balance (no update lost), the admitted writes
// committed in token order, and every refusal names a greater token.
func TestConcurrentHolders(t *testing.T) {
	for _, level := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelSerializable} {
		t.Run(level.String(), func(t *testing.T) {
			db := freshDB(t)
			db.SetMaxOpenConns(24)
			f := newFence(t, db, "/locks/acct", sqlfence.Options{
				TxOptions: &sql.TxOptions{Isolation: level},
				Attempts:  1000, // bounded; serialization failures are retried, not counted
			})
			const writers, rounds = 12, 25
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				admitted int64
				refused  int
			)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range rounds {
						// Rising per writer, interleaved across them, with
						// writers ahead and behind one another.
						tok := int64(1 + i*writers*2 + (w*5)%(writers*3))
						err := f.Do(ctx, fence.Token{Path: "/locks/acct", Value: tok}, func(ctx context.Context, tx *sql.Tx) error {
							var b int64
							if err := tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&b); err != nil {
								return err
							}
							if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = $1 WHERE id = 1", b+1); err != nil {
								return err
							}
							_, err := tx.ExecContext(ctx, "INSERT INTO history (token) VALUES ($1)", tok)
							return err
						})
						var stale *fence.StaleError
						switch {
						case err == nil:
							mu.Lock()
							admitted++
							mu.Unlock()
						case errors.As(err, &stale):
							if stale.Admitted <= tok {
								t.Errorf("token %d refused for %d", tok, stale.Admitted)
							}
							mu.Lock()
							refused++
							mu.Unlock()
						default:
							t.Errorf("token %d: %v", tok, err)
						}
					}
				}()
			}
			wg.Wait()
			if got := balance(t, db); got != admitted {
				t.Fatalf("balance %d after %d admitted increments: updates lost", got, admitted)
			}
			rows, err := db.Query("SELECT token FROM history ORDER BY seq")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var prev, n int64
			for rows.Next() {
				var tok int64
				if err := rows.Scan(&tok); err != nil {
					t.Fatal(err)
				}
				if tok < prev {
					t.Fatalf("token %d committed after %d", tok, prev)
				}
				prev, n = tok, n+1
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if n != admitted || fenceToken(t, db, "/locks/acct") != prev {
				t.Fatalf("history of %d writes, %d admitted; fence at %d, last write %d", n, admitted, fenceToken(t, db, "/locks/acct"), prev)
			}
			// Whatever the interleaving, the first token is now stale.
			if err := f.Do(ctx, fence.Token{Path: "/locks/acct", Value: 1}, setBalance(-1)); !errors.Is(err, fence.ErrStale) {
				t.Fatalf("token 1 after the run: %v", err)
			}
			t.Logf("%s: %d admitted, %d refused", level, admitted, refused)
		})
	}
}
