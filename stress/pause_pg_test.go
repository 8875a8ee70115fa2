package main

import (
	"bytes"
	"strings"
	"testing"
)

// The books of an account: the balance against the deposits acknowledged.
// Unfenced, a shortfall is what the run shows; fenced, any difference is a
// violation.
func TestAccountBooks(t *testing.T) {
	for _, c := range []struct {
		name                            string
		fenced                          bool
		workers, stalled, balance, comm int64
		lost, violations                int64
	}{
		{"unfenced, balanced", false, 10, 0, 10, 10, 0, 0},
		// A stalled holder read 4, three deposits came after, it wrote 5.
		{"unfenced, overwritten", false, 7, 1, 5, 8, 3, 0},
		{"fenced, stale write refused", true, 7, 0, 7, 7, 0, 0},
		{"fenced, overwritten", true, 7, 1, 5, 8, 3, 3},
		// A commit the holder was not told of: a surplus, as wrong as a loss.
		{"fenced, surplus", true, 7, 0, 8, 8, -1, 1},
	} {
		a := account(c.fenced, c.workers, c.stalled, c.balance, c.comm)
		if a.Acknowledged != c.workers+c.stalled || a.LostUpdates != c.lost || a.violations() != c.violations {
			t.Errorf("%s: %+v, violations %d; want lost %d, violations %d", c.name, *a, a.violations(), c.lost, c.violations)
		}
	}
	var nilPause *pauseResult
	if nilPause.account() != nil {
		t.Error("a run without a pause has books")
	}
}

// The side-by-side table has a row for each run on an account, none for
// the file's.
func TestPauseTable(t *testing.T) {
	var b bytes.Buffer
	printPauseTable(&b, []*result{
		{Impl: "turnstile", Pause: &pauseResult{Stalls: 3, SecondHolderIn: 3, OthersWrote: []int64{20, 21, 22}, StaleAccepted: 3, Account: account(false, 100, 3, 40, 103)}},
		{Impl: "turnstile-sqlfence", Pause: &pauseResult{Stalls: 3, SecondHolderIn: 3, OthersWrote: []int64{30, 0, 31}, StaleRefused: 3, Account: account(true, 90, 0, 90, 90)}},
		{Impl: "gozk", Pause: &pauseResult{Stalls: 3}},
	})
	out := b.String()
	rows := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = strings.Join(f, " ")
		}
	}
	for _, want := range []string{
		"turnstile none 3 3 20,21,22 3 0 103 40 63 0",
		"turnstile-sqlfence sqlfence 3 3 30,0,31 0 3 90 90 0 0",
	} {
		if rows[strings.Fields(want)[0]] != want {
			t.Errorf("want the row %q:\n%s", want, out)
		}
	}
	if _, ok := rows["gozk"]; ok {
		t.Errorf("a run on the file in the table:\n%s", out)
	}
	b.Reset()
	printPauseTable(&b, []*result{{Impl: "gozk", Pause: &pauseResult{Stalls: 3}}})
	if b.Len() != 0 {
		t.Errorf("a table without runs on an account:\n%s", b.String())
	}
}
