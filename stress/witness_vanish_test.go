package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The stalled holder's file, found in the way by a create, is gone when
// it is read (the stalled holder went on and removed it): the create is
// tried again and succeeds, as it would have a moment later; no violation.
// A file of anyone else, there when read, still fails the create.
func TestWitnessFileGoneBetweenCreateAndRead(t *testing.T) {
	file := filepath.Join(t.TempDir(), "witness")
	if err := os.WriteFile(file, []byte("4242.stalled\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(read func(string) ([]byte, error)) { readWitness = read }(readWitness)
	readWitness = func(name string) ([]byte, error) {
		os.Remove(name) // the stalled holder leaves right now
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	w := newWitness()
	if err := w.create(file, &holding{worker: 1}); err != nil {
		t.Fatalf("create after the file in the way vanished: %v", err)
	}

	readWitness = os.ReadFile
	if err := w.create(file, &holding{worker: 2}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create beside worker 1's file: %v, want it to fail with fs.ErrExist", err)
	}
}
