package engine_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The runtime stays small enough to read whole: what decides lives in the
// pure machines under engine/internal, and what a piece of the runtime can
// keep to itself (a registry, a table) goes to a package of its own there.
// Package engine holds at most 3,000 lines outside tests, the cohort's
// shell (cohort.go) at most 250.
func TestSize(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(b, []byte("\n"))
		total += n
		if f == "cohort.go" && n > 250 {
			t.Errorf("cohort.go holds %d lines, over 250", n)
		}
	}
	if total > 3000 {
		t.Errorf("package engine holds %d lines outside tests, over 3,000", total)
	}
}
