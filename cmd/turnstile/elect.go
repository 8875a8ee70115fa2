package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/turnstile-go/turnstile/election"
)

// defaultID is a candidate's value when -id is not given: who it is.
func defaultID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// runElect campaigns at PATH and runs CMD while leading; with -observe, it
// prints each leader instead.
func runElect(ctx context.Context, o options, args []string, stdout, stderr io.Writer) error {
	path, argv := args[0], args[1:]
	switch {
	case o.observe && len(argv) > 0:
		return usageError("elect -observe takes PATH only; got a command too")
	case !o.observe && len(argv) == 0:
		return usageError("elect takes PATH [--] CMD [ARGS...], or -observe PATH")
	}
	if o.observe {
		return observe(ctx, o, path, stdout)
	}
	waitCtx, cancel := waitContext(ctx, o)
	defer cancel()
	eng, err := openEngine(waitCtx, o)
	if err != nil {
		return notTaken(ctx, waitCtx, "lead of "+path, o, err)
	}
	defer eng.Close()
	lead, err := election.New(eng, path).Campaign(waitCtx, []byte(o.owner)).Wait(waitCtx)
	if err != nil {
		return notTaken(ctx, waitCtx, "lead of "+path, o, err)
	}
	return runUnder(ctx, o, path, "leadership", lead.Lease, argv, stdout, stderr) // its Release resigns
}

// leaderEvent is one line of elect -observe.
type leaderEvent struct {
	Time  time.Time `json:"time"`
	Path  string    `json:"path"`
	Node  string    `json:"node"`            // the leader's node, relative to -root
	Value string    `json:"value,omitempty"` // its value, when text
}

// observe prints the leader of the election at path, then each new one,
// until ctx ends or -for has passed.
func observe(ctx context.Context, o options, path string, stdout io.Writer) error {
	if o.watchOn > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.watchOn)
		defer cancel()
	}
	eng, err := openEngine(ctx, o)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer eng.Close()
	for l := range election.New(eng, path).Observe(ctx) {
		ev := leaderEvent{Time: time.Now(), Path: path, Node: l.Node}
		if utf8.Valid(l.Value) {
			ev.Value = string(l.Value)
		}
		if o.json {
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			if _, err := stdout.Write(append(b, '\n')); err != nil {
				return err
			}
			continue
		}
		value := "-"
		if ev.Value != "" {
			value = strconv.Quote(ev.Value)
		}
		if _, err := fmt.Fprintf(stdout, "%s  leader  %s  %s\n", ev.Time.Format("2006-01-02T15:04:05.000Z07:00"), ev.Node, value); err != nil {
			return err
		}
	}
	return nil
}
