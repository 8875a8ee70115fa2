//go:build !unix

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// superviseIfAsked does nothing where CMD runs without a supervisor.
func superviseIfAsked() {}

// supervisedChild is CMD, started directly: without Unix's pipes passed
// to a child and process groups there is no supervisor, and CMD is not
// stopped if the tool dies.
type supervisedChild struct {
	proc *exec.Cmd
	done chan error
}

func startChild(argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (*supervisedChild, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	c := &supervisedChild{proc: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	return c, nil
}

// stop interrupts CMD, and kills it within d.
func (c *supervisedChild) stop(d time.Duration) {
	_ = c.proc.Process.Signal(os.Interrupt)
	time.AfterFunc(d, func() { _ = c.proc.Process.Kill() })
}

func signalNumber(*exec.ExitError) int { return 0 }
