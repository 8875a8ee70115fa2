package main

import (
	"context"
	"encoding/json"
	"testing"
)

// watchRun is a watch command running in the background of a test.
type watchRun struct {
	out, errOut *syncBuffer
	stop        context.CancelFunc
	done        chan int // its exit code
}

// startWatch runs the command with args (servers included) until end.
func startWatch(ctx context.Context, args ...string) *watchRun {
	wctx, stop := context.WithCancel(ctx)
	w := &watchRun{out: newSyncBuffer(), errOut: newSyncBuffer(), stop: stop, done: make(chan int, 1)}
	go func() { w.done <- run(wctx, args, w.out, w.errOut) }()
	return w
}

// await waits until the lines printed so far are enough, and returns them.
// It fails the test when the watch ends first, or ctx does.
func (w *watchRun) await(t *testing.T, ctx context.Context, what string, enough func(lines []string) bool) []string {
	t.Helper()
	for {
		lines, changed := w.out.lines()
		if enough(lines) {
			return lines
		}
		select {
		case <-changed:
		case code := <-w.done:
			t.Fatalf("the watch ended (exit %d) before %s:\n%s%s", code, what, w.out, w.errOut)
		case <-ctx.Done():
			t.Fatalf("the watch never printed %s:\n%s%s", what, w.out, w.errOut)
		}
	}
}

// events decodes the JSON lines of a watch run with -json.
func (w *watchRun) events(t *testing.T, lines []string) []watchEvent {
	t.Helper()
	var evs []watchEvent
	for _, line := range lines {
		var ev watchEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("the watch printed %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// end stops the watch and demands that it exits 0.
func (w *watchRun) end(t *testing.T) {
	t.Helper()
	w.stop()
	if code := <-w.done; code != exitOK {
		t.Errorf("the watch exited %d: %s", code, w.errOut)
	}
}
