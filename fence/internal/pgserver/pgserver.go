// Package pgserver starts a throwaway PostgreSQL server for tests, as
// internal/zkserver starts ZooKeeper: Debian's binaries
// (/usr/lib/postgresql/<version>/bin, package postgresql; PG_BIN names
// another directory), a cluster made by initdb in a private temp dir, a
// free loopback port, its Unix socket in the same dir, and everything
// stopped and removed by Close.
//
// initdb and postgres refuse to run as root: when the tests run as root,
// the server runs as the system's postgres user (which Debian's package
// makes), and its temp dir is handed to that user.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// User is the database role the cluster is made with, a superuser that
// connects without a password (trust) over loopback and the socket.
const User = "turnstile"

// Server is one running PostgreSQL cluster.
type Server struct {
	dir     string // the temp dir: data, socket, log
	logPath string
	port    int
	proc    *process
}

// Start makes a cluster and starts its server; ctx bounds the start.
func Start(ctx context.Context) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	sweepStale()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("pgserver: temp dir: %w", err)
	}
	s := &Server{dir: dir, logPath: filepath.Join(dir, "postgres.log")}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		s.remove()
		return nil, fmt.Errorf("pgserver: owner file: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			s.remove()
			return nil, fmt.Errorf("pgserver: hand %s to the postgres user: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", User,
		"--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		s.remove()
		return nil, fmt.Errorf("pgserver: initdb: %w\n%s", err, out)
	}
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			s.remove()
			return nil, err
		}
		s.port = port
		lastErr = s.start(ctx, bin, data, cred)
		if lastErr == nil {
			return s, nil
		}
		s.stop()
		if ctx.Err() != nil || !strings.Contains(s.LogTail(20), "could not bind") {
			break
		}
		// somebody took the port between pick and bind: another
	}
	s.remove()
	return nil, lastErr
}

func (s *Server) start(ctx context.Context, bin, data string, cred *syscall.Credential) error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgserver: log: %w", err)
	}
	defer logf.Close()
	// Durability is not what the tests measure: fsync off keeps a slow
	// disk out of them. The socket lives in the temp dir, not in
	// /var/run/postgresql, which an installed cluster may own.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(s.port),
		"-k", s.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	p, err := startProcess(cmd, cred)
	if err != nil {
		return fmt.Errorf("pgserver: start postgres: %w", err)
	}
	s.proc = p
	isready := filepath.Join(bin, "pg_isready")
	for {
		out, err := exec.CommandContext(ctx, isready, "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", User, "-d", "postgres").CombinedOutput()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("pgserver: postgres exited at start: %v\n%s", p.err, s.LogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("pgserver: not ready (%s): %w\n%s", out, context.Cause(ctx), s.LogTail(20))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// DSN is a connection string for database dbname ("postgres" exists) on
// the server's loopback port, in the key=value form both lib/pq and pgx
// read.
func (s *Server) DSN(dbname string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable", s.port, User, dbname)
}

// LogTail is the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	b, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Close stops the server (a fast shutdown: sessions are ended, open
// transactions rolled back) and removes its directory.
func (s *Server) Close() error {
	err := s.stop()
	s.remove()
	return err
}

// stop ends the server: SIGINT, its fast shutdown, then SIGKILL if it has
// not exited in 30s. It returns once the process is reaped.
func (s *Server) stop() error {
	p := s.proc
	if p == nil {
		return nil
	}
	s.proc = nil
	p.signal(syscall.SIGINT)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		p.signal(syscall.SIGKILL)
		<-p.done
		return errors.New("pgserver: postgres ignored SIGINT for 30s; killed")
	}
}

func (s *Server) remove() { _ = os.RemoveAll(s.dir) }

// binDir is PG_BIN, or the newest /usr/lib/postgresql/<version>/bin.
func binDir() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", errors.New("pgserver: no PostgreSQL in /usr/lib/postgresql/*/bin (make deps installs Debian's postgresql; or set PG_BIN)")
	}
	version := func(p string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
		return v
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	return filepath.Dir(found[0]), nil
}

// credential is nil when the tests are not root; as root, the postgres
// user's, since initdb and postgres will not run as root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgserver: running as root, and PostgreSQL will not: no postgres user to run it as (%w)", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgserver: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// process is the started postmaster. done is closed once it has exited
// and been reaped.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid after done is closed
}

// startProcess starts cmd from a goroutine locked to its OS thread, which
// waits for it: the kernel sends the parent-death signal when the thread
// that forked the child exits, and the runtime may retire an idle thread,
// so the thread lives as long as the server. The server is thus killed
// with the test binary (killed, crashed, timed out), and never before.
func startProcess(cmd *exec.Cmd, cred *syscall.Credential) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with this goroutine.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// signal signals the process unless it is reaped (os.Process holds a
// pidfd on Linux: a recycled PID is never hit).
func (p *process) signal(sig os.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}
