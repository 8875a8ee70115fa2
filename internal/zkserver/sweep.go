package zkserver

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

// A server's temp dir holds an owner file: the PID of the Go process that
// made it, and the PID of the JVM while one runs. If that Go process is
// killed (SIGKILL, test timeout), the kernel kills its JVMs (Pdeathsig), but
// nobody removes the dir; the next Start in any process sweeps such dirs.

const (
	dirPrefix = "turnstile-zk-"
	ownerFile = "owner"
)

func (s *Server) writeOwner(jvmPID int) {
	data := strconv.Itoa(os.Getpid()) + " " + strconv.Itoa(jvmPID) + "\n"
	_ = os.WriteFile(filepath.Join(s.dir, ownerFile), []byte(data), 0o644)
}

var sweepOnce sync.Once

// sweepStale removes temp dirs left by processes that died without Close.
// A dir is removed only if it has an owner file, its Go owner is gone, its
// JVM is gone, and it has not been touched for a minute.
func sweepStale() {
	sweepOnce.Do(func() { sweepStaleIn(os.TempDir()) })
}

func sweepStaleIn(tmp string) (removed []string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			continue
		}
		owner, err1 := strconv.Atoi(f[0])
		jvm, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || owner <= 0 || owner == os.Getpid() {
			continue
		}
		fi, err := os.Stat(d)
		if err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		if pidGone(owner) && (jvm <= 0 || pidGone(jvm)) {
			if os.RemoveAll(d) == nil {
				removed = append(removed, d)
			}
		}
	}
	return removed
}

func pidGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
