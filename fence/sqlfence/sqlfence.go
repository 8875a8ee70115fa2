// Package sqlfence fences a SQL database's data: the check of a lock's
// fencing token runs inside the transaction that writes, on a row of a
// fence table that holds, per lock path, the greatest token admitted.
// The user's write commits with the token's record, or neither does.
//
// The check is one statement, written for PostgreSQL (database/sql with
// any PostgreSQL driver: lib/pq, pgx's stdlib):
//
//	INSERT INTO turnstile_fence AS f (path, token) VALUES ($1, $2)
//	ON CONFLICT (path) DO UPDATE SET token = GREATEST(f.token, EXCLUDED.token)
//	RETURNING token
//
// It inserts the path's row if it is missing and otherwise raises its
// token, and in both cases locks the row until the transaction ends: the
// fenced transactions of one lock path run their writes one at a time,
// and the token they return is the greatest one committed or their own.
// A token below it is stale: the check then makes the transaction fail
// (a statement that raises an error), so that whatever the caller wrote
// in it before the check, and whatever it tries after, is rolled back
// and Commit fails, even if the caller ignores the check's error.
//
// # Isolation levels
//
// READ COMMITTED (PostgreSQL's default, and what READ UNCOMMITTED is in
// PostgreSQL): correct. A check that waits on the row lock of another
// transaction reads, once that one ends, the row as it committed
// (ON CONFLICT DO UPDATE locks and updates the newest version of the row,
// whatever the statement's snapshot), so it sees the token that won. Each
// later statement of the transaction sees what the transactions admitted
// before it committed.
//
// REPEATABLE READ and SERIALIZABLE: correct, with retries. A check whose
// snapshot predates the commit of another fenced transaction of the path
// fails with a serialization failure (SQLSTATE 40001) instead of waiting
// and reading the new token; Fence.Do retries the whole transaction then
// (up to Options.Attempts times), and the retry's check sees the new
// token. A caller of Check in its own transaction must retry likewise.
//
// In every level: read what the write depends on in the same transaction,
// after the check. A check made only when writing lets a stalled holder's
// write land between the read of the holder that replaced it and that
// holder's write; a check made first raises the path's token before the
// read, and the stalled holder is refused.
package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/fence"
)

// DefaultTable is the fence table's name when Options.Table is empty.
const DefaultTable = "turnstile_fence"

// Schema is the fence table's definition, for a migration of one's own
// (CreateTable runs it); %s is the table's name.
const Schema = `CREATE TABLE IF NOT EXISTS %s (path text PRIMARY KEY, token bigint NOT NULL)`

// Options tune a Fence; the zero value is the defaults.
type Options struct {
	// Table is the fence table: DefaultTable if empty. A name or
	// schema.name of letters, digits and underscores.
	Table string
	// TxOptions are Do's transactions' (nil: the database's default
	// isolation level).
	TxOptions *sql.TxOptions
	// Attempts bounds Do's tries of a transaction that fails with a
	// serialization failure or a deadlock (SQLSTATE 40001, 40P01): 8 if 0.
	Attempts int
}

// Fence is one lock path's fence in a database: the row of that path in
// the fence table.
type Fence struct {
	db    *sql.DB
	opts  Options
	check string
	v     *fence.Verifier
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// New binds the lock path to its row of the fence table in db.
func New(db *sql.DB, path string, opts Options) (*Fence, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: sqlfence: nil *sql.DB", engine.ErrInvalidRequest)
	}
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if !tableName.MatchString(opts.Table) {
		return nil, fmt.Errorf("%w: sqlfence: table name %q is not a plain identifier", engine.ErrInvalidRequest, opts.Table)
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 8
	}
	f := &Fence{db: db, opts: opts}
	f.check = fmt.Sprintf(`INSERT INTO %s AS f (path, token) VALUES ($1, $2)
ON CONFLICT (path) DO UPDATE SET token = GREATEST(f.token, EXCLUDED.token)
RETURNING token`, opts.Table)
	v, err := fence.NewVerifier(path, store{f})
	if err != nil {
		return nil, err
	}
	f.v = v
	return f, nil
}

// CreateTable creates the fence table if it does not exist.
func (f *Fence) CreateTable(ctx context.Context) error {
	_, err := f.db.ExecContext(ctx, fmt.Sprintf(Schema, f.opts.Table))
	if err != nil {
		return fmt.Errorf("sqlfence: create table %s: %w", f.opts.Table, err)
	}
	return nil
}

// Path is the lock path the fence is bound to.
func (f *Fence) Path() string { return f.v.Path() }

// Verifier is the fence as a fence.Verifier, for package httpfence: its
// Do runs the write inside a transaction of Fence.Do, which the write
// finds with Tx(ctx).
func (f *Fence) Verifier() *fence.Verifier { return f.v }

// Do runs write in a transaction of its own, after the check of tok, and
// commits both: write runs only if tok is of the fence's lock path (else
// fence.ErrWrongLock) and not stale (else a *fence.StaleError). A
// transaction that fails with a serialization failure or a deadlock is
// retried, write included, up to Options.Attempts times: write must do
// nothing outside the transaction. The transaction is also in ctx, for
// Tx.
func (f *Fence) Do(ctx context.Context, tok fence.Token, write func(ctx context.Context, tx *sql.Tx) error) error {
	if write == nil {
		return fmt.Errorf("%w: sqlfence: nil write", engine.ErrInvalidRequest)
	}
	return f.v.Do(ctx, tok, func(ctx context.Context) error { return write(ctx, Tx(ctx)) })
}

// Check admits tok in the caller's transaction tx: on success the path's
// row holds tok and stays locked until tx ends, and tx may write. A refusal (a
// *fence.StaleError, or fence.ErrWrongLock) leaves tx failed: every
// statement after it fails and Commit rolls back, so that nothing tx
// wrote before the check commits either. Any other error (the database's)
// leaves tx failed too, or the connection gone. Under REPEATABLE READ or
// SERIALIZABLE, a serialization failure (SQLSTATE 40001) means: retry
// the transaction.
func (f *Fence) Check(ctx context.Context, tx *sql.Tx, tok fence.Token) error {
	if tx == nil {
		return fmt.Errorf("%w: sqlfence: nil *sql.Tx", engine.ErrInvalidRequest)
	}
	if err := f.v.Valid(tok); err != nil {
		fail(ctx, tx, "token of another lock", 0, 0)
		return err
	}
	var high int64
	if err := tx.QueryRowContext(ctx, f.check, f.v.Path(), tok.Value).Scan(&high); err != nil {
		return fmt.Errorf("sqlfence: check of token %d: %w", tok.Value, err)
	}
	if high != tok.Value {
		fail(ctx, tx, "stale token", tok.Value, high)
		return &fence.StaleError{Path: f.v.Path(), Token: tok.Value, Admitted: high}
	}
	return nil
}

// fail makes tx fail, so that it cannot commit: a refused write must not
// commit what its transaction wrote before the check. The error it
// raises is what the server logs; the caller gets the refusal.
func fail(ctx context.Context, tx *sql.Tx, why string, token, high int64) {
	// The numbers are formatted by Go, why is a constant: no input of the
	// request reaches the statement's text.
	_, _ = tx.ExecContext(ctx, fmt.Sprintf(
		`DO $$BEGIN RAISE EXCEPTION 'turnstile fence: %s (token %d, admitted %d): the transaction is refused'; END$$`,
		why, token, high))
}

type txKey struct{}

// Tx is the transaction of a write that Fence.Do (or its Verifier's Do)
// runs, nil outside one.
func Tx(ctx context.Context) *sql.Tx {
	tx, _ := ctx.Value(txKey{}).(*sql.Tx)
	return tx
}

// store is the fence.Store of a Fence: each Admit a transaction.
type store struct{ f *Fence }

func (s store) Admit(ctx context.Context, path string, token int64, write func(ctx context.Context) error) error {
	var err error
	for range s.f.opts.Attempts {
		err = s.f.attempt(ctx, token, write)
		if !retryable(err) || ctx.Err() != nil {
			return err
		}
	}
	return fmt.Errorf("sqlfence: %d attempts: %w", s.f.opts.Attempts, err)
}

func (f *Fence) attempt(ctx context.Context, token int64, write func(ctx context.Context) error) error {
	tx, err := f.db.BeginTx(ctx, f.opts.TxOptions)
	if err != nil {
		return fmt.Errorf("sqlfence: begin: %w", err)
	}
	defer tx.Rollback() // after Commit, a no-op
	if err := f.Check(ctx, tx, fence.Token{Path: f.v.Path(), Value: token}); err != nil {
		return err
	}
	if err := write(context.WithValue(ctx, txKey{}, tx)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlfence: commit: %w", err)
	}
	return nil
}

// retryable is a serialization failure or a deadlock, by the SQLSTATE
// that PostgreSQL drivers' errors report (lib/pq's *pq.Error and pgx's
// *pgconn.PgError both have the method).
func retryable(err error) bool {
	var st interface{ SQLState() string }
	if !errors.As(err, &st) {
		return false
	}
	switch st.SQLState() {
	case "40001", "40P01":
		return true
	}
	return false
}
