package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// maxDataShown bounds the node data a text line quotes.
const maxDataShown = 60

// printLocks writes locks as text, a header per lock and a line per
// contender, or as a JSON array.
func printLocks(out io.Writer, asJSON bool, locks []lockView) error {
	now := time.Now()
	for i := range locks {
		setAges(locks[i].Holders, now)
		setAges(locks[i].Waiters, now)
		setAges(locks[i].Observers, now)
	}
	if asJSON {
		return writeJSON(out, locks)
	}
	tw := newTable(out)
	for _, l := range locks {
		// No tab: the header ends a column block, so each lock aligns its own.
		holder, waiter := "holder", "waiter"
		if l.Recipe == recipeElection {
			fmt.Fprintf(tw, "%s (%s): %d leading, %d waiting, %d observing\n", l.Path, l.Recipe, len(l.Holders), len(l.Waiters), len(l.Observers))
			holder, waiter = "leader", "candidate"
		} else {
			fmt.Fprintf(tw, "%s (%s): %d holding, %d waiting\n", l.Path, l.Recipe, len(l.Holders), len(l.Waiters))
		}
		for _, role := range []struct {
			name  string
			nodes []nodeView
		}{{holder, l.Holders}, {waiter, l.Waiters}, {"observer", l.Observers}} {
			for _, n := range role.nodes {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", role.name, n.Name, n.Client, queued(n.AgeSeconds), who(n))
			}
		}
	}
	return tw.Flush()
}

// printHolders writes one line per holder (its node's path, client, when
// it queued and who it is), or a JSON array.
func printHolders(out io.Writer, asJSON bool, holders []nodeView) error {
	setAges(holders, time.Now())
	if asJSON {
		return writeJSON(out, holders)
	}
	tw := newTable(out)
	for _, n := range holders {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Node, n.Client, queued(n.AgeSeconds), who(n))
	}
	return tw.Flush()
}

func newTable(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func setAges(nodes []nodeView, now time.Time) {
	for i := range nodes {
		nodes[i].AgeSeconds = seconds(now.Sub(nodes[i].Since))
	}
}

// seconds is d in seconds, to the millisecond, never negative (the
// server's clock may run ahead of ours). It divides whole milliseconds,
// so that JSON carries 1.132, not Duration.Seconds's 1.1320000000000001.
func seconds(d time.Duration) float64 {
	return float64(max(d, 0).Round(time.Millisecond).Milliseconds()) / 1000
}

// queued says, for text, when a node was created: "queued 3.2s ago". It is
// the node's age; for a holder that waited, ZooKeeper does not record when
// it was granted, so how long it has held is not known.
func queued(s float64) string { return "queued " + age(s) + " ago" }

// age formats a number of seconds for text: "3.2s", "4m5s".
func age(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d < time.Minute {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// who says who a contender is, for text: turnstile's owner record, or the
// node's data quoted.
func who(n nodeView) string {
	switch {
	case n.Owner != nil:
		s := fmt.Sprintf("host=%s pid=%d", n.Owner.Host, n.Owner.PID)
		if n.Owner.Owner != "" {
			s = "owner=" + strconv.Quote(n.Owner.Owner) + " " + s
		}
		return s
	case n.DataBase64 != nil:
		return fmt.Sprintf("data=<%d bytes>", len(n.DataBase64))
	case n.Data == "":
		return "-"
	}
	d := n.Data
	if len(d) > maxDataShown {
		cut := maxDataShown
		for cut > 0 && !utf8.RuneStart(d[cut]) {
			cut--
		}
		d = d[:cut] + "..."
	}
	return "data=" + strconv.Quote(d)
}
