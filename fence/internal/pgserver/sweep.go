package pgserver

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A server's temp dir holds an owner file with the PID of the Go process
// that made it. If that process is killed (SIGKILL, a test timeout), the
// kernel kills its postmaster (Pdeathsig), but nobody removes the dir:
// the next Start in any process sweeps such dirs.

const (
	dirPrefix = "turnstile-pg-"
	ownerFile = "owner"
)

var sweepOnce sync.Once

func sweepStale() { sweepOnce.Do(func() { sweepStaleIn(os.TempDir()) }) }

// sweepStaleIn removes the dirs under tmp whose owner is gone, whose
// postmaster (data/postmaster.pid's first line) is gone, and that nothing
// touched for a minute.
func sweepStaleIn(tmp string) (removed []string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, dirPrefix+"*"))
	for _, d := range dirs {
		owner, ok := pidIn(filepath.Join(d, ownerFile))
		if !ok || owner == os.Getpid() || !pidGone(owner) {
			continue
		}
		if pm, ok := pidIn(filepath.Join(d, "data", "postmaster.pid")); ok && !pidGone(pm) {
			continue
		}
		fi, err := os.Stat(d)
		if err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		if os.RemoveAll(d) == nil {
			removed = append(removed, d)
		}
	}
	return removed
}

// pidIn reads the PID on the first line of file.
func pidIn(file string) (int, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	return pid, err == nil && pid > 0
}

func pidGone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }
