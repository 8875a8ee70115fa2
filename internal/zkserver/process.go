package zkserver

import (
	"os"
	"os/exec"
	"runtime"
)

// process is one started server process. done is closed once the process
// has exited and been reaped (cmd.Wait returned).
type process struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{}
	err  error // valid after done is closed
}

// startProcess starts cmd from a goroutine locked to its OS thread; that
// goroutine then waits for the process and only exits (taking its thread
// with it, since it never unlocks) after the process has been reaped.
//
// Why: on Linux the child gets PR_SET_PDEATHSIG=SIGKILL (see
// process_linux.go), and the kernel delivers that signal when the *thread*
// that forked the child exits, not the whole parent process. The Go runtime
// may retire idle threads, so an unlocked goroutine could fork from a thread
// that dies later and kill a healthy server. Locking the thread for the
// child's whole lifetime makes the parent-death signal fire only when the
// child is already gone or when the test binary itself dies (killed,
// crashed, timed out) — which is exactly when the JVM must not outlive it.
func startProcess(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: when this goroutine returns, the runtime ends
		// the thread instead of reusing it.
		cmd.SysProcAttr = sysProcAttr()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

func (p *process) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal signals the process unless it has already been reaped. On Linux
// os.Process uses a pidfd, so a recycled PID is never hit.
func (p *process) signal(sig os.Signal) {
	if p.alive() {
		_ = p.cmd.Process.Signal(sig)
	}
}

func (p *process) exitErr() error {
	<-p.done
	if p.err == nil {
		return errExitedZero
	}
	return p.err
}

var errExitedZero = exitZero{}

type exitZero struct{}

func (exitZero) Error() string { return "exit status 0" }
