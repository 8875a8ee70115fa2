package main

import (
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"
)

// The nemesis run's history (see nemesis.go): every client process prints
// one JSON line per event of its own, the parent tags it with the client
// and its incarnation and keeps it. Times are wall-clock nanoseconds: all
// processes run on one machine, so they share one clock.

// nemesisClientMode is the child mode of the nemesis's clients.
const nemesisClientMode = "nemesis-client"

// Kinds of history events. An operation is an invoke event followed by its
// outcome event; an invoke with no outcome (the process was killed) has an
// unknown outcome.
const (
	evAcquire    = "acquire"     // invoke: Lock on the path
	evGrant      = "grant"       // outcome ok: Lease, Token
	evAcqFail    = "acquire-err" // outcome fail
	evLost       = "lost"        // the lease's Lost() was seen closed
	evReadInv    = "read"        // invoke: read of the register
	evReadDone   = "read-done"   // outcome, V the value read
	evWriteInv   = "write"       // invoke: write V to the register
	evWriteDone  = "write-done"  // outcome ok, fail or unknown
	evFenceInv   = "fence"       // invoke: write to the fenced register
	evFenceDone  = "fence-done"  // outcome ok (accepted, Seq) or fail (refused)
	evReleaseInv = "release"     // invoke: Release
	evRelease    = "release-done"

	// The CLI participant's (nemesis_cli.go): its acquire (above) is the
	// start of a turnstile lock process, with the lease's number; its
	// command's fenced writes are fence and fence-done events.
	evCmdStart = "cmd-start" // the command's writer said hello to the fence (Lease, Token): the fence's time
	evCmdEnd   = "cmd-end"   // the writer's process ended, as the fence saw its connection end
	evCLILost  = "cli-lost"  // turnstile lock said its lease was lost
	evCLIExit  = "cli-exit"  // turnstile lock exited (V its exit status)
)

// Outcomes.
const (
	outOK      = "ok"
	outFail    = "fail"
	outUnknown = "unknown"
)

// nemEvent is one history event.
type nemEvent struct {
	Client int    `json:"c"`           // set by the parent
	Inc    int    `json:"i"`           // the process's incarnation, set by the parent
	Kind   string `json:"k"`           // one of the ev* kinds
	T      int64  `json:"t"`           // wall-clock time, Unix nanoseconds
	Lease  int    `json:"l,omitempty"` // the lease's number within the incarnation
	Path   int    `json:"p"`           // the lock path's (and register's) index
	Token  int64  `json:"tok,omitempty"`
	V      int64  `json:"v,omitempty"`
	Out    string `json:"o,omitempty"`
	Seq    int64  `json:"s,omitempty"` // the fenced register's write count after an accepted write
	Err    string `json:"e,omitempty"`
	Server bool   `json:"srv,omitempty"` // a guarded write refused by ZooKeeper's check
}

// eventWriter prints events as JSON lines, one write each, from any
// goroutine.
type eventWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *eventWriter) emit(ev nemEvent) {
	if ev.T == 0 {
		ev.T = time.Now().UnixNano()
	}
	b, _ := json.Marshal(ev)
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.w.Write(append(b, '\n'))
}

// nemHistory is the parent's copy of every client's events.
type nemHistory struct {
	mu     sync.Mutex
	events []nemEvent
}

func (h *nemHistory) add(ev nemEvent) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

func (h *nemHistory) snapshot() []nemEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]nemEvent(nil), h.events...)
}

// nemWindow is a time a client process could not act: stopped, or killed
// (then its incarnation ended at from).
type nemWindow struct {
	client, inc int
	from, to    int64 // Unix nanoseconds
	killed      bool
}

// writeHistory keeps a run's history, one JSON line per event, then one
// per window, for a look after the run.
func writeHistory(path string, events []nemEvent, windows []nemWindow) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := &eventWriter{w: f}
	for _, ev := range events {
		w.emit(ev)
	}
	for _, win := range windows {
		kind := "stopped"
		if win.killed {
			kind = "killed"
		}
		w.emit(nemEvent{Client: win.client, Inc: win.inc, Kind: kind, T: win.from, V: win.to})
	}
	return f.Close()
}
