package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/internal/wait"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
)

// holdScript is the command the lock tests run: it writes what it finds in
// its environment to $1, then runs until $2 exists. On SIGTERM it writes
// $1.term and exits 0 (unless $3 is "ignore": then it ignores SIGTERM).
const holdScript = `
if [ "$3" = ignore ]; then trap '' TERM; else trap 'echo term > "$1.term"; exit 0' TERM; fi
echo "$TURNSTILE_PATH $TURNSTILE_NODE $TURNSTILE_TOKEN" > "$1.tmp" && mv "$1.tmp" "$1"
while [ ! -e "$2" ]; do sleep 0.02; done
`

// holdCmd is the command line of one run of holdScript, and its files.
type holdCmd struct {
	out, goFile string
}

func newHoldCmd(t *testing.T, name string) holdCmd {
	dir := t.TempDir()
	return holdCmd{out: filepath.Join(dir, name+".env"), goFile: filepath.Join(dir, name+".go")}
}

func (h holdCmd) argv(extra ...string) []string {
	return append([]string{"--", "sh", "-c", holdScript, "sh", h.out, h.goFile}, extra...)
}

// env waits until the command has written its environment: path, node,
// token.
func (h holdCmd) env(t *testing.T) (string, string, int64) {
	t.Helper()
	var b []byte
	wait.Until(t, "the command wrote "+h.out, func() bool {
		var err error
		b, err = os.ReadFile(h.out)
		return err == nil
	})
	f := strings.Fields(string(b))
	if len(f) != 3 {
		t.Fatalf("the command's environment: %q", b)
	}
	token, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		t.Fatalf("TURNSTILE_TOKEN %q: %v", f[2], err)
	}
	return f[0], f[1], token
}

func (h holdCmd) finish(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(h.goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (h holdCmd) started() bool {
	_, err := os.Stat(h.out)
	return err == nil
}

// Two lock commands on one path run their commands one after the other,
// each seeing its own node and token, the second's token the greater.
func TestLockRunsCommandsOneAfterTheOther(t *testing.T) {
	ctx := testCtx(t)
	path := lockPath(t)
	first, second := newHoldCmd(t, "first"), newHoldCmd(t, "second")

	a := startWatch(ctx, append([]string{"-servers", shared.Addr(), "lock", "-owner", "first", path}, first.argv()...)...)
	p1, node1, token1 := first.env(t)
	b := startWatch(ctx, append([]string{"-servers", shared.Addr(), "lock", "-owner", "second", path}, second.argv()...)...)

	// The second waits, queued behind the first, and its command has not
	// started.
	var l lockView
	wait.Until(t, "the second lock command queued", func() bool {
		l, _ = lockAt(t, path)
		return len(l.Waiters) == 1
	})
	if len(l.Holders) != 1 || l.Holders[0].Node != node1 || l.Holders[0].Owner.Owner != "first" || l.Waiters[0].Owner.Owner != "second" {
		t.Fatalf("while the first runs: %+v", l)
	}
	if second.started() {
		t.Fatal("the second command started while the first held the lock")
	}
	if p1 != path {
		t.Errorf("TURNSTILE_PATH %q, want %q", p1, path)
	}

	first.finish(t)
	if code := <-a.done; code != exitOK {
		t.Fatalf("the first lock command exited %d: %s", code, a.errOut)
	}
	p2, node2, token2 := second.env(t)
	if p2 != path || node2 == node1 || !strings.HasPrefix(node2, path+"/") {
		t.Errorf("second command's path %q and node %q (the first's node %q)", p2, node2, node1)
	}
	if token2 <= token1 {
		t.Errorf("tokens %d then %d: want them growing", token1, token2)
	}
	if l, _ := lockAt(t, path); len(l.Holders) != 1 || l.Holders[0].Node != node2 {
		t.Errorf("while the second runs: %+v", l)
	}
	second.finish(t)
	if code := <-b.done; code != exitOK {
		t.Fatalf("the second lock command exited %d: %s", code, b.errOut)
	}
	if _, held := lockAt(t, path); held {
		t.Error("the lock is still there after both commands ended")
	}
}

// The tool exits with its command's status.
func TestLockExitStatus(t *testing.T) {
	r := cli(t, "lock", lockPath(t), "--", "sh", "-c", "exit 7")
	if r.code != 7 {
		t.Fatalf("lock -- sh -c 'exit 7': %v", r)
	}
	r = cli(t, "lock", lockPath(t), "--", "/nonexistent/command")
	if r.code != exitError || !strings.Contains(r.stderr, "/nonexistent/command") {
		t.Fatalf("lock of a command that cannot start: %v", r)
	}
}

// A lost lease stops the command: its session expired, it gets SIGTERM,
// and the tool says why and exits 1 though the command exited 0.
func TestLockLostStopsCommand(t *testing.T) {
	ctx := testCtx(t)
	var sessions zkserver.Sessions
	engineDialer = sessions.Dial
	t.Cleanup(func() { engineDialer = nil })
	path := lockPath(t)
	h := newHoldCmd(t, "lost")

	run := startWatch(ctx, append([]string{"-servers", shared.Addr(), "lock", path}, h.argv()...)...)
	_, node, _ := h.env(t)
	var holders []nodeView
	cliJSON(t, &holders, exitOK, "holders", path)
	if len(holders) != 1 || holders[0].Node != node {
		t.Fatalf("holders: %+v, want the command's node %s", holders, node)
	}
	id, err := strconv.ParseUint(strings.TrimPrefix(holders[0].Session, "0x"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := sessions.Expire(ctx, []string{shared.Addr()}, int64(id)); err != nil {
		t.Fatalf("expire the lock command's session: %v", err)
	}
	select {
	case code := <-run.done:
		if code != exitError || !strings.Contains(run.errOut.String(), "lock on "+path+" lost") {
			t.Fatalf("after its session expired: exit %d, stderr %s", code, run.errOut)
		}
	case <-ctx.Done():
		t.Fatal("the lock command did not end when its lease was lost")
	}
	if _, err := os.Stat(h.out + ".term"); err != nil {
		t.Errorf("the command was not sent SIGTERM: %v", err)
	}
}

// A command that ignores SIGTERM is killed after -grace; an interrupt of
// the tool stops its command as a lost lease does.
func TestLockGraceThenKill(t *testing.T) {
	ctx := testCtx(t)
	h := newHoldCmd(t, "stubborn")
	rctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	run := startWatch(rctx, append([]string{"-servers", shared.Addr(), "lock", "-grace", "100ms", lockPath(t)}, h.argv("ignore")...)...)
	h.env(t)
	interrupt()
	code := <-run.done
	if code != 128+9 || !strings.Contains(run.errOut.String(), "interrupted") || !strings.Contains(run.errOut.String(), "killing it") {
		t.Fatalf("exit %d (want %d, SIGKILL), stderr %s", code, 128+9, run.errOut)
	}
}

// -try fails at once, and -timeout once it passes, with exit status 3,
// while another client holds the lock; the command never runs.
func TestLockTryAndTimeout(t *testing.T) {
	ctx := testCtx(t)
	path := lockPath(t)
	held, err := lock.NewMutex(startEngine(t), path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	marker := filepath.Join(t.TempDir(), "ran")
	for _, args := range [][]string{
		{"lock", "-try", path, "--", "touch", marker},
		{"lock", "-timeout", "300ms", path, "--", "touch", marker},
	} {
		r := cli(t, args...)
		if r.code != exitNone || !strings.Contains(r.stderr, path) {
			t.Errorf("turnstile %q: %v", args, r)
		}
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran without the lock: %v", err)
	}
	if l, _ := lockAt(t, path); len(l.Holders) != 1 || len(l.Waiters) != 0 {
		t.Errorf("the failed lock commands left nodes: %+v", l)
	}
}
