package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// engineDialer, when set, makes the connections of the engine that lock
// and elect run: a test sets it to a dialer that can expire the session.
var engineDialer func(network, address string, timeout time.Duration) (net.Conn, error)

// openEngine starts the engine of lock and elect with the flags every
// command takes.
func openEngine(ctx context.Context, o options) (*engine.Engine, error) {
	cfg := engine.Config{
		Servers: strings.Split(o.servers, ","),
		Root:    o.root,
		TLS:     o.tls,
		Dialer:  engineDialer,

		SessionTimeout: o.session,
		LostMargin:     o.lostMargin,
	}
	if o.auth != "" {
		scheme, cred, _ := strings.Cut(o.auth, ":")
		cfg.Auth = []engine.Credential{{Scheme: scheme, Secret: []byte(cred)}}
	}
	if o.timeoutSet {
		cfg.ConnectTimeout = o.timeout
	}
	eng, err := engine.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start a session with %s: %w", o.servers, err)
	}
	// The server may grant another timeout than asked, and the margin
	// scales with it.
	if err := checkMargin(eng.LostMargin()); err != nil {
		eng.Close()
		return nil, err
	}
	return eng, nil
}

// waitContext bounds the wait for a lock or a lead by -timeout, when given.
func waitContext(ctx context.Context, o options) (context.Context, context.CancelFunc) {
	if o.timeoutSet {
		return context.WithTimeout(ctx, o.timeout)
	}
	return context.WithCancel(ctx)
}

// notTaken turns the end of a wait into the tool's answer: exit status 3
// when -timeout passed, the error itself otherwise.
func notTaken(ctx, waitCtx context.Context, what string, o options, err error) error {
	if ctx.Err() == nil && errors.Is(waitCtx.Err(), context.DeadlineExceeded) {
		return exitStatus{code: exitNone, msg: fmt.Sprintf("%s not taken within -timeout %v", what, o.timeout)}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: interrupted while waiting", what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// runLock holds the mutex at PATH while CMD runs.
func runLock(ctx context.Context, o options, args []string, stdout, stderr io.Writer) error {
	path, argv := args[0], args[1:]
	waitCtx, cancel := waitContext(ctx, o)
	defer cancel()
	eng, err := openEngine(waitCtx, o)
	if err != nil {
		return notTaken(ctx, waitCtx, "lock "+path, o, err)
	}
	defer eng.Close()
	m := lock.NewMutex(eng, path, lock.WithOwner(o.owner))
	var l *lock.Lease
	if o.try {
		l, err = m.TryAcquire(waitCtx)
		if errors.Is(err, engine.ErrWouldBlock) {
			return exitStatus{code: exitNone, msg: fmt.Sprintf("lock %s is held or waited for (-try)", path)}
		}
	} else {
		l, err = m.Lock(waitCtx)
	}
	if err != nil {
		return notTaken(ctx, waitCtx, "lock "+path, o, err)
	}
	return runUnder(ctx, o, path, "lock", l, argv, stdout, stderr)
}

// runUnder runs argv while lease l (a lock's, or a leadership's) is held,
// then releases it; a lost lease's release reports the loss, which runWhile
// has said already.
func runUnder(ctx context.Context, o options, path, what string, l *engine.Lease, argv []string, stdout, stderr io.Writer) error {
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l.Release(rctx)
	}()
	h := held{path: path, node: l.Node(), token: l.Token(), lost: l.Lost, err: l.Err, what: what, margin: l.Engine().LostMargin()}
	return runWhile(ctx, o, h, argv, stdout, stderr)
}

// held is a lease CMD runs under: a lock's or a leadership's.
type held struct {
	path, node string
	token      int64
	lost       func() <-chan struct{}
	err        func() error
	what       string        // "lock", "leadership"
	margin     time.Duration // the engine's LostMargin
}

// killSlack is the part of the lost margin (Engine.LostMargin: the time
// after Lost() before the server can expire the session and grant the lock
// to another client) kept back from CMD's TERM, for the KILL to land in
// time: the tool's wake when Lost() closes, the order's way through the
// supervisor's pipe, its walk of CMD's tree and the kernel's delivery. A
// quarter of the margin, and never less than minKillSlack: the margin
// covers the engine's own timer lateness and clock drift already, so this
// is the tool's share only.
func killSlack(margin time.Duration) time.Duration { return max(margin/4, minKillSlack) }

const minKillSlack = 250 * time.Millisecond

// minTermWindow is the least time between TERM and KILL worth calling a
// graceful stop: a session whose margin leaves less is refused, since CMD
// could never be asked to stop, only killed.
const minTermWindow = 100 * time.Millisecond

// termWindow is how long CMD may take to exit after TERM once its lease is
// lost: -grace, but never past the margin less the slack.
func termWindow(grace, margin time.Duration) time.Duration {
	return min(grace, margin-killSlack(margin))
}

// checkMargin refuses a session whose lost margin leaves CMD no useful
// TERM before its KILL.
func checkMargin(margin time.Duration) error {
	if w := margin - killSlack(margin); w < minTermWindow {
		return fmt.Errorf("the session's lost margin %v leaves CMD %v between SIGTERM and SIGKILL, below %v: "+
			"give a longer -session-timeout or -lost-margin", margin, max(w, 0), minTermWindow)
	}
	return nil
}

// runWhile runs argv while h holds, and stops it the moment h is lost or
// ctx ends (turnstile was interrupted): SIGTERM to its whole tree, SIGKILL
// after -grace, and after a loss within termWindow whatever -grace says,
// so that CMD's tree is gone before the server can grant the lock to
// another client. CMD runs under a supervisor that kills its tree at once
// if this process dies. It returns CMD's exit status.
func runWhile(ctx context.Context, o options, h held, argv []string, stdout, stderr io.Writer) error {
	child, err := startChild(argv, []string{
		"TURNSTILE_PATH=" + h.path,
		"TURNSTILE_NODE=" + h.node,
		"TURNSTILE_TOKEN=" + strconv.FormatInt(h.token, 10),
	}, os.Stdin, stdout, stderr)
	if err != nil {
		return err
	}
	lostWindow := termWindow(o.grace, h.margin)
	stopAfterLoss := func() {
		fmt.Fprintf(stderr, "turnstile: %s on %s lost (%v): stopping %s\n", h.what, h.path, h.err(), argv[0])
		if lostWindow < o.grace {
			fmt.Fprintf(stderr, "turnstile: -grace %v cut to %v: another client may be granted the lock %v after the loss\n",
				o.grace, lostWindow, h.margin)
		}
		child.stop(lostWindow)
	}
	select {
	case err := <-child.done:
		return childStatus(err, "")
	case <-h.lost():
		stopAfterLoss()
	case <-ctx.Done():
		fmt.Fprintf(stderr, "turnstile: interrupted: stopping %s\n", argv[0])
		child.stop(o.grace)
		select {
		case err := <-child.done:
			return childStatus(err, "stopped")
		case <-h.lost():
			stopAfterLoss()
		}
	}
	return childStatus(<-child.done, "stopped")
}

// childStatus is the tool's exit for CMD's end: CMD's own status (128+N
// when signal N ended it, as a shell says); when CMD was stopped, 1 in
// place of 0, since it did not finish under the lease.
func childStatus(err error, stopped string) error {
	code := 0
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
		if code < 0 {
			code = 128 + signalNumber(exitErr)
		}
	default:
		return fmt.Errorf("wait for the command: %w", err)
	}
	if stopped != "" && code == 0 {
		code = exitError
	}
	if code == 0 {
		return nil
	}
	return exitStatus{code: code}
}
