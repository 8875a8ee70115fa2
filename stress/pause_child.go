package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"
)

// The pause fault's holder: this binary in child mode "pause", a process of
// its own with a client of its own (one session, one Redis connection), so
// that the harness can stop all of it with SIGSTOP while it holds. It obeys
// lines on stdin:
//
//	acquire N   acquire the lock; see that the lease is not lost; create the
//	            witness file; read the account (-pg: its balance, in a
//	            transaction of its own, fenced with the token for
//	            turnstile-sqlfence); print "HELD N <token|->". The harness
//	            now stops the process, longer than the session timeout / the
//	            TTL, and continues it.
//	write N     (read right after the process continues) write to the
//	            resource with the token, at once, as a holder that checked its
//	            lease just before it stalled does (-pg: the balance it read
//	            plus 1, in a transaction that checks the token first when
//	            fenced, and none otherwise); then wait, a bounded time,
//	            for the library to say the lease is lost; remove the witness
//	            file; release; print "DONE N write=accepted|refused
//	            lost_at_write=<bool> lost_after=<ms>|never|none release=<ok|error>"
//	quit        close the client and exit 0
//
// Anything that fails is printed as "ERROR N <what>" and the child goes on.

// pauseChildOptions are the child's flags: the workload's (one worker on
// its path, and the witness file), and where the resource is: the file, or
// with pgDSN the account in that database.
type pauseChildOptions struct {
	workloadSpec
	resource, marker, pgDSN string
}

func (o pauseChildOptions) args() []string {
	return append(o.workloadSpec.args(), "-resource", o.resource, "-marker", o.marker, "-pg", o.pgDSN)
}

func pauseChildMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o pauseChildOptions
	var servers string
	fl := flag.NewFlagSet("pause", flag.ContinueOnError)
	fl.SetOutput(stderr)
	o.register(fl, &servers)
	fl.StringVar(&o.resource, "resource", "", "")
	fl.StringVar(&o.marker, "marker", "", "")
	fl.StringVar(&o.pgDSN, "pg", "", "")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	o.servers = strings.Split(servers, ",")
	named, err := implByName(o.impl)
	im, ok := named.(inProcess)
	if err != nil || !ok {
		fmt.Fprintf(stderr, "pause child: no in-process impl %q\n", o.impl)
		return exitUsage
	}
	ctx := context.Background()
	// A holder whose session expired starts again with a client of its own
	// after each stall, as an application does after losing its session
	// (go-zookeeper's connection does not always recover by itself).
	open := func() (client, locker, error) {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		c, err := im.Open(octx, openOptions{
			Servers: o.servers, SessionTimeout: o.sessionTimeout, Marker: []byte(o.marker), Workers: 1,
			RedisTTL: o.redisTTL, RedisRetry: o.redisRetry, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			return nil, nil, err
		}
		l, err := c.Mutex(o.path)
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		return c, l, nil
	}
	c, l, err := open()
	if err != nil {
		fmt.Fprintln(stderr, "pause child:", err)
		return exitFailed
	}
	defer func() { c.Close() }()
	var res holdResource = fileHold{&fencedResource{path: o.resource}}
	if o.pgDSN != "" {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		a, err := openPGAccount(octx, o.pgDSN, o.path, sqlFenced(o.impl), false)
		cancel()
		if err != nil {
			fmt.Fprintln(stderr, "pause child:", err)
			return exitFailed
		}
		defer a.close()
		res = a
	}
	who := fmt.Sprintf("%d.stalled", os.Getpid())
	lines := bufio.NewScanner(stdin)
	next := func() (cmd, n string) {
		if !lines.Scan() {
			return "quit", ""
		}
		cmd, n, _ = strings.Cut(strings.TrimSpace(lines.Text()), " ")
		return cmd, n
	}
	fmt.Fprintln(stdout, "READY")
	for {
		cmd, n := next()
		switch cmd {
		case "quit":
			return exitOK
		case "acquire":
		default:
			fmt.Fprintf(stdout, "ERROR %s unexpected %q\n", n, cmd)
			continue
		}
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		h, err := l.Acquire(actx)
		cancel()
		if err != nil {
			fmt.Fprintf(stdout, "ERROR %s acquire: %s\n", n, oneLine(err))
			continue
		}
		lost := h.Lost()
		token, hasToken := h.Token()
		if closedChan(lost) {
			fmt.Fprintf(stdout, "ERROR %s lost at once\n", n)
		}
		f, err := os.OpenFile(o.witness, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		ownWitness := err == nil
		if ownWitness {
			fmt.Fprintf(f, "%s\n", who)
			f.Close()
		} else if errors.Is(err, fs.ErrExist) {
			fmt.Fprintf(stdout, "ERROR %s witness file already there when granted\n", n)
		}
		readCtx, cancelRead := context.WithTimeout(ctx, time.Minute)
		read, rerr := res.read(readCtx, token, hasToken)
		cancelRead()
		if rerr != nil {
			fmt.Fprintf(stdout, "ERROR %s read: %s\n", n, oneLine(rerr))
		}
		fmt.Fprintf(stdout, "HELD %s %s\n", n, tokenText(token, hasToken))

		if cmd, _ := next(); cmd != "write" {
			fmt.Fprintf(stdout, "ERROR %s expected write, got %q\n", n, cmd)
		}
		resumed := time.Now()
		lostAtWrite := closedChan(lost)
		var accepted bool
		var werr error
		if rerr == nil { // nothing read, nothing to write
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			accepted, werr = res.write(wctx, token, hasToken, read, who)
			cancel()
		}
		outcome := "refused"
		switch {
		case rerr != nil:
			outcome = "error:read"
		case werr != nil:
			outcome = "error:" + oneLine(werr)
		case accepted:
			outcome = "accepted"
		}
		told := "none" // the library has no way to tell
		if lost != nil {
			t := time.NewTimer(2*o.sessionTimeout + 2*o.redisTTL)
			select {
			case <-lost:
				told = fmt.Sprint(time.Since(resumed).Milliseconds())
			case <-t.C:
				told = "never"
			}
			t.Stop()
		}
		if ownWitness {
			os.Remove(o.witness)
		}
		rctx, cancel := context.WithTimeout(ctx, 2*o.sessionTimeout+10*time.Second)
		rel := "ok"
		if err := h.Release(rctx); err != nil {
			rel = oneLine(err)
		}
		cancel()
		fmt.Fprintf(stdout, "DONE %s write=%s lost_at_write=%v lost_after=%s release=%s\n", n, outcome, lostAtWrite, told, rel)
		c.Close()
		if c, l, err = open(); err != nil {
			fmt.Fprintln(stderr, "pause child: reconnect:", err)
			return exitFailed
		}
	}
}

// oneLine is err's text without spaces or newlines, for a field of a line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), "_")
}
