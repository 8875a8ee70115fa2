package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/internal/wait"
	"github.com/turnstile-go/turnstile/lock"
)

// treeScript is a CMD that will not stop when asked: it ignores SIGTERM,
// as do the two processes it starts (an ignored signal stays ignored
// across exec), one of them in a session of its own, out of CMD's process
// group. It writes the three pids to $1 and waits.
const treeScript = `trap '' TERM
sleep 600 & a=$!
setsid sleep 600 & b=$!
echo $$ $a $b > "$1.tmp" && mv "$1.tmp" "$1"
wait`

// stubbornTree is one run of treeScript: the file its pids go to.
type stubbornTree struct{ pidFile string }

func newStubbornTree(t *testing.T) stubbornTree {
	return stubbornTree{pidFile: filepath.Join(t.TempDir(), "pids")}
}

func (s stubbornTree) argv() []string {
	return []string{"--", "sh", "-c", treeScript, "sh", s.pidFile}
}

// pids waits for the tree's pids, and kills what is left of it when the
// test ends (processes this test started, by pid).
func (s stubbornTree) pids(t *testing.T) []int {
	t.Helper()
	var b []byte
	wait.Until(t, "the command wrote its pids", func() bool {
		var err error
		b, err = os.ReadFile(s.pidFile)
		return err == nil
	})
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pids %q: %v", b, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 3 {
		t.Fatalf("pids %q: want three", b)
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			if running(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return pids
}

// running reports whether pid is a process that can still run: it exists
// and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state != 'Z' && state != 'X'
}

// grantWhileWatching takes the lock at path on an engine of its own, and
// says which of pids were still running the moment the lock was granted.
func grantWhileWatching(t *testing.T, ctx context.Context, path string, pids []int) <-chan []int {
	eng := startEngine(t)
	alive := make(chan []int, 1)
	go func() {
		l, err := lock.NewMutex(eng, path).Lock(ctx)
		var still []int
		for _, pid := range pids {
			if running(pid) {
				still = append(still, pid)
			}
		}
		if err != nil {
			t.Errorf("the second client's lock: %v", err)
		} else {
			defer l.Release(context.Background())
		}
		alive <- still
	}()
	return alive
}

// With the tool's defaults (a 10s session, its 2s margin, -grace 10s), a
// lock command whose connection falls silent has its CMD's whole tree,
// TERM ignored and a process out of its group included, killed before
// the server lets another client take the lock.
func TestLockCommandGoneBeforeNextGrantWhenSilenced(t *testing.T) {
	ctx := testCtx(t)
	var gate netfault.Gate
	engineDialer = gate.Dial
	t.Cleanup(func() { engineDialer = nil })
	defer gate.Release()
	path := lockPath(t)
	tree := newStubbornTree(t)

	run := startWatch(ctx, append([]string{"-servers", shared.Addr(), "lock", path}, tree.argv()...)...)
	pids := tree.pids(t)
	alive := grantWhileWatching(t, ctx, path, pids)
	wait.Until(t, "the second client queued", func() bool {
		l, _ := lockAt(t, path)
		return len(l.Waiters) == 1
	})
	gate.Hold()

	select {
	case still := <-alive:
		if len(still) > 0 {
			t.Fatalf("the other client was granted the lock while the first command's processes %v of %v ran\nstderr: %s",
				still, pids, run.errOut)
		}
	case <-ctx.Done():
		t.Fatal("the other client was never granted the lock")
	}
	gate.Release()
	select {
	case code := <-run.done:
		if code == exitOK {
			t.Errorf("the lock command exited 0 after its lease was lost")
		}
	case <-ctx.Done():
		t.Fatal("the lock command did not end")
	}
	if !strings.Contains(run.errOut.String(), "-grace 10s cut to 1.5s") {
		t.Errorf("stderr does not say that -grace was cut to the margin: %s", run.errOut)
	}
}

// cliEnv marks the test binary started as the tool itself: TestMain then
// runs the command line and exits.
const cliEnv = "TURNSTILE_TEST_AS_CLI"

// If the tool is killed while CMD runs, CMD's whole tree is killed with
// it, before its session can expire and another client take the lock.
func TestLockCommandGoneWhenToolKilled(t *testing.T) {
	ctx := testCtx(t)
	path := lockPath(t)
	tree := newStubbornTree(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tool := exec.Command(self, append([]string{"-servers", shared.Addr(), "lock", path}, tree.argv()...)...)
	tool.Env = append(os.Environ(), cliEnv+"=1")
	var stderr bytes.Buffer
	tool.Stderr = &stderr
	// A command that outlives the tool holds the stderr pipe open: Wait
	// returns without the rest of its output.
	tool.WaitDelay = time.Second
	if err := tool.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- tool.Wait() }()
	pids := tree.pids(t)
	alive := grantWhileWatching(t, ctx, path, pids)
	wait.Until(t, "the second client queued", func() bool {
		l, _ := lockAt(t, path)
		return len(l.Waiters) == 1
	})

	if err := tool.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	select {
	case still := <-alive:
		if len(still) > 0 {
			t.Fatalf("the other client was granted the lock while the killed tool's command's processes %v of %v ran\nstderr: %s",
				still, pids, &stderr)
		}
	case <-ctx.Done():
		t.Fatal("the other client was never granted the lock")
	}
}

// A session whose margin leaves CMD no time between SIGTERM and SIGKILL
// is refused before any connection; a margin of its own is taken.
func TestLockRefusesMarginWithoutTerm(t *testing.T) {
	for _, args := range [][]string{
		{"lock", "-session-timeout", "1s", "/l", "--", "true"},
		{"lock", "-lost-margin", "300ms", "/l", "--", "true"},
		{"elect", "-session-timeout", "1s", "/l", "--", "true"},
		{"lock", "-session-timeout", "4s", "-lost-margin", "4s", "/l", "--", "true"},
	} {
		if r := cli(t, args...); r.code != exitUsage {
			t.Errorf("turnstile %q: %v, want a usage error", args, r)
		}
	}
	if r := cli(t, "lock", "-session-timeout", "4s", "-lost-margin", "1s", lockPath(t), "--", "true"); r.code != exitOK {
		t.Errorf("a 4s session with a 1s margin: %v", r)
	}
}
