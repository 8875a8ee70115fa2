package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// memoryDir is where a witness file named without a directory goes, and
// where a run that needs a witness of its own (a pause fault, whose stalled
// holder is another process) makes one: a tmpfs on every Linux
// distribution.
const memoryDir = "/dev/shm"

// errWitnessOnDisk refuses a witness file on a disk filesystem.
var errWitnessOnDisk = errors.New("witness file on a disk filesystem")

// placeWitness resolves -witness-file. A bare name goes under memoryDir. A
// path whose directory is not in memory is refused unless onDisk is set:
// every holder creates and removes the file once per cycle, and on a disk
// filesystem those two metadata writes (journalled, under the directory's
// lock that every worker shares) cost more than the lock under test, which
// the harness would then measure as if it were the lock's.
func placeWitness(file string, onDisk bool) (string, error) {
	if !strings.ContainsRune(file, os.PathSeparator) {
		file = filepath.Join(memoryDir, file)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	if onDisk {
		return abs, nil
	}
	dir := filepath.Dir(abs)
	mem, fsName, err := inMemoryFS(dir)
	if err != nil {
		return "", fmt.Errorf("-witness-file %s: %w", file, err)
	}
	if !mem {
		return "", fmt.Errorf("%w: -witness-file %s is on %s; put it under %s (or name it without a directory), or give -witness-on-disk to measure with it there anyway",
			errWitnessOnDisk, file, fsName, memoryDir)
	}
	return abs, nil
}

// memoryWitness makes a fresh directory in memory for a witness file the
// run needs but was not given; remove removes it.
func memoryWitness() (file string, remove func(), err error) {
	dir, err := os.MkdirTemp(memoryDir, "turnstile-stress-*")
	if err != nil {
		return "", nil, fmt.Errorf("witness dir in %s: %w", memoryDir, err)
	}
	return filepath.Join(dir, "witness"), func() { os.RemoveAll(dir) }, nil
}
