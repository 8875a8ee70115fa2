package apicheck

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite api/turnstile.txt from the source")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// maxIdentifiers bounds the promise: the exported identifiers of the public
// packages together (constants, variables, functions, types and methods; a
// struct's fields and an interface's methods are listed, so a change to
// them shows, but counted with their type). Every name is one more thing
// that cannot change without breaking a user; the bound keeps adding one a
// decision: 210 with Lease.TrustedUntil and Engine.LostMargin (a holder,
// and the CLI, must know until when it is trusted and how long it has to
// stop), 215 with turnstiletest's Partition (a test of Lost() before
// another grant cannot rest on ExpireSession, which deletes the nodes at
// once) and engine.StateLapsed (a lapse of trust is not an expiry), 222
// with election.Leadership's Lease methods declared on it (they were in its
// method set already, promoted; declared, go doc shows them with the type
// and a nil *Leadership answers them instead of panicking).
const maxIdentifiers = 222

// TestAPI compares the exported API with the checked-in list. Run
// `go test ./internal/apicheck -update` after a change to the API made on
// purpose, and commit the list's diff with it.
func TestAPI(t *testing.T) {
	root := filepath.Join("..", "..")
	lines, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lines, "\n") + "\n"
	file := filepath.Join(root, "api", "turnstile.txt")
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/apicheck -update to write it)", err)
	}
	if got != string(want) {
		added, removed := diff(strings.Split(string(want), "\n"), lines)
		t.Errorf("the exported API differs from api/turnstile.txt; if on purpose, run go test ./internal/apicheck -update and commit the diff\nadded:\n  %s\nremoved:\n  %s",
			strings.Join(added, "\n  "), strings.Join(removed, "\n  "))
	}
	if n := Identifiers(lines); n > maxIdentifiers {
		t.Errorf("%d exported identifiers, at most %d", n, maxIdentifiers)
	}
}

func diff(want, got []string) (added, removed []string) {
	in := func(s []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range s {
			if l != "" {
				m[l] = true
			}
		}
		return m
	}
	w, g := in(want), in(got)
	for l := range g {
		if !w[l] {
			added = append(added, l)
		}
	}
	for l := range w {
		if !g[l] {
			removed = append(removed, l)
		}
	}
	return added, removed
}
