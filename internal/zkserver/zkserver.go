// Package zkserver starts and stops real Apache ZooKeeper servers for tests,
// examples and the stress harness: a standalone server, or an ensemble of
// servers on loopback, each on free 127.0.0.1 ports in its own temp dir.
//
// It runs the Java server from Debian's `zookeeper` package
// (/usr/share/java/zookeeper.jar, main class
// org.apache.zookeeper.server.quorum.QuorumPeerMain). Environment overrides:
//
//	JAVA          the java binary (default: java on PATH, then /usr/bin/java)
//	ZK_JAR        the ZooKeeper server jar (default /usr/share/java/zookeeper.jar)
//	ZK_CLASSPATH  with ZK_JAR: the rest of the classpath, e.g. "/opt/zookeeper/lib/*"
//
// Every process is started by this package, tracked by PID, signalled by
// PID and waited for; nothing else is ever signalled. A server's stdout,
// stderr and log go to LogFile inside its temp dir, never to test output.
//
// If the program that started a server dies, the kernel kills the server
// too (Linux PR_SET_PDEATHSIG, see process.go).
package zkserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotInstalled is returned (wrapped) by Start, StartEnsemble and Restart
// when java or the ZooKeeper jar cannot be found.
var ErrNotInstalled = errors.New("zkserver: ZooKeeper or Java is not installed (run: apt-get install -y zookeeper, or set JAVA, ZK_JAR and ZK_CLASSPATH)")

// DefaultJar is where Debian's zookeeper package puts the server jar.
const DefaultJar = "/usr/share/java/zookeeper.jar"

// Options tune a server. The zero value is ready to use.
type Options struct {
	TickTime          time.Duration // default 250ms
	MinSessionTimeout time.Duration // default 2*TickTime
	MaxSessionTimeout time.Duration // default 60s
	StartTimeout      time.Duration // default 60s; bounds startup and readiness

	// ForceSync makes the server fsync its transaction log before it
	// acknowledges a write, as a production server does. The default
	// (false) sets forceSync=no: faster tests, same protocol.
	ForceSync bool
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL.
	// Default 10s.
	StopGrace time.Duration
	// ExtraConfig adds or overrides zoo.cfg lines (key=value).
	ExtraConfig map[string]string
	// JVMFlags are appended to the default JVM flags.
	JVMFlags []string
	// TLS, if set, makes the server serve TLS on a secure client port
	// (SecureAddr) beside its plain one (see TLS).
	TLS *TLS
	// LeaderServesNo sets leaderServes=no: an ensemble's leader takes no
	// client connections (it closes each at once) and its four-letter
	// words say it is not serving; the readiness checks and Leader take
	// such a member for the leader when every other running member is a
	// follower.
	LeaderServesNo bool
}

func (o Options) withDefaults() Options {
	if o.TickTime <= 0 {
		o.TickTime = 250 * time.Millisecond
	}
	if o.MinSessionTimeout <= 0 {
		o.MinSessionTimeout = 2 * o.TickTime
	}
	if o.MaxSessionTimeout <= 0 {
		o.MaxSessionTimeout = 60 * time.Second
	}
	if o.MaxSessionTimeout < o.MinSessionTimeout {
		o.MaxSessionTimeout = o.MinSessionTimeout
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 10 * time.Second
	}
	return o
}

// Server is one ZooKeeper server process (standalone or ensemble member)
// with its temp dir. Its methods are safe for concurrent use.
type Server struct {
	opts      Options
	inst      install
	dir       string
	dataDir   string
	cfgPath   string
	logPath   string
	id        int    // myid; 0 when standalone
	peers     []peer // all members when in an ensemble
	clientPrt int
	securePrt int // 0 without Options.TLS
	// host is the address the server listens on, 127.0.0.1 unless it
	// lives on a host of its own (see StartEnsembleOn).
	host string
	// command makes the command that runs the JVM (exec.Command, or one
	// that runs it inside a network namespace); dial reaches the client
	// port for the four-letter words of the readiness checks.
	command func(name string, args ...string) *exec.Cmd
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex // guards proc and closed; held across start/stop
	proc   *process
	closed bool
}

type peer struct {
	id                                  int
	host                                string // "" for 127.0.0.1
	clientPort, quorumPort, electionPrt int
	securePort                          int // 0 without Options.TLS
}

// Start starts a standalone server on a free 127.0.0.1 port in a fresh temp
// dir and waits until it serves (ruok → imok and srvr reports a mode).
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	inst, err := findInstall()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		ports, err := freePorts(opts.portsPerServer())
		if err != nil {
			return nil, err
		}
		p := peer{clientPort: ports[0]}
		if opts.TLS != nil {
			p.securePort = ports[1]
		}
		s, err := newServer(opts, inst, 0, []peer{p})
		if err != nil {
			return nil, err
		}
		if err := s.start(ctx); err != nil {
			lastErr = err
			bindErr := s.logHasBindError()
			_ = s.Close()
			if bindErr && ctx.Err() == nil {
				continue // somebody took the port between pick and bind
			}
			return nil, err
		}
		return s, nil
	}
	return nil, lastErr
}

func newServer(opts Options, inst install, id int, peers []peer) (*Server, error) {
	sweepStale()
	dir, err := os.MkdirTemp("", dirPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("zkserver: temp dir: %w", err)
	}
	s := &Server{
		opts:    opts,
		inst:    inst,
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		cfgPath: filepath.Join(dir, "zoo.cfg"),
		logPath: filepath.Join(dir, "zookeeper.log"),
		id:      id,
		host:    "127.0.0.1",
		command: exec.Command,
		dial:    (&net.Dialer{}).DialContext,
	}
	if id == 0 {
		s.clientPrt, s.securePrt = peers[0].clientPort, peers[0].securePort
	} else {
		s.peers = peers
		for _, p := range peers {
			if p.id == id {
				s.clientPrt, s.securePrt = p.clientPort, p.securePort
				if p.host != "" {
					s.host = p.host
				}
			}
		}
	}
	if err := s.writeConfig(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func ticks(d, tick time.Duration, minimum int) int {
	n := int((d + tick - 1) / tick)
	if n < minimum {
		n = minimum
	}
	return n
}

func (s *Server) writeConfig() error {
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return fmt.Errorf("zkserver: data dir: %w", err)
	}
	o := s.opts
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	kv := [][2]string{
		{"tickTime", ms(o.TickTime)},
		{"initLimit", strconv.Itoa(ticks(20*time.Second, o.TickTime, 10))},
		{"syncLimit", strconv.Itoa(ticks(5*time.Second, o.TickTime, 5))},
		{"dataDir", s.dataDir},
		{"clientPort", strconv.Itoa(s.clientPrt)},
		{"clientPortAddress", s.host},
		{"minSessionTimeout", ms(o.MinSessionTimeout)},
		{"maxSessionTimeout", ms(o.MaxSessionTimeout)},
		{"maxClientCnxns", "0"},
		{"4lw.commands.whitelist", "*"},
		{"admin.enableServer", "false"},
		{"autopurge.purgeInterval", "0"},
		{"reconfigEnabled", "false"},
		{"standaloneEnabled", "true"},
	}
	if o.LeaderServesNo {
		kv = append(kv, [2]string{"leaderServes", "no"})
	}
	if o.ForceSync {
		kv = append(kv, [2]string{"forceSync", "yes"})
	} else {
		kv = append(kv, [2]string{"forceSync", "no"})
	}
	if o.TLS != nil {
		kv = append(kv, o.TLS.config(s.securePrt)...)
	}
	for _, p := range s.peers {
		host := p.host
		if host == "" {
			host = "127.0.0.1"
		}
		kv = append(kv, [2]string{"server." + strconv.Itoa(p.id),
			fmt.Sprintf("%s:%d:%d", host, p.quorumPort, p.electionPrt)})
	}
	for k, v := range o.ExtraConfig {
		replaced := false
		for i := range kv {
			if kv[i][0] == k {
				kv[i][1], replaced = v, true
			}
		}
		if !replaced {
			kv = append(kv, [2]string{k, v})
		}
	}
	var b strings.Builder
	b.WriteString("# written by github.com/turnstile-go/turnstile/internal/zkserver\n")
	for _, e := range kv {
		fmt.Fprintf(&b, "%s=%s\n", e[0], e[1])
	}
	if err := os.WriteFile(s.cfgPath, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("zkserver: write config: %w", err)
	}
	if s.id != 0 {
		if err := os.WriteFile(filepath.Join(s.dataDir, "myid"), []byte(strconv.Itoa(s.id)+"\n"), 0o644); err != nil {
			return fmt.Errorf("zkserver: write myid: %w", err)
		}
	}
	return nil
}

func (s *Server) jvmArgs() []string {
	args := []string{
		"-Xmx256m", "-Xms16m", "-Xss512k",
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-XX:+ExitOnOutOfMemoryError",
		"-Djava.awt.headless=true",
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.4lw.commands.whitelist=*",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dzookeeper.snapshot.trust.empty=true",
		"-Dzookeeper.cnxTimeout=2000",
		"-Dzookeeper.fastleader.maxNotificationInterval=2000",
		"-Dzookeeper.log.dir=" + s.dir,
		"-Dzookeeper.log.file=zookeeper.log",
		// slf4j-simple (Debian classpath) writes to stderr, i.e. LogFile.
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS",
		"-Dorg.slf4j.simpleLogger.showShortLogName=true",
	}
	args = append(args, s.opts.JVMFlags...)
	return append(args, "-cp", s.inst.classpath,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", s.cfgPath)
}

// start launches the process and waits for readiness. Caller must not hold
// s.mu (start takes it).
func (s *Server) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("zkserver: server is closed")
	}
	if s.proc != nil && s.proc.alive() {
		return errors.New("zkserver: server is already running")
	}
	s.proc = nil
	if _, err := os.Stat(s.inst.java); err != nil {
		return fmt.Errorf("%w: java %s: %v", ErrNotInstalled, s.inst.java, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()

	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("zkserver: open log: %w", err)
	}
	s.writeOwner(0)
	fmt.Fprintf(logf, "=== zkserver: starting %s at %s ===\n", s.describe(), time.Now().Format(time.RFC3339Nano))
	cmd := s.command(s.inst.java, s.jvmArgs()...)
	cmd.Dir = s.dir
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = append(os.Environ(), "ZOO_LOG_DIR="+s.dir)
	p, err := startProcess(cmd)
	logf.Close() // the child has its own copy
	if err != nil {
		return fmt.Errorf("zkserver: start java: %w", err)
	}
	s.proc = p
	s.writeOwner(p.pid)

	if err := s.waitReady(ctx, p); err != nil {
		s.stopLocked(true)
		if errors.Is(err, context.Canceled) {
			return err // the caller gave up; the log would only be noise
		}
		return fmt.Errorf("%w\n--- %s (tail) ---\n%s", err, s.logPath, s.LogTail(40))
	}
	return nil
}

func (s *Server) describe() string {
	d := fmt.Sprintf("standalone server on %s:%d", s.host, s.clientPrt)
	if s.id != 0 {
		d = fmt.Sprintf("ensemble member %d on %s:%d", s.id, s.host, s.clientPrt)
	}
	if s.securePrt != 0 {
		d += fmt.Sprintf(" (TLS on %d)", s.securePrt)
	}
	return d
}

// waitReady polls ruok and srvr until the server serves with an acceptable
// mode, the process dies, or ctx ends.
func (s *Server) waitReady(ctx context.Context, p *process) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		if err := s.readyOnce(ctx); err == nil {
			return nil
		} else {
			last = err
		}
		select {
		case <-p.done:
			return fmt.Errorf("zkserver: %s exited during startup: %v", s.describe(), p.exitErr())
		case <-ctx.Done():
			return fmt.Errorf("zkserver: %s not ready: %w (last check: %v)", s.describe(), ctx.Err(), last)
		case <-t.C:
		}
	}
}

func (s *Server) readyOnce(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	r, err := s.FourLetterWord(cctx, "ruok")
	if err != nil {
		return err
	}
	if strings.TrimSpace(r) != "imok" {
		return fmt.Errorf("ruok answered %q", r)
	}
	mode, err := s.role(cctx)
	if err != nil {
		return err
	}
	if s.id == 0 {
		if mode != "standalone" {
			return fmt.Errorf("mode %q, want standalone", mode)
		}
	} else if mode != "leader" && mode != "follower" {
		return fmt.Errorf("mode %q, want leader or follower", mode)
	}
	if s.securePrt != 0 {
		return s.secureListening(ctx)
	}
	return nil
}

// Addr is the client address "127.0.0.1:PORT" (its own host's address for
// a member of StartEnsembleOn); it stays the same across Stop and Restart.
func (s *Server) Addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.clientPrt)) }

// Port is the client port.
func (s *Server) Port() int { return s.clientPrt }

// ID is the server's myid in an ensemble (1..n); 0 for a standalone server.
func (s *Server) ID() int { return s.id }

// Dir is the server's temp dir (config, data and log). Close removes it.
func (s *Server) Dir() string { return s.dir }

// LogFile is the file that receives the server's stdout, stderr and log.
func (s *Server) LogFile() string { return s.logPath }

// PID is the server process id, or 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || !s.proc.alive() {
		return 0
	}
	return s.proc.pid
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool { return s.PID() != 0 }

// Stop sends SIGTERM, waits for the process to exit (SIGKILL after
// Options.StopGrace) and keeps the data dir so Restart works. Stopping a
// server that is not running is a no-op.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked(false)
	return nil
}

// Kill sends SIGKILL and waits for the process to exit. The data dir is
// kept, so Restart works.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked(true)
	return nil
}

func (s *Server) stopLocked(kill bool) {
	p := s.proc
	if p == nil {
		return
	}
	if kill {
		p.signal(syscall.SIGKILL)
	} else {
		p.signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(s.opts.StopGrace):
			p.signal(syscall.SIGKILL)
		}
	}
	<-p.done // reaped: no zombie
	s.proc = nil
}

// Restart starts the server again with the same ports, config and data dir
// and waits until it is ready. If it is still running it is stopped first.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start(ctx)
}

// Close stops the server if it is running (SIGKILL: the data is thrown away
// anyway) and removes its temp dir. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.stopLocked(true)
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("zkserver: remove %s: %w", s.dir, err)
	}
	return nil
}

// LogTail returns up to the last n lines of the server's log file.
func (s *Server) LogTail(n int) string { return tailFile(s.logPath, n) }

func (s *Server) logHasBindError() bool {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return false
	}
	return strings.Contains(string(b), "Address already in use") || strings.Contains(string(b), "BindException")
}

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const max = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(fi.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FourLetterWord sends a four-letter-word command ("ruok", "srvr", "mntr",
// "cons", ...) to the server and returns its answer.
func (s *Server) FourLetterWord(ctx context.Context, cmd string) (string, error) {
	return fourLetterWord(ctx, s.dial, s.Addr(), cmd)
}

// Mode is the server's mode from srvr: "standalone", "leader" or
// "follower" (or "observer").
func (s *Server) Mode(ctx context.Context) (string, error) {
	return srvrField(ctx, s.dial, s.Addr(), "Mode")
}

// notServing is what a server's srvr says while it takes no clients: a
// member syncing with its leader, or a leader under leaderServes=no.
const notServing = "not currently serving requests"

// role is the server's Mode, or, under Options.LeaderServesNo, "leader"
// when srvr says the server is not serving: the caller checks that every
// other member is a follower (Ensemble.readyOnce), as a member syncing
// with its leader says the same.
func (s *Server) role(ctx context.Context) (string, error) {
	mode, err := s.Mode(ctx)
	if err != nil && s.opts.LeaderServesNo && strings.Contains(err.Error(), notServing) {
		return "leader", nil
	}
	return mode, err
}

// Version is the server's version from srvr's "Zookeeper version:" line,
// e.g. "3.8.0".
func (s *Server) Version(ctx context.Context) (string, error) {
	return version(ctx, s.dial, s.Addr())
}

// FourLetterWord sends a four-letter-word command to the ZooKeeper server at
// addr ("host:port") and returns the full answer. Without a deadline in ctx
// it gives up after 5s.
func FourLetterWord(ctx context.Context, addr, cmd string) (string, error) {
	return fourLetterWord(ctx, (&net.Dialer{}).DialContext, addr, cmd)
}

func fourLetterWord(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr, cmd string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return string(b), fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	return string(b), nil
}

func srvrField(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr, key string) (string, error) {
	out, err := fourLetterWord(ctx, dial, addr, "srvr")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("zkserver: srvr %s: no %q in %q", addr, key, strings.TrimSpace(out))
}

// Mode asks the server at addr for its mode (srvr "Mode:").
func Mode(ctx context.Context, addr string) (string, error) {
	return srvrField(ctx, (&net.Dialer{}).DialContext, addr, "Mode")
}

// Version asks the server at addr for its version (srvr "Zookeeper
// version:", up to the first comma, without an unexpanded build
// placeholder), e.g. "3.8.0".
func Version(ctx context.Context, addr string) (string, error) {
	return version(ctx, (&net.Dialer{}).DialContext, addr)
}

func version(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string) (string, error) {
	v, err := srvrField(ctx, dial, addr, "Zookeeper version")
	if err != nil {
		return "", err
	}
	v, _, _ = strings.Cut(v, ",")
	// Debian's build leaves the git placeholder in: "3.8.0-${mvngit.commit.id}".
	v, _, _ = strings.Cut(v, "-${")
	return strings.TrimSpace(v), nil
}

// freePorts returns n distinct free 127.0.0.1 ports: it listens on
// 127.0.0.1:0 n times, keeping all listeners open until every port is
// picked, then closes them.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zkserver: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
