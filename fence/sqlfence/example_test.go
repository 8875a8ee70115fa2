package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/turnstile-go/turnstile/fence"
	"github.com/turnstile-go/turnstile/fence/sqlfence"
)

// A holder's write and its token's check in one transaction: the write
// runs after the check, reads included, and commits with it.
func ExampleFence_Do() {
	ctx := context.Background()
	admin, _ := sql.Open("postgres", pg.DSN("postgres"))
	defer admin.Close()
	_, _ = admin.ExecContext(ctx, "CREATE DATABASE example")
	db, _ := sql.Open("postgres", pg.DSN("example"))
	defer db.Close()
	_, _ = db.ExecContext(ctx, "CREATE TABLE stock (item text PRIMARY KEY, n int NOT NULL)")
	_, _ = db.ExecContext(ctx, "INSERT INTO stock VALUES ('bolt', 10)")

	// Bound to the lock path at setup; the token comes with each write
	// (fence.TokenOf(lease) where the holder has its lease).
	f, err := sqlfence.New(db, "/locks/stock", sqlfence.Options{})
	if err != nil {
		panic(err)
	}
	if err := f.CreateTable(ctx); err != nil {
		panic(err)
	}
	take := func(tok int64) error {
		return f.Do(ctx, fence.Token{Path: "/locks/stock", Value: tok}, func(ctx context.Context, tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT n FROM stock WHERE item = 'bolt'").Scan(&n); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "UPDATE stock SET n = $1 WHERE item = 'bolt'", n-1)
			return err
		})
	}
	fmt.Println(take(8192))                            // the newer holder
	fmt.Println(errors.Is(take(4096), fence.ErrStale)) // the one it replaced, late
	var n int
	_ = db.QueryRowContext(ctx, "SELECT n FROM stock").Scan(&n)
	fmt.Println(n)
	// Output:
	// <nil>
	// true
	// 9
}
