package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// shared is one real ZooKeeper for every test of the package.
var shared *zkserver.Server

// suite runs the tests on the shared server, then removes the Curator
// peer's build, if a test made one.
type suite struct{ m *testing.M }

func (s suite) Run() int {
	defer curatorBuild.remove()
	return zkserver.Shared(s.m, &shared).Run()
}

func TestMain(m *testing.M) {
	// The lock tests' commands run under a supervisor, which is this
	// executable started again.
	superviseIfAsked()
	if os.Getenv(cliEnv) != "" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(suite{m})
}

// result is what one run of the command gave.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cli runs the command against the shared server.
func cli(t testing.TB, args ...string) result {
	t.Helper()
	return cliCtx(t, context.Background(), args...)
}

func cliCtx(t testing.TB, ctx context.Context, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(ctx, append([]string{"-servers", shared.Addr()}, args...), &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// cliJSON runs the command with -json and decodes its output into v,
// demanding exit code want.
func cliJSON(t testing.TB, v any, want int, args ...string) {
	t.Helper()
	r := cli(t, append(args, "-json")...)
	if r.code != want {
		t.Fatalf("turnstile %s: want exit %d, got %v", strings.Join(args, " "), want, r)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("turnstile %s: output is not JSON: %v\n%v", strings.Join(args, " "), err, r)
	}
}

// lockAt reads one lock with `locks -json PATH`; ok is false when there is
// none.
func lockAt(t testing.TB, path string) (lockView, bool) {
	t.Helper()
	var locks []lockView
	r := cli(t, "locks", "-json", path)
	switch r.code {
	case exitNone:
		return lockView{}, false
	case exitOK:
	default:
		t.Fatalf("turnstile locks %s: %v", path, r)
	}
	if err := json.Unmarshal([]byte(r.stdout), &locks); err != nil {
		t.Fatalf("locks %s: %v\n%v", path, err, r)
	}
	for _, l := range locks {
		if l.Path == path {
			return l, true
		}
	}
	return lockView{}, false
}

// lockPath is a lock path of the test's own.
func lockPath(t testing.TB) string {
	return "/cli/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + fmt.Sprintf("-%d", time.Now().UnixNano())
}

func startEngine(t testing.TB) *engine.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := engine.Start(ctx, engine.Config{Servers: []string{shared.Addr()}})
	if err != nil {
		t.Fatalf("start engine: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// who names a contender for comparisons: its client, and turnstile's owner
// or the node's data.
func whoIs(n nodeView) string {
	if n.Owner != nil {
		return n.Client + ":" + n.Owner.Owner
	}
	return n.Client + ":" + n.Data
}

func names(nodes []nodeView) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, whoIs(n))
	}
	return out
}

// curatorBuild compiles the Curator peer once for the package.
var curatorBuild build

type build struct {
	once      sync.Once
	dir       string
	classpath string
	err       error
}

func (b *build) remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

func curator(t testing.TB) string {
	t.Helper()
	b := &curatorBuild
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "turnstile-cli-curator-")
		if b.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		b.classpath, b.err = interop.BuildCurator(ctx, b.dir)
	})
	if b.err != nil {
		t.Fatalf("build the Curator peer: %v", b.err)
	}
	return b.classpath
}

var kazooOnce = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return interop.KazooVersion(ctx)
})

// kazoo fails the test, naming the install command, when kazoo is missing.
func kazoo(t testing.TB) {
	t.Helper()
	if _, err := kazooOnce(); err != nil {
		t.Fatal(err)
	}
}

// peerTimeout bounds every peer's own run; peers are killed when their
// test ends.
const peerTimeout = 90 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// syncBuffer collects a running command's output and tells when a line
// arrives.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, err
}

// lines returns the complete lines so far and a channel closed at the next
// write.
func (b *syncBuffer) lines() ([]string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n"), b.changed
	}
	return nil, b.changed
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
