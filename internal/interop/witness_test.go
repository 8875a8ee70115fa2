package interop_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/internal/interop"
)

func newWitness(t *testing.T) (a, b *interop.Witness) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "witness")
	a, err := interop.NewWitness(path)
	if err != nil {
		t.Fatal(err)
	}
	// Two contenders of one path, as two processes would be.
	return a, &interop.Witness{Path: path}
}

func wantViolation(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, interop.ErrViolation) {
		t.Errorf("%s: got %v, want a violation", what, err)
	}
}

func wantOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestWitnessMutexOverlapFails(t *testing.T) {
	a, b := newWitness(t)
	wantOK(t, "first acquire", a.AcquireMutex())
	wantViolation(t, "overlapping acquire", b.AcquireMutex())
	// b created nothing, so its release must leave a's file alone.
	wantOK(t, "release after a failed acquire", b.ReleaseMutex())
	if _, err := os.Stat(a.Path); err != nil {
		t.Fatalf("the holder's file went away: %v", err)
	}
	wantOK(t, "holder release", a.ReleaseMutex())
	wantOK(t, "acquire after release", b.AcquireMutex())
	wantOK(t, "release", b.ReleaseMutex())
	if _, err := os.Stat(a.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("witness file left behind: %v", err)
	}
}

func TestWitnessMutexFileRemovedWhileHeld(t *testing.T) {
	a, _ := newWitness(t)
	wantOK(t, "acquire", a.AcquireMutex())
	if err := os.Remove(a.Path); err != nil {
		t.Fatal(err)
	}
	wantViolation(t, "release of a vanished file", a.ReleaseMutex())
}

func TestWitnessReadWrite(t *testing.T) {
	a, b := newWitness(t)

	// Readers share.
	wantOK(t, "reader 1", a.EnterRead(1))
	wantOK(t, "reader 2", b.EnterRead(2))
	// A writer beside readers is caught.
	wantViolation(t, "writer while readers hold", a.EnterWrite())
	wantOK(t, "exit writer", a.ExitWrite())
	wantOK(t, "exit reader 1", a.ExitRead(1))
	wantOK(t, "exit reader 2", b.ExitRead(2))

	// A reader beside a writer is caught, and so is a second writer.
	wantOK(t, "writer", a.EnterWrite())
	wantViolation(t, "reader while a writer holds", b.EnterRead(3))
	wantViolation(t, "second writer", b.EnterWrite())
	wantOK(t, "exit reader 3", b.ExitRead(3))
	wantOK(t, "exit second writer (owns nothing)", b.ExitWrite())
	wantOK(t, "exit writer", a.ExitWrite())

	// A worker number reused while its file exists is caught.
	wantOK(t, "reader 4", a.EnterRead(4))
	wantViolation(t, "reader 4 again", a.EnterRead(4))
	wantOK(t, "exit reader 4", a.ExitRead(4))

	left, _ := filepath.Glob(a.Path + "*")
	if len(left) != 0 {
		t.Errorf("files left behind: %v", left)
	}
}

func TestWitnessSemaphore(t *testing.T) {
	a, b := newWitness(t)
	wantOK(t, "holder 1 of 2", a.EnterSemaphore(1, 2))
	wantOK(t, "holder 2 of 2", b.EnterSemaphore(2, 2))
	wantViolation(t, "holder 3 of 2", a.EnterSemaphore(3, 2))
	for w, wit := range map[int]*interop.Witness{1: a, 2: b, 3: a} {
		wantOK(t, "exit", wit.ExitSemaphore(w))
	}
	wantOK(t, "holder after exits", b.EnterSemaphore(4, 1))
	wantOK(t, "exit", b.ExitSemaphore(4))
}

// mutexAcquirer is an in-process lock for RunGo's own tests.
func mutexAcquirer(mu *sync.Mutex) interop.Acquirer {
	return func(ctx context.Context, _ int, _ bool) (func(context.Context) error, error) {
		mu.Lock()
		return func(context.Context) error { mu.Unlock(); return nil }, nil
	}
}

func TestRunGoExcludes(t *testing.T) {
	var mu sync.Mutex
	cfg := interop.PeerConfig{
		Recipe: "mutex", Workers: 4, Iterations: 25, Hold: 100 * time.Microsecond,
		Witness: filepath.Join(t.TempDir(), "witness"),
	}
	r, err := interop.RunGo(context.Background(), cfg, mutexAcquirer(&mu))
	if err != nil || r.Violations != 0 || r.Acquisitions != 100 {
		t.Fatalf("RunGo: err=%v result=%+v", err, r)
	}
}

// TestRunGoCatchesOverlap: a "lock" that excludes nothing. Worker 1 is
// granted only once worker 0's witness file exists, while worker 0 holds
// for long, so worker 1's check must fail.
func TestRunGoCatchesOverlap(t *testing.T) {
	witness := filepath.Join(t.TempDir(), "witness")
	none := func(ctx context.Context, worker int, _ bool) (func(context.Context) error, error) {
		for worker == 1 {
			if _, err := os.Stat(witness); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		return func(context.Context) error { return nil }, nil
	}
	cfg := interop.PeerConfig{Recipe: "rw", WriteRatio: 1, Workers: 2, Iterations: 1, Hold: 2 * time.Second, Witness: witness}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := interop.RunGo(ctx, cfg, none)
	if !errors.Is(err, interop.ErrViolation) || r.Violations != 1 || r.Acquisitions != 2 {
		t.Fatalf("RunGo: err=%v result=%+v, want exactly 1 violation", err, r)
	}
	if left, _ := filepath.Glob(witness + "*"); len(left) != 0 {
		t.Errorf("files left behind: %v", left)
	}
}
