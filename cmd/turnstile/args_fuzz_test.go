package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// FuzzArgs runs the whole command with the input's arguments (NUL between
// them) against the shared ZooKeeper, under a root of its own: whatever
// the arguments, it returns within its context's bound with one of the
// documented exit statuses, and a failure says why on stderr; it never
// panics.
//
// An input is skipped when an argument names a program that exists (so
// that lock and elect never run one: the fuzzer must not run rm) or
// mentions -servers (so that nothing dials beyond the test's server).
func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		"", "help", "help\x00lock", "help\x00nosuch", "version", "-h", "lock\x00-h", "nosuch",
		"locks", "locks\x00/", "locks\x00relative", "locks\x00-json\x00/", "-json\x00holders\x00/a",
		"holders", "holders\x00/a/", "holders\x00/zookeeper", "revoke\x00/a", "revoke\x00-force\x00/a\x00node",
		"watch\x00/w", "elect\x00-observe\x00/e", "lock\x00/l", "lock\x00-try\x00/l\x00--", "lock\x00/l\x00--\x00turnstile-no-such-program",
		"elect\x00/e\x00--", "-timeout\x00xyz\x00locks", "-timeout\x00-1s\x00locks", "-timeout\x000\x00holders\x00/a",
		"-auth\x00nocolon\x00locks", "-auth\x00digest:u:p\x00locks", "-tls-ca\x00/nonexistent\x00locks",
		"-tls-cert\x00/nonexistent\x00locks", "-root\x00rel\x00locks", "-root\x00/\x00locks", "-root\x00/r/\x00locks",
		"locks\x00/\x00extra", "lock\x00-grace\x00-5s\x00/l\x00--\x00x", "\x00\x00", "-\x00--\x00---",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		var args []string
		if input != "" {
			args = strings.Split(input, "\x00")
		}
		for _, a := range args {
			if strings.Contains(a, "servers") {
				t.Skip("dials elsewhere")
			}
			if a != "" && a != "." && a != ".." {
				if _, err := exec.LookPath(a); err == nil {
					t.Skip("names a program that exists")
				}
			}
		}
		if len(args) > 16 {
			args = args[:16]
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var stdout, stderr bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, append([]string{"-servers", shared.Addr(), "-root", "/fuzzargs"}, args...), &stdout, &stderr)
		}()
		var code int
		select {
		case code = <-done:
		case <-time.After(8 * time.Second):
			t.Fatalf("%q: no exit 6s after its context's end", args)
		}
		switch code {
		case exitOK, exitError, exitUsage, exitNone:
		default:
			t.Fatalf("%q: exit %d\n%s", args, code, stderr.String())
		}
		if code != exitOK && stderr.Len() == 0 {
			t.Fatalf("%q: exit %d and nothing on stderr", args, code)
		}
	})
}
