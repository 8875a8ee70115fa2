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
	return runWhile(ctx, o, held{path: path, node: l.Node(), token: l.Token(), lost: l.Lost, err: l.Err, what: what},
		argv, stdout, stderr)
}

// held is a lease CMD runs under: a lock's or a leadership's.
type held struct {
	path, node string
	token      int64
	lost       func() <-chan struct{}
	err        func() error
	what       string // "lock", "leadership"
}

// runWhile runs argv while h holds, and stops it, SIGTERM then SIGKILL
// after o.grace, the moment h is lost or ctx ends (turnstile was
// interrupted). It returns CMD's exit status.
func runWhile(ctx context.Context, o options, h held, argv []string, stdout, stderr io.Writer) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = os.Stdin
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append(os.Environ(),
		"TURNSTILE_PATH="+h.path,
		"TURNSTILE_NODE="+h.node,
		"TURNSTILE_TOKEN="+strconv.FormatInt(h.token, 10),
	)
	ownGroup(cmd)
	// Output copied through pipes (stdout not a file) could keep Wait
	// waiting on a grandchild that outlives CMD: it waits no longer than
	// the grace period for it.
	cmd.WaitDelay = max(o.grace, time.Second)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", argv[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var why string
	select {
	case err := <-done:
		return childStatus(err, "")
	case <-h.lost():
		why = fmt.Sprintf("%s on %s lost (%v): stopping %s", h.what, h.path, h.err(), argv[0])
	case <-ctx.Done():
		why = fmt.Sprintf("interrupted: stopping %s", argv[0])
	}
	fmt.Fprintf(stderr, "turnstile: %s\n", why)
	signalGroup(cmd, sigTerm)
	timer := time.NewTimer(o.grace)
	defer timer.Stop()
	select {
	case err := <-done:
		return childStatus(err, "stopped")
	case <-timer.C:
		fmt.Fprintf(stderr, "turnstile: %s still running after -grace %v: killing it\n", argv[0], o.grace)
		signalGroup(cmd, sigKill)
		return childStatus(<-done, "stopped")
	}
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
