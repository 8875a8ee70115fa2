//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A supervisor stands between the tool and CMD, so that CMD cannot
// outlive the lease it runs under, not even when the tool itself dies.
// The tool starts it (its own executable again, marked by supervisorEnv)
// with the read end of a pipe whose write end only the tool holds. The
// supervisor starts CMD in a process group of its own and, on Linux,
// becomes the reaper of CMD's orphans, so that what CMD starts stays in
// its tree even when it leaves the group or its parent exits. It then
// obeys the pipe:
//
//   - "stop MS": TERM to CMD's tree (once), KILL MS milliseconds later
//     unless CMD is gone by then; a later order can only bring the KILL
//     closer. The tool sends it when the lease is lost, or it is
//     interrupted.
//   - end of file: the tool is gone (exited, killed, out of memory) and
//     nothing holds the lock for CMD any more: KILL at once.
//
// When CMD exits, whatever it left running is killed too, before the tool
// releases the lock, since it would run on without it. The supervisor
// exits with CMD's status (128+N when signal N ended it).
//
// Why a process and not a parent-death signal: a parent-death signal
// reaches CMD alone, not the processes CMD started, and Linux sends it
// when the thread that started CMD exits, which in a Go program is not
// the tool's death. A cgroup would hold the whole tree, but only where
// the system delegates one to the user.
const supervisorEnv = "TURNSTILE_SUPERVISOR"

// superviseIfAsked runs the supervisor, and exits with CMD's status, when
// this process was started as one; it returns at once otherwise.
func superviseIfAsked() {
	if os.Getenv(supervisorEnv) == "" {
		return
	}
	os.Exit(supervise(os.Args[1:], os.NewFile(3, "turnstile control")))
}

// supervisedChild is CMD, as the tool sees it through its supervisor.
type supervisedChild struct {
	proc    *exec.Cmd
	control *os.File // the write end of the supervisor's pipe
	done    chan error
}

// startChild starts argv under a supervisor, with env added to the tool's
// environment.
func startChild(argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (*supervisedChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("run %s: find this executable for its supervisor: %w", argv[0], err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	defer r.Close() // the supervisor has its own copy once started
	cmd := exec.Command(self, argv...)
	cmd.Env = append(append(os.Environ(), env...), supervisorEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = []*os.File{r} // fd 3
	// Output copied through pipes (stdout not a file) is complete once the
	// supervisor has exited, as it kills CMD's whole tree first; a process
	// it could not kill (in uninterruptible sleep) holds Wait no longer
	// than this.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("run %s: start its supervisor: %w", argv[0], err)
	}
	c := &supervisedChild{proc: cmd, control: w, done: make(chan error, 1)}
	go func() {
		err := cmd.Wait()
		w.Close()
		c.done <- err
	}()
	return c, nil
}

// stop has CMD's tree sent TERM, and KILL within d.
func (c *supervisedChild) stop(d time.Duration) {
	// An error means the supervisor is gone, and CMD's tree with it.
	_, _ = fmt.Fprintf(c.control, "stop %d\n", d.Milliseconds())
}

// supervise runs argv as CMD and obeys control; see supervisorEnv.
func supervise(argv []string, control *os.File) int {
	if len(argv) == 0 || control == nil {
		fmt.Fprintln(os.Stderr, "turnstile: the supervisor was started without a command or its pipe")
		return exitUsage
	}
	// The signals a terminal or a service manager sends to the tool's
	// group are the tool's to act on: it orders the stop. Notify, not
	// Ignore: an ignored signal would stay ignored in CMD.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	syscall.CloseOnExec(int(control.Fd()))
	os.Unsetenv(supervisorEnv)
	becomeSubreaper()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "turnstile: run %s: %v\n", argv[0], err)
		return exitError
	}
	tree := processTree{group: cmd.Process.Pid}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	orders := make(chan time.Duration)
	go readOrders(control, orders)

	var killAt <-chan time.Time
	var killBy time.Time
	termed := false
	for {
		select {
		case err := <-exited:
			tree.kill() // what CMD left running, which no lock would cover
			tree.reap()
			return exitCode(err)
		case d, ok := <-orders:
			if !ok {
				orders = nil
				tree.kill()
				continue
			}
			if !termed {
				termed = true
				tree.signal(syscall.SIGTERM)
			}
			if by := time.Now().Add(d); killAt == nil || by.Before(killBy) {
				killBy = by
				killAt = time.After(time.Until(by))
			}
		case <-killAt:
			fmt.Fprintf(os.Stderr, "turnstile: %s still running after SIGTERM: killing it\n", argv[0])
			killAt = nil
			tree.kill()
		}
	}
}

// readOrders sends each stop order's delay on orders, and closes it at
// the end of the pipe, or at anything the tool would not write.
func readOrders(control io.Reader, orders chan<- time.Duration) {
	defer close(orders)
	lines := bufio.NewScanner(control)
	for lines.Scan() {
		ms, ok := strings.CutPrefix(lines.Text(), "stop ")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil || n < 0 {
			return
		}
		orders <- time.Duration(n) * time.Millisecond
	}
}

// exitCode is the status a shell would give for CMD's end.
func exitCode(err error) int {
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exitErr):
		if code := exitErr.ExitCode(); code >= 0 {
			return code
		}
		return 128 + signalNumber(exitErr)
	}
	fmt.Fprintf(os.Stderr, "turnstile: wait for the command: %v\n", err)
	return exitError
}

// processTree is CMD and every process it started, as far as the system
// lets the supervisor find them: CMD's process group, and on Linux every
// descendant of the supervisor (orphans included, as it is their reaper).
type processTree struct {
	group int // CMD's pid, which names its process group
}

// signal sends sig to every process of the tree found now.
func (t processTree) signal(sig syscall.Signal) {
	_ = syscall.Kill(-t.group, sig)
	for _, pid := range descendants() {
		_ = syscall.Kill(pid, sig)
	}
}

// killTries bounds kill's rounds: a process that forks between the
// supervisor's reading of the tree and its KILL leaves a child that the
// next round finds (reparented to the supervisor once its parent died).
// A tree still alive after this many rounds has processes the kernel will
// not kill (uninterruptible sleep); they die when their I/O ends.
const killTries = 50

// kill sends KILL to the tree until nothing of it is left running.
func (t processTree) kill() {
	for range killTries {
		t.signal(syscall.SIGKILL)
		if !t.running() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// reap waits for the tree's orphans that died, whose parent the
// supervisor became.
func (t processTree) reap() {
	for {
		var ws syscall.WaitStatus
		if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
			return
		}
	}
}

// running reports whether a process of the tree may still run: one of
// its group, or a descendant that is not a zombie.
func (t processTree) running() bool {
	if syscall.Kill(-t.group, 0) == nil && groupRunning(t.group) {
		return true
	}
	return len(descendants()) > 0
}
