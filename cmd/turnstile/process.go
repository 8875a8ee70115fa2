package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/turnstile-go/turnstile/internal/statusjson"
)

// runProcess reads what one process's engine holds and queues from the
// handler it serves (package status) at URL.
func runProcess(ctx context.Context, o options, args []string, stdout, _ io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return usageError("URL %q: %v", args[0], err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("read %s: %w", args[0], err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("read %s: %s", args[0], resp.Status)
	}
	var v statusjson.Snapshot
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&v); err != nil {
		return fmt.Errorf("read %s: not turnstile's status: %w", args[0], err)
	}
	if o.json {
		return writeJSON(stdout, v)
	}
	if s := v.Session; s != nil {
		fmt.Fprintf(stdout, "session %s %s (disconnects %d, reconnects %d, untrusted %d, expirations %d)\n",
			s.ID, s.State, s.Disconnects, s.Reconnects, s.Untrusted, s.Expirations)
	}
	fmt.Fprintf(stdout, "%d held, %d queued on ZooKeeper, %d waiting in cohorts, %d requests in flight\n",
		len(v.Held), len(v.Queued), v.CohortWaiting, v.InFlight)
	tw := newTable(stdout)
	for _, h := range v.Held {
		flags := ""
		if h.Suspended {
			flags += " suspended"
		}
		if h.Revoked {
			flags += " revoked"
		}
		fmt.Fprintf(tw, "  held\t%s\t%s\ttoken %d\t%s%s\n", h.Path, h.Node, h.Token, age(h.HeldSeconds), flags)
	}
	for _, q := range v.Queued {
		fmt.Fprintf(tw, "  queued\t%s\t-\t-\t%s\n", q.Path, age(q.WaitedSeconds))
	}
	return tw.Flush()
}
