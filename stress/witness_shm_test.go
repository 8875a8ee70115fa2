package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/internal/interop"
)

// twoMappings maps one table file twice, as the two processes of a twoproc
// run do.
func twoMappings(t *testing.T) (a, b *wordWitness) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "witness")
	a, err := openShmWitness(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close() })
	if b, err = openShmWitness(file); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.close() })
	return a, b
}

// Two holders of one word through two mappings of the table: entered at
// once, the second entry is a violation naming the first holder; entered
// one after the other, neither is. A leave of a word another holds is a
// violation too.
func TestShmWitnessTwoHolders(t *testing.T) {
	a, b := twoMappings(t)
	slot := a.slot("/stress/one")
	if b.slot("/stress/one") != slot {
		t.Fatal("one path, two slots")
	}
	idA, idB := holderID(101, 1), holderID(202, 2)

	if err := a.take(slot, idA); err != nil {
		t.Fatalf("first entry: %v", err)
	}
	err := b.take(slot, idB)
	if !errors.Is(err, interop.ErrViolation) || !strings.Contains(err.Error(), "101.1 holds") {
		t.Fatalf("second entry while 101.1 holds: %v, want a violation naming 101.1", err)
	}
	if err := b.give(slot, idB); !errors.Is(err, interop.ErrViolation) {
		t.Fatalf("202.2 leaving the word 101.1 holds: %v, want a violation", err)
	}
	if err := a.give(slot, idA); err != nil {
		t.Fatalf("first leave: %v", err)
	}

	if err := b.take(slot, idB); err != nil {
		t.Fatalf("entry after the first holder left: %v", err)
	}
	if err := b.give(slot, idB); err != nil {
		t.Fatalf("its leave: %v", err)
	}
	if err := a.take(slot, idA); err != nil {
		t.Fatalf("entry again after both left: %v", err)
	}
}

// Through the checker, as the harness's workers use it: a second holder
// of the path is a witness violation; a local holder told it lost its
// lease has its word taken over by the next, and neither its leave nor
// the new entry counts.
func TestShmWitnessChecker(t *testing.T) {
	a, _ := twoMappings(t)
	c := newChecker(true, 1, a, nil)
	lost := make(chan struct{})
	h1 := &holding{path: "/stress/one", worker: 1, kind: kMutex, lost: lost}
	if err := a.enter(h1, 1); err != nil {
		t.Fatalf("first entry: %v", err)
	}
	h2 := &holding{path: "/stress/one", worker: 2, kind: kMutex, lost: make(chan struct{})}
	if err := a.enter(h2, 1); !errors.Is(err, interop.ErrViolation) {
		t.Fatalf("second entry beside a live holder: %v, want a violation", err)
	}
	if err := a.leave(h2); err != nil {
		t.Fatalf("leave of a hold not entered: %v, want nothing left", err)
	}

	close(lost) // worker 1 is told it lost its lease
	h3 := &holding{path: "/stress/one", worker: 3, kind: kMutex, lost: make(chan struct{})}
	if err := a.enter(h3, 1); err != nil {
		t.Fatalf("entry over a lost local holder's word: %v, want it taken over", err)
	}
	if err := a.leave(h1); err != nil {
		t.Fatalf("the lost holder's leave: %v, want it excused", err)
	}
	if err := a.leave(h3); err != nil {
		t.Fatalf("the new holder's leave: %v", err)
	}

	c.enter("/stress/one", "", 4, kMutex, noneHeld{})
	c.enter("/stress/one", "", 5, kMutex, noneHeld{})
	if n := c.witnessFails.Load(); n != 1 {
		t.Fatalf("checker: %d witness violations for two holders at once, want 1", n)
	}
}

// The shm mode is refused where peers of other languages follow the files.
func TestShmWitnessTwoprocOnly(t *testing.T) {
	o := runCmd(t, "-workload", "contended", "-witness-mode", "shm", "-cycles", "10")
	if o.code != exitUsage || !strings.Contains(o.stderr, "twoproc") {
		t.Fatalf("-witness-mode shm on contended: exit %d, want %d and a message naming twoproc\n%s", o.code, exitUsage, o.stderr)
	}
}
