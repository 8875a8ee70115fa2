// Package interop runs lock contenders of other ZooKeeper lock libraries —
// Apache Curator 5 (Java) and kazoo (Python) — as separate processes, so that
// tests can put them on one lock path of one real ZooKeeper together with
// turnstile contenders and prove mutual exclusion with a shared witness file
// (see Witness for the protocol every contender follows).
//
// The peers are programs of this package, embedded in it: curator/Peer.java,
// compiled by BuildCurator against Debian's Curator jars, and kazoo/peer.py,
// run by /usr/bin/python3 with Debian's kazoo 2.8. Each peer runs Workers
// threads; each thread loops Iterations times: acquire, witness check, hold,
// witness release, release; the peer then prints
//
//	RESULT acquisitions=<n> violations=<v>
//
// and exits 0 (no violation), 1 (a violation), 2 (a usage or lock error) or
// 3 (its overall timeout passed).
//
// Which libraries can share a path:
//   - Curator and turnstile: mutex (lock-), read/write (__READ__, __WRIT__),
//     semaphore (locks/, leases/), leader election (LeaderLatch, latch-).
//   - kazoo and turnstile: the kazoo peer adds Curator's patterns to its
//     locks' extra_lock_patterns, so it sees turnstile's nodes; turnstile must
//     in turn recognise kazoo's (__lock__, __rlock__).
//   - Curator and kazoo: NOT compatible — Curator orders children by the text
//     after "lock-", which kazoo's names lack, so a Curator contender may be
//     granted while a kazoo one holds. Never put them on one path.
//   - Semaphores are three different layouts (Curator's PATH/locks and
//     PATH/leases, kazoo's PATH children plus PATH-__lock__); only the same
//     library's contenders share one.
//
// Every process is started by this package, signalled only by its PID,
// waited for, and killed by the kernel if the test binary dies (Linux
// PR_SET_PDEATHSIG). Output is captured to memory, never to the test's.
package interop

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed curator/Peer.java
var curatorSource []byte

//go:embed kazoo/peer.py
var kazooSource string

// Install commands named in errors, for the packages the peers need.
const (
	InstallCurator = "apt-get install -y libcurator-recipes-java"
	InstallKazoo   = "apt-get install -y python3-kazoo"
	InstallJDK     = "apt-get install -y openjdk-17-jdk-headless"
)

// ErrNotInstalled is wrapped by the errors that report a missing Java,
// javac, Curator jar, Python or kazoo; the message names the install
// command.
var ErrNotInstalled = errors.New("interop: a peer dependency is not installed")

// DefaultJarDir is where Debian puts the Curator, ZooKeeper, Guava and SLF4J
// jars. CURATOR_JAR_DIR overrides it.
const DefaultJarDir = "/usr/share/java"

// curatorJars are the jars Peer.java needs, by base name: name.jar or
// name-<version>.jar in the jar dir. Debian's jars also name their own
// dependencies in their manifests' Class-Path (jackson for the framework,
// netty and friends for zookeeper.jar), which the JVM follows; the Curator
// client uses ZooKeeper's NIO transport, so netty is not needed here.
var curatorJars = []string{
	"curator-recipes",
	"curator-framework",
	"curator-client",
	"zookeeper",
	"zookeeper-jute",
	"guava", // Debian's guava also holds failureaccess's classes
	"slf4j-api",
}

// optionalJars are added when present: slf4j-nop keeps ZooKeeper's and
// Curator's logging quiet; failureaccess is a separate jar off Debian.
var optionalJars = []string{"slf4j-nop", "failureaccess"}

func jarDir() string {
	if d := os.Getenv("CURATOR_JAR_DIR"); d != "" {
		return d
	}
	return DefaultJarDir
}

// findJar finds name.jar, or else the newest-looking name-<version>.jar.
func findJar(dir, name string) (string, bool) {
	p := filepath.Join(dir, name+".jar")
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return p, true
	}
	matches, _ := filepath.Glob(filepath.Join(dir, name+"-[0-9]*.jar"))
	if len(matches) == 0 {
		return "", false
	}
	return matches[len(matches)-1], true
}

// CuratorJars returns the jars of the Curator peer's classpath, or an error
// wrapping ErrNotInstalled that names the missing ones and the install
// command.
func CuratorJars() ([]string, error) {
	dir := jarDir()
	var jars, missing []string
	for _, name := range curatorJars {
		p, ok := findJar(dir, name)
		if !ok {
			missing = append(missing, name+".jar")
			continue
		}
		jars = append(jars, p)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: Curator peer: missing %s in %s (set CURATOR_JAR_DIR, or run: %s)",
			ErrNotInstalled, strings.Join(missing, ", "), dir, InstallCurator)
	}
	for _, name := range optionalJars {
		if p, ok := findJar(dir, name); ok {
			jars = append(jars, p)
		}
	}
	return jars, nil
}

// javaBinary finds java as internal/zkserver does: $JAVA, java on PATH,
// /usr/bin/java.
func javaBinary() (string, error) {
	if j := os.Getenv("JAVA"); j != "" {
		if p, err := exec.LookPath(j); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("%w: JAVA=%s is not an executable", ErrNotInstalled, j)
	}
	if p, err := exec.LookPath("java"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/java"); err == nil {
		return "/usr/bin/java", nil
	}
	return "", fmt.Errorf("%w: java not found (run: %s)", ErrNotInstalled, InstallJDK)
}

// javacBinary finds javac: $JAVAC, the javac next to the real java binary
// (so both are one JDK), javac on PATH.
func javacBinary() (string, error) {
	if j := os.Getenv("JAVAC"); j != "" {
		if p, err := exec.LookPath(j); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("%w: JAVAC=%s is not an executable", ErrNotInstalled, j)
	}
	if java, err := javaBinary(); err == nil {
		if real, err := filepath.EvalSymlinks(java); err == nil {
			p := filepath.Join(filepath.Dir(real), "javac")
			if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath("javac"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: javac (a JDK) not found; the Curator peer is compiled from source (run: %s)",
		ErrNotInstalled, InstallJDK)
}

// BuildCurator compiles the embedded curator/Peer.java into dir (which must
// exist; a test's t.TempDir() will do) and returns the classpath that runs
// it: dir's classes, then the Curator jars. Missing jars or javac give an
// error wrapping ErrNotInstalled that names the install command.
func BuildCurator(ctx context.Context, dir string) (classpath string, err error) {
	jars, err := CuratorJars()
	if err != nil {
		return "", err
	}
	javac, err := javacBinary()
	if err != nil {
		return "", err
	}
	src := filepath.Join(dir, "src", "Peer.java")
	classes := filepath.Join(dir, "classes")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		return "", err
	}
	if err := os.MkdirAll(classes, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(src, curatorSource, 0o644); err != nil {
		return "", err
	}
	jarPath := strings.Join(jars, string(os.PathListSeparator))
	// -Xlint:-path: Debian's manifests name a few jars that are not
	// installed (jline); javac would warn about each.
	cmd := exec.CommandContext(ctx, javac, "-nowarn", "-Xlint:-path", "-encoding", "UTF-8",
		"-d", classes, "-cp", jarPath, src)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("interop: javac Peer.java: %v\n%s", err, strings.TrimSpace(out.String()))
	}
	return classes + string(os.PathListSeparator) + jarPath, nil
}

// KazooPython is the interpreter the kazoo peer runs on: $KAZOO_PYTHON, else
// /usr/bin/python3 (Debian's python3-kazoo installs there; a python3 earlier
// on PATH, e.g. pyenv's, usually lacks kazoo).
func KazooPython() string {
	if p := os.Getenv("KAZOO_PYTHON"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// KazooVersion reports the kazoo version KazooPython imports, or an error
// wrapping ErrNotInstalled that names the install command.
func KazooVersion(ctx context.Context) (string, error) {
	py := KazooPython()
	cmd := exec.CommandContext(ctx, py, "-c",
		"import kazoo.client, kazoo.recipe.lock, kazoo.version; print(kazoo.version.__version__)")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: kazoo is not importable by %s (%v: %s); run: %s",
			ErrNotInstalled, py, err, lastLine(out.String()), InstallKazoo)
	}
	return strings.TrimSpace(out.String()), nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// PeerConfig is what a peer process does. Connect, Path and Recipe are
// required (except for a revoke).
type PeerConfig struct {
	Connect string // host:port[,host:port...]
	Path    string // the lock znode path
	// Recipe: "mutex"; "rw" (each acquisition a write with probability
	// WriteRatio, else a read); "read"; "write"; "semaphore" (Leases
	// leases); Curator also "semaphore-mutex" (InterProcessSemaphoreMutex)
	// and "latch" (a LeaderLatch candidate per iteration, participant id
	// curator-<pid>-<worker>, printing "LEADER <znode>" as each term
	// begins; its leaders follow the mutex witness protocol).
	Recipe     string
	Leases     int // semaphore leases; 0 means 1
	Iterations int // acquisitions per worker
	Workers    int // contender threads in the process; 0 means 1
	Hold       time.Duration
	Witness    string  // witness file path (absolute); "" = no witness checks
	WriteRatio float64 // rw only: the fraction of writes; 0 means readers only
	Seed       int64   // seeds each worker's read/write choice

	// Timeout bounds the peer's whole run (--timeout-s, whole seconds,
	// rounded up); after it the peer prints its RESULT and exits 3.
	// 0 means the peers' default, 120s.
	Timeout time.Duration
	// SessionTimeout is the peer's ZooKeeper session timeout; 0 = 15s.
	SessionTimeout time.Duration
	// HoldRevocable makes the peer acquire one revocable mutex on Path,
	// print "HELD <znode>" (see Peer.Held), wait until that node's data is
	// set to "__REVOKE__" (Curator's Revoker.attemptRevoke, RevokeCurator,
	// RevokeKazoo), then print "REVOKED", release and exit 0.
	HoldRevocable bool
	// ExtraArgs are appended to the peer's command line as they are (e.g.
	// kazoo's "--extra-patterns", "none").
	ExtraArgs []string

	// Duration, when positive, stops each worker from starting a cycle after
	// it (Iterations still bounds the cycles).
	Duration time.Duration
	// Paths, when positive, puts worker w on Path/<w mod Paths> (and its
	// witness on Witness-<w mod Paths>) instead of Path.
	Paths int
	// Bench makes the peer measure a window and print the lines of
	// bench.go; the window opens after Warmup.
	Bench  bool
	Warmup time.Duration
	// JVMFlags are appended to the Curator peer's JVM flags (the last of two
	// equal flags wins): a benchmark asks for the JIT a long-running client
	// has, the tests for a fast start.
	JVMFlags []string
}

func (c PeerConfig) args() []string {
	a := []string{"--connect", c.Connect, "--path", c.Path}
	if c.HoldRevocable {
		a = append(a, "--hold-revocable")
	} else {
		leases, workers := c.Leases, c.Workers
		if leases <= 0 {
			leases = 1
		}
		if workers <= 0 {
			workers = 1
		}
		a = append(a,
			"--recipe", c.Recipe,
			"--leases", strconv.Itoa(leases),
			"--write-ratio", strconv.FormatFloat(c.WriteRatio, 'f', -1, 64),
			"--iterations", strconv.Itoa(c.Iterations),
			"--hold-ms", strconv.FormatInt(c.Hold.Milliseconds(), 10),
			"--workers", strconv.Itoa(workers),
			"--seed", strconv.FormatInt(c.Seed, 10),
		)
	}
	if c.Witness != "" {
		a = append(a, "--witness", c.Witness)
	}
	if c.Timeout > 0 {
		a = append(a, "--timeout-s", strconv.FormatInt(int64(math.Ceil(c.Timeout.Seconds())), 10))
	}
	if c.SessionTimeout > 0 {
		a = append(a, "--session-ms", strconv.FormatInt(c.SessionTimeout.Milliseconds(), 10))
	}
	if c.Duration > 0 {
		a = append(a, "--duration-ms", strconv.FormatInt(c.Duration.Milliseconds(), 10))
	}
	if c.Paths > 0 {
		a = append(a, "--paths", strconv.Itoa(c.Paths))
	}
	if c.Bench {
		a = append(a, "--bench", "--warmup-ms", strconv.FormatInt(c.Warmup.Milliseconds(), 10))
	}
	return append(a, c.ExtraArgs...)
}

func (c PeerConfig) check() error {
	if c.Connect == "" || c.Path == "" {
		return errors.New("interop: PeerConfig needs Connect and Path")
	}
	if !c.HoldRevocable && c.Recipe == "" {
		return errors.New("interop: PeerConfig needs a Recipe")
	}
	return nil
}

// jvmFlags make a short-lived client JVM start fast and stay small, so that
// several peers and a ZooKeeper server fit on a small machine.
var jvmFlags = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xms16m", "-Xmx256m", "-Xss512k"}

// StartCurator starts a Curator peer from the classpath BuildCurator
// returned. ctx bounds the peer's life: when it ends, the process is killed.
func StartCurator(ctx context.Context, classpath string, cfg PeerConfig) (*Peer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	java, err := javaBinary()
	if err != nil {
		return nil, err
	}
	flags := append(append([]string{}, jvmFlags...), cfg.JVMFlags...)
	args := append(append(flags, "-cp", classpath, "Peer"), cfg.args()...)
	return start(ctx, "curator", java, args, nil, false)
}

// StartKazoo starts a kazoo peer on KazooPython. ctx bounds the peer's
// life: when it ends, the process is killed.
func StartKazoo(ctx context.Context, cfg PeerConfig) (*Peer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	args := append([]string{"-c", kazooSource}, cfg.args()...)
	return start(ctx, "kazoo", KazooPython(), args, nil, false)
}

// RevokeCurator asks, with Curator's Revoker.attemptRevoke, the holder of
// the lock node node to give it up, and returns once the request is written.
func RevokeCurator(ctx context.Context, classpath, connect, node string) error {
	java, err := javaBinary()
	if err != nil {
		return err
	}
	args := append(append([]string{}, jvmFlags...), "-cp", classpath, "Peer", "--connect", connect, "--revoke", node)
	return runToEnd(ctx, "curator", java, args)
}

// RevokeKazoo writes Curator's revocation request ("__REVOKE__" as the
// node's data) to node with kazoo.
func RevokeKazoo(ctx context.Context, connect, node string) error {
	return runToEnd(ctx, "kazoo", KazooPython(), []string{"-c", kazooSource, "--connect", connect, "--revoke", node})
}

func runToEnd(ctx context.Context, kind, bin string, args []string) error {
	p, err := start(ctx, kind, bin, args, nil, false)
	if err != nil {
		return err
	}
	<-p.done
	if p.err != nil {
		return fmt.Errorf("interop: %s revoke: %v\n%s", kind, p.err, strings.TrimSpace(p.out.String()))
	}
	return nil
}

// Result is what a finished peer reported.
type Result struct {
	Acquisitions int    // locks (leases) granted to the peer's workers
	Violations   int    // witness checks that failed
	ExitCode     int    // -1 when killed by a signal
	Output       string // stdout and stderr, interleaved
}

// Peer is one started peer process.
type Peer struct {
	kind  string
	pid   int
	cmd   *exec.Cmd
	out   *output
	stdin io.WriteCloser // StartProgram's peers only
	done  chan struct{}  // closed once the process has exited and been reaped
	err   error          // cmd.Wait's error; valid after done is closed
}

// StartProgram starts any program as a peer of the given kind (a name for
// messages), with the care StartCurator and StartKazoo take: killed when ctx
// ends or when this process dies, output captured, waited for. env entries
// (KEY=value) are added to this process's environment. Its stdin is a pipe
// that Send writes to. For programs that speak the peers' protocols, such as
// the stress harness's plain Go programs, or servers a test starts.
func StartProgram(ctx context.Context, kind, bin string, args, env []string) (*Peer, error) {
	return start(ctx, kind, bin, args, env, true)
}

// start starts bin from a goroutine locked to its OS thread, which then
// waits for the process. On Linux the child gets PR_SET_PDEATHSIG=SIGKILL,
// which the kernel sends when the forking *thread* exits; the locked
// goroutine keeps that thread alive exactly as long as the child, so the
// signal only ever comes when the test binary itself dies.
func start(ctx context.Context, kind, bin string, args, env []string, withStdin bool) (*Peer, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(append(os.Environ(), "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"), env...)
	p := &Peer{kind: kind, cmd: cmd, out: newOutput(), done: make(chan struct{})}
	cmd.Stdout = &stream{o: p.out, stdout: true}
	cmd.Stderr = &stream{o: p.out}
	if withStdin {
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, fmt.Errorf("interop: %s peer stdin: %w", kind, err)
		}
		p.stdin = in
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with this goroutine.
		cmd.SysProcAttr = sysProcAttr()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		p.err = cmd.Wait()
		p.out.close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("interop: start %s peer (%s): %w", kind, bin, err)
	}
	return p, nil
}

// String names the peer for test logs: "curator[pid 1234]".
func (p *Peer) String() string { return fmt.Sprintf("%s[pid %d]", p.kind, p.pid) }

// PID is the peer's process id.
func (p *Peer) PID() int { return p.pid }

// Done is closed once the peer has exited.
func (p *Peer) Done() <-chan struct{} { return p.done }

// Output is what the peer printed so far (stdout and stderr).
func (p *Peer) Output() string { return p.out.String() }

// Wait waits for the peer to exit and returns its RESULT. The error is
// non-nil when the peer did not exit 0 (a violation exits 1: the Result
// still says how many) or printed no RESULT line; it includes the output.
func (p *Peer) Wait() (Result, error) {
	<-p.done
	r := Result{Output: p.out.String(), ExitCode: p.cmd.ProcessState.ExitCode()}
	found := parseResult(r.Output, &r)
	switch {
	case p.err != nil:
		return r, fmt.Errorf("interop: %s: %v\n%s", p, p.err, indent(r.Output))
	case !found:
		return r, fmt.Errorf("interop: %s printed no RESULT line\n%s", p, indent(r.Output))
	}
	return r, nil
}

// Kill kills the peer (by its PID, SIGKILL) unless it has already exited,
// and waits until it is reaped. Safe to call more than once and after Wait.
func (p *Peer) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	// os.Process holds a pidfd on Linux: a recycled PID is never hit.
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Signal sends sig to the peer (by its PID; os.Process holds a pidfd on
// Linux, so a recycled PID is never hit) unless it has exited.
func (p *Peer) Signal(sig os.Signal) error {
	select {
	case <-p.done:
		return fmt.Errorf("interop: %s has exited", p)
	default:
	}
	return p.cmd.Process.Signal(sig)
}

// Send writes line and a newline to the stdin of a peer StartProgram started.
func (p *Peer) Send(line string) error {
	if p.stdin == nil {
		return fmt.Errorf("interop: %s has no stdin to send to", p)
	}
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// Held waits until a HoldRevocable peer holds its lock and returns the lock
// node's full path, as printed in its "HELD <znode>" line.
func (p *Peer) Held(ctx context.Context) (string, error) {
	return p.WaitLine(ctx, "HELD ")
}

// WaitLine waits until the peer prints a stdout line starting with prefix
// and returns the rest of that line. It fails when ctx ends or the peer
// exits first.
func (p *Peer) WaitLine(ctx context.Context, prefix string) (string, error) {
	for {
		rest, ok, changed := p.out.find(prefix)
		if ok {
			return rest, nil
		}
		if changed == nil {
			return "", fmt.Errorf("interop: %s exited (%v) without printing %q\n%s",
				p, p.err, strings.TrimSpace(prefix), indent(p.out.String()))
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", fmt.Errorf("interop: %s: waiting for %q: %w", p, strings.TrimSpace(prefix), ctx.Err())
		}
	}
}

var resultRE = regexp.MustCompile(`(?m)^RESULT acquisitions=(\d+) violations=(\d+)\s*$`)

func parseResult(out string, r *Result) bool {
	m := resultRE.FindAllStringSubmatch(out, -1)
	if m == nil {
		return false
	}
	last := m[len(m)-1]
	r.Acquisitions, _ = strconv.Atoi(last[1])
	r.Violations, _ = strconv.Atoi(last[2])
	return true
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// output collects a peer's stdout and stderr, and its complete stdout lines
// for WaitLine. changed is closed and replaced whenever a stdout line
// completes, and set to nil once the process has exited.
type output struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
	lines   []string
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

type stream struct {
	o      *output
	stdout bool
}

func (s *stream) Write(b []byte) (int, error) {
	o := s.o
	o.mu.Lock()
	defer o.mu.Unlock()
	o.all.Write(b)
	if !s.stdout {
		return len(b), nil
	}
	o.partial = append(o.partial, b...)
	added := false
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.lines = append(o.lines, strings.TrimRight(string(o.partial[:i]), "\r"))
		o.partial = o.partial[i+1:]
		added = true
	}
	if added && o.changed != nil {
		close(o.changed)
		o.changed = make(chan struct{})
	}
	return len(b), nil
}

func (o *output) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.partial) > 0 {
		o.lines = append(o.lines, string(o.partial))
		o.partial = nil
	}
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
}

// find returns the rest of the first stdout line starting with prefix; if
// there is none yet, a channel closed at the next line (nil once the
// process has exited).
func (o *output) find(prefix string) (rest string, ok bool, changed <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range o.lines {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimSpace(l[len(prefix):]), true, nil
		}
	}
	if o.changed == nil {
		return "", false, nil
	}
	return "", false, o.changed
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.all.String()
}
