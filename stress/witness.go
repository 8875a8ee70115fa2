package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// witness is the file protocol that proves exclusion across processes and
// languages on one machine. Peers follow the same protocol on the same PATH:
//
//   - mutex: on acquire create PATH with O_CREATE|O_EXCL (a failure is a
//     violation); remove it before release.
//   - rw: a writer creates PATH with O_EXCL, then checks that no file
//     PATH.r.* exists; a reader creates its own PATH.r.<pid>.<worker>, then
//     checks that PATH does not exist; each removes its file before release.
//     Any failed check is a violation.
//   - semaphore: each holder creates its own PATH.s.<pid>.<worker>, then
//     counts the PATH.s.* files; more than -leases is a violation.
//
// A file left by a holder of THIS process whose lease was lost is not held
// against the next holder: that holder was told to stop and is on its way
// out. Files of other processes are always counted; one of the pause
// fault's stalled holder is reported as errStalledHolder.
type witness struct {
	pid int
	mu  sync.Mutex
	own map[string]*holding // file → the local holding that created it
}

func newWitness() *witness {
	return &witness{pid: os.Getpid(), own: map[string]*holding{}}
}

// excused reports whether file was made by a local holder that was told it
// lost its lease.
func (w *witness) excused(file string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.own[file]
	return h != nil && closedChan(h.lost)
}

func (w *witness) register(file string, h *holding) {
	w.mu.Lock()
	w.own[file] = h
	w.mu.Unlock()
	h.wfile = file
}

// errStalledHolder: the witness file belongs to the pause fault's holder,
// stopped while it held (see pause_child.go, which names itself
// "<pid>.stalled" in the file).
var errStalledHolder = errors.New("the stalled holder's witness file is there")

// readWitness reads a witness file found in the way; a test replaces it to
// remove the file between the create that met it and the read.
var readWitness = os.ReadFile

// vanishedRetries bounds the creates tried again when the file in the way
// is gone by the time it is read: the pause fault's stalled holder removes
// its file when it goes on, while the workers that found it there try
// create after create (thousands of times, at memory speed), so one of
// them can meet it in the create and miss it in the read. A file that
// keeps vanishing is a protocol gone wrong, and fails.
const vanishedRetries = 3

// create makes file with O_EXCL; a file of a local lost holder is taken over.
func (w *witness) create(file string, h *holding) error {
	for try := 0; ; try++ {
		f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d.%d\n", w.pid, h.worker)
			f.Close()
			w.register(file, h)
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		if try == 0 && w.excused(file) {
			os.Remove(file)
			continue
		}
		b, rerr := readWitness(file)
		switch {
		case rerr == nil && strings.HasSuffix(strings.TrimSpace(string(b)), ".stalled"):
			return errStalledHolder
		case errors.Is(rerr, fs.ErrNotExist) && try < vanishedRetries:
			continue // its holder left between the create and the read
		}
		return err
	}
}

// others counts the files starting with prefix that are not excused and are
// not self's own.
func (w *witness) others(prefix string, self string) int {
	dir, base := filepath.Split(prefix)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), base) {
			continue
		}
		f := filepath.Join(dir, e.Name())
		if f == self || w.excused(f) {
			continue
		}
		n++
	}
	return n
}

// enter runs the protocol for a new holder and returns why it failed, or
// nil.
func (w *witness) enter(h *holding, leases int) error {
	base := h.wbase
	switch h.kind {
	case kMutex:
		if err := w.create(base, h); err != nil {
			return fmt.Errorf("create %s: %w", base, err)
		}
	case kWrite:
		if err := w.create(base, h); err != nil {
			return fmt.Errorf("create %s: %w", base, err)
		}
		if n := w.others(base+".r.", ""); n > 0 {
			return fmt.Errorf("writer found %d reader files %s.r.*", n, base)
		}
	case kRead:
		own := fmt.Sprintf("%s.r.%d.%d", base, w.pid, h.worker)
		if err := w.create(own, h); err != nil {
			return fmt.Errorf("create %s: %w", own, err)
		}
		if _, err := os.Stat(base); err == nil && !w.excused(base) {
			return fmt.Errorf("reader found the writer file %s", base)
		}
	case kSem:
		own := fmt.Sprintf("%s.s.%d.%d", base, w.pid, h.worker)
		if err := w.create(own, h); err != nil {
			return fmt.Errorf("create %s: %w", own, err)
		}
		if n := w.others(base+".s.", own) + 1; n > leases {
			return fmt.Errorf("%d holder files %s.s.*, limit %d", n, base, leases)
		}
	}
	return nil
}

// leave removes the holder's file before its release; it finds no
// violation (a file gone is seen by the next create).
func (w *witness) leave(h *holding) error {
	if h.wfile == "" {
		return nil
	}
	w.mu.Lock()
	if w.own[h.wfile] == h {
		delete(w.own, h.wfile)
		os.Remove(h.wfile)
	}
	w.mu.Unlock()
	return nil
}
