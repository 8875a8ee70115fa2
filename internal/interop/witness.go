package interop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// ErrViolation is wrapped by every error a Witness returns for a failed
// check: two holders of one mutex, a reader beside a writer, more than N
// semaphore holders. Other errors are I/O failures of the witness itself.
var ErrViolation = errors.New("mutual exclusion violated")

// Witness checks mutual exclusion across processes and libraries with files
// next to Path, by a protocol every contender follows (Go, Curator peer,
// kazoo peer, the stress harness):
//
//   - mutex: on acquire, create Path with O_CREAT|O_EXCL (failure is a
//     violation); remove it before release.
//   - read/write: a writer creates Path with O_EXCL, then checks that no
//     file Path.r.* exists; a reader creates its own Path.r.<pid>.<worker>,
//     then checks that Path does not exist. Each removes its file before
//     release. Any failed check is a violation.
//   - semaphore of N: each holder creates its own Path.s.<pid>.<worker>,
//     then counts the Path.s.* files; more than N is a violation.
//
// Removing a file one created that is already gone is a violation too
// (someone else removed it while it was held). Worker numbers must be
// unique among the contenders of one process that use the same Path.
//
// A Witness remembers which files it created, so the Release/Exit that
// follows an Enter that reported a violation never removes another
// holder's file. Use one Witness per Path per process, by pointer; its
// methods are safe for concurrent use.
type Witness struct {
	Path string

	mu    sync.Mutex
	owned map[string]bool
}

// NewWitness returns a Witness for path, made absolute.
func NewWitness(path string) (*Witness, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return &Witness{Path: abs}, nil
}

func violation(format string, args ...any) error {
	return fmt.Errorf("witness: %w: %s", ErrViolation, fmt.Sprintf(format, args...))
}

// own is this process's file of the given kind ("r" or "s") for worker.
func (w *Witness) own(kind string, worker int) string {
	return w.Path + "." + kind + "." + strconv.Itoa(os.Getpid()) + "." + strconv.Itoa(worker)
}

// create makes file with O_CREAT|O_EXCL and records it as owned. It reports
// false (and no error) when the file already existed.
func (w *Witness) create(file string) (bool, error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("witness: %w", err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("witness: %w", err)
	}
	w.mu.Lock()
	if w.owned == nil {
		w.owned = make(map[string]bool)
	}
	w.owned[file] = true
	w.mu.Unlock()
	return true, nil
}

// remove removes file if this Witness created it; nil if it did not.
func (w *Witness) remove(file string) error {
	w.mu.Lock()
	mine := w.owned[file]
	delete(w.owned, file)
	w.mu.Unlock()
	if !mine {
		return nil
	}
	err := os.Remove(file)
	if errors.Is(err, fs.ErrNotExist) {
		return violation("%s vanished while held", file)
	}
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	return nil
}

// count counts the files Path.<kind>.*.
func (w *Witness) count(kind string) (int, error) {
	dir, base := filepath.Split(w.Path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("witness: %w", err)
	}
	prefix := base + "." + kind + "."
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			n++
		}
	}
	return n, nil
}

// AcquireMutex is the mutex holder's entry check: create Path exclusively.
func (w *Witness) AcquireMutex() error {
	ok, err := w.create(w.Path)
	if err != nil {
		return err
	}
	if !ok {
		return violation("%s already exists: another holder has the mutex", w.Path)
	}
	return nil
}

// ReleaseMutex removes Path if AcquireMutex created it.
func (w *Witness) ReleaseMutex() error { return w.remove(w.Path) }

// EnterWrite is a writer's entry check: create Path exclusively, then find
// no reader's file.
func (w *Witness) EnterWrite() error {
	if err := w.AcquireMutex(); err != nil {
		return err
	}
	readers, err := w.count("r")
	if err != nil {
		return err
	}
	if readers > 0 {
		return violation("a writer holds while %d reader file(s) %s.r.* exist", readers, filepath.Base(w.Path))
	}
	return nil
}

// ExitWrite removes Path if EnterWrite created it.
func (w *Witness) ExitWrite() error { return w.remove(w.Path) }

// EnterRead is a reader's entry check: create Path.r.<pid>.<worker>, then
// find no writer's Path.
func (w *Witness) EnterRead(worker int) error {
	mine := w.own("r", worker)
	ok, err := w.create(mine)
	if err != nil {
		return err
	}
	if !ok {
		return violation("reader file %s already exists (worker number reused?)", mine)
	}
	if _, err := os.Lstat(w.Path); err == nil {
		return violation("a reader holds while the writer's %s exists", w.Path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("witness: %w", err)
	}
	return nil
}

// ExitRead removes the reader's file of worker.
func (w *Witness) ExitRead(worker int) error { return w.remove(w.own("r", worker)) }

// EnterSemaphore is a semaphore holder's entry check: create
// Path.s.<pid>.<worker>, then count at most n such files.
func (w *Witness) EnterSemaphore(worker, n int) error {
	mine := w.own("s", worker)
	ok, err := w.create(mine)
	if err != nil {
		return err
	}
	if !ok {
		return violation("semaphore file %s already exists (worker number reused?)", mine)
	}
	holders, err := w.count("s")
	if err != nil {
		return err
	}
	if holders > n {
		return violation("%d holders of a semaphore of %d", holders, n)
	}
	return nil
}

// ExitSemaphore removes the semaphore holder's file of worker.
func (w *Witness) ExitSemaphore(worker int) error { return w.remove(w.own("s", worker)) }
