package pgserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A dir whose owner and postmaster are gone is swept; one whose owner
// lives, or that was touched within the minute, is kept.
func TestSweepStale(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := strconv.Itoa(dead.Process.Pid)
	mk := func(name, owner string, old bool) string {
		d := filepath.Join(tmp, dirPrefix+name)
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(owner+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "data", "postmaster.pid"), []byte(gone+"\n/x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if old {
			then := time.Now().Add(-time.Hour)
			if err := os.Chtimes(d, then, then); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	stale := mk("stale", gone, true)
	live := mk("live", strconv.Itoa(os.Getppid()), true)
	fresh := mk("fresh", gone, false)
	removed := sweepStaleIn(tmp)
	if len(removed) != 1 || removed[0] != stale {
		t.Fatalf("swept %v, want only %s", removed, stale)
	}
	for _, d := range []string{live, fresh} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
