package main

import (
	"context"
	"fmt"
	"os"

	"github.com/turnstile-go/turnstile/internal/interop"
)

// childEnv selects a child mode of this very binary: the harness re-executes
// itself (os.Executable, so `go run`'s build and the test binary both work)
// with this variable set, to run a program in a process of its own:
//
//	plain   a plain program of one library (plain.go), measured like a peer
//	pause   the holder the pause fault stalls (pause_child.go)
//	nemesis-client  a client of the nemesis run (nemesis_client.go)
//	nemesis-fence   the nemesis run's fenced register (nemesis_fence.go)
//	nemesis-cli     the nemesis run's participant that holds through turnstile lock (nemesis_cli.go)
//	nemesis-cmd     that participant's CMD, the writer under turnstile lock (nemesis_cli.go)
//
// An environment variable rather than an argument, so that the test binary,
// whose arguments belong to the testing package, can be re-executed too.
const childEnv = "TURNSTILE_STRESS_CHILD"

// childMode runs the child mode the environment asks for, if any, and
// reports whether it did and its exit code.
func childMode() (code int, ok bool) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		return 0, false
	}
	args := os.Args[1:]
	switch mode {
	case "plain":
		return plainMain(args, os.Stdout, os.Stderr), true
	case "pause":
		return pauseChildMain(args, os.Stdin, os.Stdout, os.Stderr), true
	case nemesisClientMode:
		return nemesisClientMain(args, os.Stdin, os.Stdout, os.Stderr), true
	case nemesisFenceMode:
		return nemesisFenceMain(args, os.Stdin, os.Stdout, os.Stderr), true
	case nemesisCLIMode:
		return nemesisCLIMain(args, os.Stdin, os.Stdout, os.Stderr), true
	case nemesisCmdMode:
		return nemesisCmdMain(args, os.Stdout, os.Stderr), true
	}
	fmt.Fprintf(os.Stderr, "stress: unknown %s=%q\n", childEnv, mode)
	return exitUsage, true
}

// startChild starts this binary in child mode with args, as an interop peer
// (killed with ctx or with this process, output captured, stdin a pipe).
func startChild(ctx context.Context, mode string, args []string) (*interop.Peer, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("re-execute the harness: %w", err)
	}
	return interop.StartProgram(ctx, mode, self, args, []string{childEnv + "=" + mode})
}
