package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// fencedResource is the thing a lock protects, as a fencing resource would
// guard it: a file that every holder writes once per hold, across
// processes, under flock(2). A write carrying a fencing token smaller than
// the greatest token written so far is refused: it comes from a holder that
// lost the lock and does not know it yet, since every later holder's token
// is greater. A write without a token (a lock that has none) cannot be
// judged and is always accepted: that is the point of showing it.
//
// The file holds one line: "<greatest token> <writes> <last writer>",
// padded with spaces to resourceWidth bytes.
type fencedResource struct {
	path string
}

// resourceWidth is the length of the file's line, newline included: more
// than any line's content (a writer's name is a few digits).
const resourceWidth = 128

// resourceState is the file's content.
type resourceState struct {
	maxToken int64
	hasMax   bool
	writes   int64
	last     string
}

// newFencedResource makes the file afresh at path.
func newFencedResource(path string) (*fencedResource, error) {
	if err := os.WriteFile(path, []byte("- 0 -\n"), 0o644); err != nil {
		return nil, fmt.Errorf("fenced resource: %w", err)
	}
	return &fencedResource{path: path}, nil
}

// write is one holder's write: accepted, or refused for a stale token. It
// returns the state after it.
func (r *fencedResource) write(token int64, hasToken bool, who string) (accepted bool, st resourceState, err error) {
	err = r.locked(func(st0 *resourceState) bool {
		if hasToken && st0.hasMax && token < st0.maxToken {
			return false
		}
		if hasToken && (!st0.hasMax || token > st0.maxToken) {
			st0.maxToken, st0.hasMax = token, true
		}
		st0.writes++
		st0.last = who
		accepted = true
		return true
	}, &st)
	return accepted, st, err
}

// state reads the file.
func (r *fencedResource) state() (resourceState, error) {
	var st resourceState
	err := r.locked(func(*resourceState) bool { return false }, &st)
	return st, err
}

// locked runs f on the state under an exclusive flock and writes the state
// back when f says so; out receives the state after f.
func (r *fencedResource) locked(f func(*resourceState) (changed bool), out *resourceState) error {
	file, err := os.OpenFile(r.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("fenced resource: %w", err)
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("fenced resource: flock: %w", err)
	}
	defer syscall.Flock(int(file.Fd()), syscall.LOCK_UN)
	buf := make([]byte, 256)
	n, _ := file.ReadAt(buf, 0)
	st, err := parseResourceState(string(buf[:n]))
	if err != nil {
		return err
	}
	if f(&st) {
		// One write of a fixed width, over the old content, and no
		// truncation: a writer killed (SIGKILL) in the middle of its
		// turn leaves the old state or the new one, never an empty file.
		line := fmt.Sprintf("%-*s\n", resourceWidth-1, fmt.Sprintf("%s %d %s", tokenText(st.maxToken, st.hasMax), st.writes, st.last))
		if _, err := file.WriteAt([]byte(line), 0); err != nil {
			return fmt.Errorf("fenced resource: %w", err)
		}
	}
	*out = st
	return nil
}

func tokenText(t int64, ok bool) string {
	if !ok {
		return "-"
	}
	return strconv.FormatInt(t, 10)
}

func parseResourceState(s string) (resourceState, error) {
	var st resourceState
	f := strings.Fields(s)
	if len(f) != 3 {
		return st, fmt.Errorf("fenced resource: bad content %q", s)
	}
	var err error
	if f[0] != "-" {
		if st.maxToken, err = strconv.ParseInt(f[0], 10, 64); err != nil {
			return st, fmt.Errorf("fenced resource: token %q", f[0])
		}
		st.hasMax = true
	}
	if st.writes, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return st, fmt.Errorf("fenced resource: writes %q", f[1])
	}
	st.last = f[2]
	return st, nil
}
