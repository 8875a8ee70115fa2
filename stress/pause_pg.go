package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/turnstile-go/turnstile/fence"
	"github.com/turnstile-go/turnstile/fence/sqlfence"
)

// holdResource is what the holders of a pause run write once per hold: the
// file of resource.go, which refuses a stale token itself, or an account in
// PostgreSQL (-pause-resource postgres), which a holder reads and then
// writes, fenced or not. The stalled holder is stopped between its read
// and its write.
type holdResource interface {
	// read is what the holder reads before it writes (the file: nothing).
	read(ctx context.Context, token int64, hasToken bool) (int64, error)
	// write writes what read returned plus the holder's one deposit;
	// accepted is false when the resource refused a stale token.
	write(ctx context.Context, token int64, hasToken bool, read int64, who string) (accepted bool, err error)
	// writes is the number of writes accepted so far.
	writes(ctx context.Context) (int64, error)
	// judgesTokens: a stale token is refused (the file; the account only
	// with the fence).
	judgesTokens() bool
}

// fileHold is the file as a holdResource.
type fileHold struct{ r *fencedResource }

func (fileHold) read(context.Context, int64, bool) (int64, error) { return 0, nil }

func (f fileHold) write(_ context.Context, token int64, hasToken bool, _ int64, who string) (bool, error) {
	accepted, _, err := f.r.write(token, hasToken, who)
	return accepted, err
}

func (f fileHold) writes(context.Context) (int64, error) {
	st, err := f.r.state()
	return st.writes, err
}

func (fileHold) judgesTokens() bool { return true }

// pgAccount is one balance in a database of its own: a row that every
// holder reads and then sets to what it read plus one (its deposit), as an
// application under a lock does, with a count of the writes that
// committed beside it (incremented by the database, so never lost). With
// fenced set, each of its transactions is run by a sqlfence.Fence bound to
// the lock path: the token's check comes first in the transaction that
// reads and in the one that writes, so a holder whose token is below one
// the fence admitted reads nothing and writes nothing.
type pgAccount struct {
	db    *sql.DB
	path  string
	fence *sqlfence.Fence // nil: unfenced
}

const (
	pgAccountSchema = `CREATE TABLE IF NOT EXISTS account (id int PRIMARY KEY, balance bigint NOT NULL, writes bigint NOT NULL)`
	pgAccountRead   = `SELECT balance FROM account WHERE id = 1`
	pgAccountWrite  = `UPDATE account SET balance = $1, writes = writes + 1 WHERE id = 1`
)

// openPGAccount connects to the database of dsn, bound to lock path;
// create also makes the table, the fence's table and the account at 0.
func openPGAccount(ctx context.Context, dsn, path string, fenced, create bool) (*pgAccount, error) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	// Connections kept open for every worker: a new one is a new server
	// process, which would be most of a hold's time.
	db.SetMaxIdleConns(64)
	a := &pgAccount{db: db, path: path}
	if fenced {
		if a.fence, err = sqlfence.New(db, path, sqlfence.Options{}); err != nil {
			db.Close()
			return nil, err
		}
	}
	if create {
		_, err = db.ExecContext(ctx, pgAccountSchema)
		if err == nil {
			_, err = db.ExecContext(ctx, `INSERT INTO account VALUES (1, 0, 0) ON CONFLICT DO NOTHING`)
		}
		if err == nil && a.fence != nil {
			err = a.fence.CreateTable(ctx)
		}
	} else {
		err = db.PingContext(ctx)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres account: %w", err)
	}
	return a, nil
}

// createPGDatabase makes database name afresh on srv.
func createPGDatabase(ctx context.Context, srv *pgServer, name string) error {
	db, err := sql.Open("postgres", srv.dsn("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	// name is the harness's own (pause_<n>): no input reaches the text.
	if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "CREATE DATABASE "+name)
	return err
}

func (a *pgAccount) tx(ctx context.Context, token int64, hasToken bool, f func(ctx context.Context, tx *sql.Tx) error) error {
	if a.fence != nil {
		if !hasToken {
			return errors.New("postgres account: fenced, and the lock has no token")
		}
		return a.fence.Do(ctx, fence.Token{Path: a.path, Value: token}, f)
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (a *pgAccount) read(ctx context.Context, token int64, hasToken bool) (int64, error) {
	var b int64
	err := a.tx(ctx, token, hasToken, func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, pgAccountRead).Scan(&b)
	})
	return b, err
}

func (a *pgAccount) write(ctx context.Context, token int64, hasToken bool, read int64, _ string) (bool, error) {
	err := a.tx(ctx, token, hasToken, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, pgAccountWrite, read+1)
		return err
	})
	if errors.Is(err, fence.ErrStale) {
		return false, nil
	}
	return err == nil, err
}

func (a *pgAccount) writes(ctx context.Context) (int64, error) {
	var n int64
	err := a.db.QueryRowContext(ctx, `SELECT writes FROM account WHERE id = 1`).Scan(&n)
	return n, err
}

// final is the account at the end: its balance and the writes that
// committed.
func (a *pgAccount) final(ctx context.Context) (balance, writes int64, err error) {
	err = a.db.QueryRowContext(ctx, `SELECT balance, writes FROM account WHERE id = 1`).Scan(&balance, &writes)
	return balance, writes, err
}

func (a *pgAccount) judgesTokens() bool { return a.fence != nil }
func (a *pgAccount) close() error       { return a.db.Close() }

// accountResult is the account's books at the end of a run: each holder
// deposits one with each write, so the balance must equal the deposits
// acknowledged (whose transaction committed, as the holder was told).
type accountResult struct {
	Fenced bool `json:"fenced"` // every transaction checked the token first (sqlfence)
	// Acknowledged: the workers' deposits and the stalled holder's whose
	// commit succeeded.
	Acknowledged int64 `json:"deposits_acknowledged"`
	Balance      int64 `json:"final_balance"`
	// Committed is the database's count of committing writes; it differs
	// from Acknowledged only if a commit's answer was lost.
	Committed int64 `json:"writes_committed"`
	// LostUpdates: acknowledged deposits the balance does not hold, each
	// overwritten by a write of a balance read before it committed.
	LostUpdates int64 `json:"lost_updates"`
}

// account balances the books.
func account(fenced bool, workerDeposits, stalledDeposits, balance, committed int64) *accountResult {
	a := &accountResult{Fenced: fenced, Acknowledged: workerDeposits + stalledDeposits, Balance: balance, Committed: committed}
	a.LostUpdates = a.Acknowledged - balance
	return a
}

// violations is what the books show against a fenced account: a lost
// update, or a balance above the deposits (neither can happen when every
// stale write is refused). Unfenced, lost updates are what the run shows.
func (a *accountResult) violations() int64 {
	if !a.Fenced {
		return 0
	}
	if a.LostUpdates < 0 {
		return -a.LostUpdates
	}
	return a.LostUpdates
}

func (a *accountResult) String() string {
	fenced := "unfenced"
	if a.Fenced {
		fenced = "fenced (sqlfence, in each transaction)"
	}
	return fmt.Sprintf("account %s: deposits acknowledged %d, balance %d, lost updates %d (writes committed %d)",
		fenced, a.Acknowledged, a.Balance, a.LostUpdates, a.Committed)
}

// printPauseTable is the pause runs on an account side by side: for each
// impl, its stalls, what happened to the stale writes, and the books.
func printPauseTable(w io.Writer, results []*result) {
	var rows []*result
	for _, r := range results {
		if r.Skipped == "" && r.Pause != nil && r.Pause.Account != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\npause on a PostgreSQL account: each hold reads the balance, then writes it plus a deposit of 1; the stalled holder is stopped between its read and its write")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "impl\tfence\tstalls\tanother holder in\tits writes in each\tstale writes accepted\trefused\tdeposits acknowledged\tfinal balance\tlost updates\tcycles/s\t")
	for _, r := range rows {
		p, a := r.Pause, r.Pause.Account
		fenced := "none"
		if a.Fenced {
			fenced = "sqlfence"
		}
		var wrote []string
		for _, n := range p.OthersWrote {
			wrote = append(wrote, fmt.Sprint(n))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%.0f\t\n", r.Impl, fenced, p.Stalls, p.SecondHolderIn, strings.Join(wrote, ","),
			p.StaleAccepted, p.StaleRefused, a.Acknowledged, a.Balance, a.LostUpdates, r.CyclesPerS)
	}
	tw.Flush()
	fmt.Fprintln(w, "(its writes in each: another holder's, in each stall, between the stalled holder's read and its continue; stale writes: the stalled holder's, when continued; lost updates: deposits acknowledged less the final balance: the others' writes a stale write overwrote, or the stale write's own deposit when it landed between another holder's read and write)")
}
