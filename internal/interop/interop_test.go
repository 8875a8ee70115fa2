//go:build unix

package interop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// The package's tests share one ZooKeeper and one compiled Curator peer,
// both made on first use (the Witness tests need neither) and removed
// after the last test.
var shared struct {
	mu        sync.Mutex
	srv       *zkserver.Server
	srvErr    error
	buildDir  string
	classpath string
	buildErr  error
}

type run struct{ m *testing.M }

func (r run) Run() int {
	code := r.m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv != nil {
		if err := shared.srv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close ZooKeeper:", err)
		}
	}
	if shared.buildDir != "" {
		os.RemoveAll(shared.buildDir)
	}
	return code
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(run{m})
}

// zookeeper returns the shared server's address, starting it on first use.
func zookeeper(t *testing.T) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil && shared.srvErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		shared.srv, shared.srvErr = zkserver.Start(ctx, zkserver.Options{})
		cancel()
	}
	if shared.srvErr != nil {
		t.Fatalf("start ZooKeeper (apt-get install -y zookeeper): %v", shared.srvErr)
	}
	return shared.srv.Addr()
}

// curator returns the Curator peer's classpath, compiling it on first use.
func curator(t *testing.T) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.classpath == "" && shared.buildErr == nil {
		sweepStaleBuilds()
		shared.buildDir, shared.buildErr = os.MkdirTemp("", fmt.Sprintf("%s%d-", buildPrefix, os.Getpid()))
		if shared.buildErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			shared.classpath, shared.buildErr = interop.BuildCurator(ctx, shared.buildDir)
			cancel()
		}
	}
	if shared.buildErr != nil {
		t.Fatalf("build the Curator peer: %v", shared.buildErr)
	}
	return shared.classpath
}

// buildPrefix names the Curator build dirs: buildPrefix<pid>-<random>.
const buildPrefix = "turnstile-interop-curator-"

// sweepStaleBuilds removes the build dirs of test binaries that died
// before their cleanup ran (killed, timed out). The pid probe sends no
// signal.
func sweepStaleBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), buildPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), buildPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

var kazooOnce = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return interop.KazooVersion(ctx)
})

// kazoo fails the test, naming the install command, when kazoo is missing.
func kazoo(t *testing.T) {
	t.Helper()
	if _, err := kazooOnce(); err != nil {
		t.Fatal(err)
	}
}

// lockPath is a lock path of the test's own.
func lockPath(t *testing.T) string {
	return "/interop/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) +
		fmt.Sprintf("-%d", time.Now().UnixNano())
}

// testCtx bounds a test's peers; they are killed when the test ends.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// peerTimeout bounds every peer's own run, well inside testCtx.
const peerTimeout = 60 * time.Second

// waitAll waits for every peer and fails the test on any error (which
// carries the peer's output).
func waitAll(t *testing.T, peers ...*interop.Peer) []interop.Result {
	t.Helper()
	results := make([]interop.Result, len(peers))
	for i, p := range peers {
		r, err := p.Wait()
		results[i] = r
		if err != nil {
			t.Errorf("%v", err)
		}
	}
	return results
}

// checkAll demands zero violations and every acquisition made.
func checkAll(t *testing.T, peers []*interop.Peer, results []interop.Result, want int) {
	t.Helper()
	for i, r := range results {
		if r.Violations != 0 || r.Acquisitions != want {
			t.Errorf("%s: %d acquisitions (want %d), %d violation(s) (want 0); output:\n%s",
				peers[i], r.Acquisitions, want, r.Violations, r.Output)
		}
	}
}

type starter func(ctx context.Context, cfg interop.PeerConfig) (*interop.Peer, error)

func curatorStarter(t *testing.T) starter {
	cp := curator(t)
	return func(ctx context.Context, cfg interop.PeerConfig) (*interop.Peer, error) {
		return interop.StartCurator(ctx, cp, cfg)
	}
}

func kazooStarter(t *testing.T) starter {
	kazoo(t)
	return interop.StartKazoo
}

// contend runs n peers of one library with cfg (Seed varied per peer) on
// one lock path and one witness, and checks the outcome.
func contend(t *testing.T, start starter, n int, cfg interop.PeerConfig) {
	t.Helper()
	ctx := testCtx(t)
	cfg.Connect = zookeeper(t)
	cfg.Path = lockPath(t)
	cfg.Witness = filepath.Join(t.TempDir(), "witness")
	cfg.Timeout = peerTimeout
	peers := startPeers(t, ctx, start, n, cfg)
	results := waitAll(t, peers...)
	checkAll(t, peers, results, cfg.Iterations*cfg.Workers)
	left, _ := filepath.Glob(cfg.Witness + "*")
	if len(left) > 0 {
		t.Errorf("witness files left behind: %v", left)
	}
}

// startPeers starts n peers with cfg, each with its own seed; they are
// killed when the test ends.
func startPeers(t *testing.T, ctx context.Context, start starter, n int, cfg interop.PeerConfig) []*interop.Peer {
	t.Helper()
	var peers []*interop.Peer
	for i := range n {
		c := cfg
		c.Seed = int64(i + 1)
		p, err := start(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		peers = append(peers, p)
	}
	return peers
}

func TestCuratorMutex(t *testing.T) {
	contend(t, curatorStarter(t), 2, interop.PeerConfig{
		Recipe: "mutex", Workers: 2, Iterations: 30, Hold: 2 * time.Millisecond,
	})
}

func TestCuratorSemaphoreMutex(t *testing.T) {
	contend(t, curatorStarter(t), 2, interop.PeerConfig{
		Recipe: "semaphore-mutex", Workers: 2, Iterations: 20, Hold: 2 * time.Millisecond,
	})
}

func TestCuratorReadWrite(t *testing.T) {
	contend(t, curatorStarter(t), 2, interop.PeerConfig{
		Recipe: "rw", WriteRatio: 0.3, Workers: 2, Iterations: 30, Hold: 2 * time.Millisecond,
	})
}

func TestCuratorSemaphore(t *testing.T) {
	contend(t, curatorStarter(t), 2, interop.PeerConfig{
		Recipe: "semaphore", Leases: 2, Workers: 2, Iterations: 30, Hold: 2 * time.Millisecond,
	})
}

func TestKazooMutex(t *testing.T) {
	contend(t, kazooStarter(t), 2, interop.PeerConfig{
		Recipe: "mutex", Workers: 2, Iterations: 30, Hold: 2 * time.Millisecond,
	})
}

// TestKazooReadWrite mixes readers and writers, which kazoo 2.8's own
// ReadLock deadlocks on (python-zk/kazoo#649); the peer uses its fixed
// read lock there.
func TestKazooReadWrite(t *testing.T) {
	contend(t, kazooStarter(t), 2, interop.PeerConfig{
		Recipe: "rw", WriteRatio: 0.3, Workers: 2, Iterations: 30, Hold: 2 * time.Millisecond,
	})
}

func TestKazooSemaphore(t *testing.T) {
	contend(t, kazooStarter(t), 2, interop.PeerConfig{
		Recipe: "semaphore", Leases: 2, Workers: 2, Iterations: 30, Hold: 2 * time.Millisecond,
	})
}

// TestWitnessCatchesOverlap proves the peers' witness is not vacuous: a
// holder on one lock path keeps the witness file, and a peer on ANOTHER
// path (so nothing excludes it) must report every acquisition as a
// violation and exit non-zero.
func TestWitnessCatchesOverlap(t *testing.T) {
	kazoo(t)
	ctx := testCtx(t)
	addr := zookeeper(t)
	witness := filepath.Join(t.TempDir(), "witness")
	holder, err := interop.StartKazoo(ctx, interop.PeerConfig{
		Connect: addr, Path: lockPath(t) + "-a", Witness: witness, HoldRevocable: true, Timeout: peerTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(holder.Kill)
	node, err := holder.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}

	other, err := interop.StartKazoo(ctx, interop.PeerConfig{
		Connect: addr, Path: lockPath(t) + "-b", Witness: witness, Recipe: "mutex",
		Workers: 1, Iterations: 3, Timeout: peerTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Kill)
	r, err := other.Wait()
	if err == nil || r.Violations != 3 || r.Acquisitions != 3 || r.ExitCode != 1 {
		t.Errorf("overlapping peer: err=%v result=%+v, want 3 violations, exit 1", err, r)
	}

	if err := interop.RevokeKazoo(ctx, addr, node); err != nil {
		t.Fatal(err)
	}
	r, err = holder.Wait()
	if err != nil || r.Violations != 0 || !strings.Contains(r.Output, "REVOKED") {
		t.Errorf("holder: err=%v result=%+v", err, r)
	}
	if _, err := os.Stat(witness); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the holder left its witness file: %v", err)
	}
}

// TestCuratorRevocation holds a revocable Curator mutex and revokes it with
// Curator's Revoker; then a waiting contender is granted.
func TestCuratorRevocation(t *testing.T) {
	cp := curator(t)
	ctx := testCtx(t)
	addr := zookeeper(t)
	path := lockPath(t)
	witness := filepath.Join(t.TempDir(), "witness")
	holder, err := interop.StartCurator(ctx, cp, interop.PeerConfig{
		Connect: addr, Path: path, Witness: witness, HoldRevocable: true, Timeout: peerTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(holder.Kill)
	node, err := holder.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(node, path+"/_c_") || !strings.Contains(node, "-lock-") {
		t.Errorf("held node %q: want Curator's protected form %s/_c_<uuid>-lock-<seq>", node, path)
	}

	waiter, err := interop.StartCurator(ctx, cp, interop.PeerConfig{
		Connect: addr, Path: path, Witness: witness, Recipe: "mutex",
		Workers: 1, Iterations: 1, Timeout: peerTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(waiter.Kill)

	if err := interop.RevokeCurator(ctx, cp, addr, node); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.WaitLine(ctx, "REVOKED"); err != nil {
		t.Fatal(err)
	}
	peers := []*interop.Peer{holder, waiter}
	results := waitAll(t, peers...)
	checkAll(t, peers, results, 1)
}
