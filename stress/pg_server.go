package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

	_ "github.com/lib/pq"
)

// pgServer is a PostgreSQL cluster the harness started for the pause
// fault's account (-pause-resource postgres), made the way the fence
// module's tests make theirs (fence/internal/pgserver, which this module
// cannot import): Debian's binaries (/usr/lib/postgresql/<version>/bin, or
// $PG_BIN), initdb in a temp dir of its own, trust over loopback, a free
// port, fsync off; as the system's postgres user when the harness runs as
// root, since initdb and postgres refuse root. The postmaster is killed by
// the kernel should the harness die first (the parent-death signal of a
// thread that lives as long as it); Close stops it and removes the dir.
type pgServer struct {
	dir     string
	port    int
	version string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the postmaster is reaped
}

// pgUser is the superuser the cluster is made with.
const pgUser = "turnstile"

// startPostgres makes a cluster and starts its server; ctx bounds the start.
func startPostgres(ctx context.Context) (*pgServer, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("postgres: running as root, and PostgreSQL will not: no postgres user to run it as (%w)", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
	}
	dir, err := os.MkdirTemp("", "turnstile-stress-pg-*")
	if err != nil {
		return nil, err
	}
	s := &pgServer{dir: dir}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("postgres: hand %s to the postgres user: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", pgUser,
		"--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("postgres: initdb: %w\n%s", err, out)
	}
	var last error
	for range 3 { // the port may be taken between pick and bind
		if s.port, err = freePort(); err != nil {
			break
		}
		if last = s.start(ctx, bin, data, cred); last == nil {
			return s, nil
		}
		s.stop()
		if ctx.Err() != nil || !strings.Contains(s.logTail(), "could not bind") {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, errors.Join(last, err)
}

func (s *pgServer) start(ctx context.Context, bin, data string, cred *syscall.Credential) error {
	logf, err := os.OpenFile(filepath.Join(s.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	// Durability is not what the pause fault measures; the socket goes in
	// the temp dir, not in /var/run/postgresql, which a service may own.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	started := make(chan error, 1)
	s.cmd, s.done = cmd, make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, and its child's Pdeathsig, end with the server
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
		if err := cmd.Start(); err != nil {
			started <- err
			close(s.done)
			return
		}
		started <- nil
		cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		s.cmd = nil
		return fmt.Errorf("postgres: start: %w", err)
	}
	db, err := sql.Open("postgres", s.dsn("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	for {
		err := db.QueryRowContext(ctx, "SHOW server_version").Scan(&s.version)
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("postgres: exited at start:\n%s", s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres: not ready (%v): %w\n%s", err, ctx.Err(), s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// dsn is a connection string for database dbname on the loopback port.
func (s *pgServer) dsn(dbname string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable", s.port, pgUser, dbname)
}

func (s *pgServer) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// stop ends the postmaster by its process: SIGINT (a fast shutdown), then
// SIGKILL after 30 s; it returns once the process is reaped.
func (s *pgServer) stop() {
	if s.cmd == nil {
		return
	}
	cmd := s.cmd
	s.cmd = nil
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		<-s.done
	}
}

// Close stops the server and removes its dir.
func (s *pgServer) Close() {
	s.stop()
	os.RemoveAll(s.dir)
}

// pgBinDir is $PG_BIN, or the newest /usr/lib/postgresql/<version>/bin.
func pgBinDir() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", errors.New("postgres: no PostgreSQL in /usr/lib/postgresql/*/bin (make deps installs Debian's postgresql; or set PG_BIN)")
	}
	version := func(p string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
		return v
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	return filepath.Dir(found[0]), nil
}
