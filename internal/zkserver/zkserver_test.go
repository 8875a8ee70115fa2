package zkserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tLogger sends go-zookeeper's chatter to t.Logf (shown only on failure or
// with -v), and stops logging once the test is over.
type tLogger struct{ t testing.TB }

func (l tLogger) Printf(format string, args ...any) { l.t.Logf("zk: "+format, args...) }

// connect opens a go-zookeeper session to addrs, waits until it has a
// session, and at cleanup closes it and waits until its goroutines are gone.
func connect(t *testing.T, addrs ...string) *zk.Conn {
	t.Helper()
	return connectVia(t, net.DialTimeout, addrs...)
}

// connectVia is connect with the client's connections made by dial.
func connectVia(t *testing.T, dial zk.Dialer, addrs ...string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(addrs, 10*time.Second, zk.WithDialer(dial), zk.WithLogger(tLogger{t}))
	if err != nil {
		t.Fatalf("zk.Connect(%v): %v", addrs, err)
	}
	closed := false
	closeConn := func() {
		if closed {
			return
		}
		closed = true
		conn.Close()
		// go-zookeeper closes the event channel after its loops have ended.
		deadline := time.After(30 * time.Second)
		for {
			select {
			case _, ok := <-events:
				if !ok {
					return
				}
			case <-deadline:
				t.Errorf("zk conn to %v did not shut down", addrs)
				return
			}
		}
	}
	t.Cleanup(closeConn)
	deadline := time.After(60 * time.Second)
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("no ZooKeeper session with %v (state %v)", addrs, conn.State())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return conn
}

// closeNow closes a connection made by connect before the test ends.
func closeNow(t *testing.T, conn *zk.Conn) {
	t.Helper()
	conn.Close()
}

func assertGone(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("bad pid %d", pid)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists (kill -0: %v)", pid, err)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestStandalone(t *testing.T) {
	s := StartT(t, Options{})
	ctx := ctxT(t, 3*time.Minute)

	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr = %q", s.Addr())
	}
	pid := s.PID()
	if pid == 0 {
		t.Fatal("PID = 0 for a running server")
	}
	if _, err := os.Stat(s.LogFile()); err != nil {
		t.Errorf("log file: %v", err)
	}

	if r, err := s.FourLetterWord(ctx, "ruok"); err != nil || r != "imok" {
		t.Errorf("ruok = %q, %v", r, err)
	}
	if mode, err := s.Mode(ctx); err != nil || mode != "standalone" {
		t.Errorf("Mode = %q, %v; want standalone", mode, err)
	}
	v, err := s.Version(ctx)
	if err != nil || v == "" {
		t.Errorf("Version = %q, %v", v, err)
	}
	t.Logf("ZooKeeper %s at %s (pid %d)", v, s.Addr(), pid)
	if out, err := s.FourLetterWord(ctx, "mntr"); err != nil || !strings.Contains(out, "zk_server_state") {
		t.Errorf("mntr = %q, %v", out, err)
	}

	conn := connect(t, s.Addr())
	if _, err := conn.Create("/zkserver-test", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	if data, _, err := conn.Get("/zkserver-test"); err != nil || string(data) != "hello" {
		t.Fatalf("get = %q, %v", data, err)
	}
	closeNow(t, conn)

	// Stop keeps the data; Restart brings it back on the same port.
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if s.PID() != 0 {
		t.Errorf("PID = %d after Stop", s.PID())
	}
	assertGone(t, pid)
	if _, err := FourLetterWord(ctx, s.Addr(), "ruok"); err == nil {
		t.Errorf("ruok answered after Stop")
	}
	addr := s.Addr()
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Addr() != addr {
		t.Errorf("Addr changed across Restart: %s → %s", addr, s.Addr())
	}
	pid2 := s.PID()
	if pid2 == 0 || pid2 == pid {
		t.Errorf("PID after Restart = %d (before %d)", pid2, pid)
	}
	conn = connect(t, s.Addr())
	if data, _, err := conn.Get("/zkserver-test"); err != nil || string(data) != "hello" {
		t.Fatalf("get after restart = %q, %v", data, err)
	}
	closeNow(t, conn)

	// Kill, then Restart again.
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	assertGone(t, pid2)
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart after Kill: %v", err)
	}
	pid3 := s.PID()

	// Close leaves no process and no temp dir, and is idempotent.
	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	assertGone(t, pid3)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s still there: %v", dir, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Restart(ctx); err == nil {
		t.Errorf("Restart after Close succeeded")
	}
}

func TestEnsemble(t *testing.T) {
	e := StartEnsembleT(t, 3, Options{})
	ctx := ctxT(t, 5*time.Minute)

	addrs := e.Addrs()
	if len(addrs) != 3 {
		t.Fatalf("Addrs = %v", addrs)
	}
	seen := map[string]bool{}
	for i, s := range e.Servers {
		if seen[addrs[i]] {
			t.Errorf("duplicate addr %s", addrs[i])
		}
		seen[addrs[i]] = true
		if s.ID() != i+1 {
			t.Errorf("member %d has myid %d", i, s.ID())
		}
		mode, err := s.Mode(ctx)
		if err != nil || (mode != "leader" && mode != "follower") {
			t.Errorf("member %d mode = %q, %v", i, mode, err)
		}
	}
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader: %v", err)
	}
	t.Logf("leader is member %d (%s)", leader, addrs[leader])

	conn := connect(t, addrs...)
	if _, err := conn.Create("/ens", []byte("v0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}

	// Kill the leader: the other two still form a quorum and elect one.
	lpid := e.Servers[leader].PID()
	if err := e.Servers[leader].Kill(); err != nil {
		t.Fatalf("Kill leader: %v", err)
	}
	assertGone(t, lpid)

	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := conn.Set("/ens", []byte("v1"), -1)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write accepted after killing the leader: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := conn.Create("/ens/after-failover", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create after failover: %v", err)
	}
	if err := e.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady with 2 of 3: %v", err)
	}
	newLeader, err := e.Leader(ctx)
	if err != nil || newLeader == leader {
		t.Fatalf("Leader after failover = %d, %v (old %d)", newLeader, err, leader)
	}
	closeNow(t, conn)

	// The killed member comes back and rejoins.
	if err := e.Servers[leader].Restart(ctx); err != nil {
		t.Fatalf("Restart old leader: %v", err)
	}
	mode, err := e.Servers[leader].Mode(ctx)
	if err != nil || (mode != "leader" && mode != "follower") {
		t.Fatalf("rejoined member mode = %q, %v", mode, err)
	}
	if err := e.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady after rejoin: %v", err)
	}
	// Read through the rejoined member alone: it has caught up.
	c2 := connect(t, e.Servers[leader].Addr())
	if _, err := c2.Sync("/ens"); err != nil {
		t.Fatalf("sync via rejoined member: %v", err)
	}
	if data, _, err := c2.Get("/ens"); err != nil || string(data) != "v1" {
		t.Fatalf("get via rejoined member = %q, %v", data, err)
	}
	if ok, _, err := c2.Exists("/ens/after-failover"); err != nil || !ok {
		t.Fatalf("exists via rejoined member = %v, %v", ok, err)
	}
	closeNow(t, c2)

	pids := make([]int, 0, 3)
	dirs := make([]string, 0, 3)
	for _, s := range e.Servers {
		pids = append(pids, s.PID())
		dirs = append(dirs, s.Dir())
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, pid := range pids {
		assertGone(t, pid)
		if _, err := os.Stat(dirs[i]); !os.IsNotExist(err) {
			t.Errorf("temp dir %s still there: %v", dirs[i], err)
		}
	}
}

func TestNotInstalled(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-zookeeper.jar")
	t.Run("jar", func(t *testing.T) {
		t.Setenv("ZK_JAR", missing)
		s, err := Start(context.Background(), Options{})
		if !errors.Is(err, ErrNotInstalled) {
			t.Fatalf("Start = %v, %v; want ErrNotInstalled", s, err)
		}
		if !strings.Contains(err.Error(), "apt-get install -y zookeeper") {
			t.Errorf("error does not say how to install: %v", err)
		}
		if _, err := StartEnsemble(context.Background(), 3, Options{}); !errors.Is(err, ErrNotInstalled) {
			t.Fatalf("StartEnsemble = %v; want ErrNotInstalled", err)
		}
	})
	t.Run("java", func(t *testing.T) {
		t.Setenv("JAVA", filepath.Join(t.TempDir(), "no-such-java"))
		if _, err := Start(context.Background(), Options{}); !errors.Is(err, ErrNotInstalled) {
			t.Fatalf("Start = %v; want ErrNotInstalled", err)
		}
	})
}

func TestFourLetterWordNoServer(t *testing.T) {
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	if _, err := FourLetterWord(ctx, "127.0.0.1:"+strconv.Itoa(ports[0]), "ruok"); err == nil {
		t.Fatal("FourLetterWord to a closed port succeeded")
	}
}

// processGone reports whether pid no longer runs: it does not exist, or it
// is a zombie waiting for a reaper that is not us (PID 1 in a container).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

const helperEnv = "ZKSERVER_TEST_HELPER"

// TestHelperServerThenHang is not a test: TestParentDeathKillsServer runs
// the test binary again with helperEnv set; this helper starts a server,
// prints "PID DIR" and waits to be killed.
func TestHelperServerThenHang(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process only")
	}
	s, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	os.Stdout.WriteString("ZKSERVER " + strconv.Itoa(s.PID()) + " " + s.Dir() + "\n")
	time.Sleep(5 * time.Minute) // killed long before
	_ = s.Close()
}

// TestParentDeathKillsServer: when the program that started a server is
// SIGKILLed (no cleanup runs), the kernel kills the JVM (Pdeathsig).
func TestParentDeathKillsServer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only")
	}
	ctx := ctxT(t, 3*time.Minute)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperServerThenHang$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var dir string
	sc := bufio.NewScanner(out)
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if f := strings.Fields(line); len(f) == 3 && f[0] == "ZKSERVER" {
			pid, _ = strconv.Atoi(f[1])
			dir = f[2]
			break
		}
	}
	if pid == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper did not report a server:\n%s", strings.Join(lines, "\n"))
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if processGone(pid) {
		t.Fatalf("server %d not running before the helper was killed", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out) //nolint:errcheck // drain until the pipe closes
	_ = cmd.Wait()

	deadline := time.Now().Add(time.Minute)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			// Do not leave it behind: it is ours (our helper started it).
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("server %d survived its parent's death", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNettyClasspath: the Debian classpath also carries what the Netty
// connection factory needs (some Debian netty manifests omit their deps).
func TestNettyClasspath(t *testing.T) {
	s := StartT(t, Options{ExtraConfig: map[string]string{
		"serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
	}})
	conn := connect(t, s.Addr())
	if _, err := conn.Create("/netty", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create via Netty: %v", err)
	}
	if log, _ := os.ReadFile(s.LogFile()); !strings.Contains(string(log), "NettyServerCnxnFactory") {
		t.Errorf("server log does not mention NettyServerCnxnFactory")
	}
}

func TestSweepStale(t *testing.T) {
	tmp := t.TempDir()
	// A PID that is certainly gone: a child we started and reaped.
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	dead := c.Process.Pid
	old := time.Now().Add(-time.Hour)
	mk := func(name, owner string, mtime time.Time) string {
		d := filepath.Join(tmp, dirPrefix+name)
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return d
	}
	stale := mk("stale", strconv.Itoa(dead)+" "+strconv.Itoa(dead), old)
	live := mk("live", strconv.Itoa(os.Getppid())+" 0", old) // owner alive
	fresh := mk("fresh", strconv.Itoa(dead)+" 0", time.Now())
	unowned := mk("unowned", "", old)

	removed := sweepStaleIn(tmp)
	if len(removed) != 1 || removed[0] != stale {
		t.Errorf("removed %v, want only %s", removed, stale)
	}
	for _, d := range []string{live, fresh, unowned} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
