package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/turnstile-go/turnstile/internal/interop"
)

// A spawner is an impl whose workers run in a process of its own, in that
// process's own tight loop: the Curator and kazoo peers of internal/interop, and
// the plain Go programs of plain.go. It speaks interop's bench protocol: the
// harness samples CPU time and the server's counters when the peer's window
// opens and closes, and reads the window's cycles and latencies from it.
// The harness's exclusion checks do not reach into it; with -witness-file
// the peer follows the witness protocol and reports its own violations.
type spawner interface {
	impl
	Spawn(ctx context.Context, s spawnSpec) (*interop.Peer, error)
}

// spawnSpec is the workload as a peer runs it.
type spawnSpec struct {
	workloadSpec
	witness string // "" = no witness checks
	env     *runEnv
	// interleave and slices: an interleaved open loop's timeline and this
	// impl's spans of it (config's fields of the same names).
	interleave *interleaving
	slices     []slice
}

// peerWorkloads are the workloads a spawned impl runs: mutex cycles on one
// path or on a path per worker. (A waiter is a blocked thread in these
// libraries' APIs; 10,000 of them are not a fair fight for a peer process.)
func peerSupports(name, workload string, faults faultSet) error {
	switch workload {
	case "uncontended", "contended", "paths", "keys":
	default:
		return unsupported(name, "-workload "+workload, "it runs as a process of its own, which the harness measures on the mutex workloads only")
	}
	if len(faults) > 0 {
		return unsupported(name, "-faults "+faults.String(), "it runs as a process of its own, outside the harness's fault injection")
	}
	return nil
}

// peerConfig is s for interop's peers.
func (s spawnSpec) peerConfig() interop.PeerConfig {
	iters := s.iterations
	if iters == 0 {
		iters = 1<<31 - 1 // Java's int: the duration ends the run
	}
	return interop.PeerConfig{
		Connect: strings.Join(s.servers, ","), Path: s.path, Recipe: "mutex", Paths: s.paths, Workers: s.workers,
		Iterations: iters, Hold: s.hold, Witness: s.witness, SessionTimeout: s.sessionTimeout,
		Duration: s.duration, Bench: true, Warmup: s.warmup,
		Timeout: s.warmup + s.duration + 2*time.Minute,
	}
}

// curatorImpl is Apache Curator's InterProcessMutex, in the interop peer.
type curatorImpl struct{}

func (curatorImpl) Name() string         { return "curator" }
func (curatorImpl) Excludes() bool       { return true }
func (curatorImpl) Backend() backendKind { return zookeeperBackend }
func (curatorImpl) Supports(w string, f faultSet) error {
	return peerSupports("curator", w, f)
}

// curatorJIT asks the peer's JVM for the JIT a long-running client has
// (the interop tests' default stops at C1, for a fast start).
var curatorJIT = []string{"-XX:TieredStopAtLevel=4"}

func (curatorImpl) Spawn(ctx context.Context, s spawnSpec) (*interop.Peer, error) {
	if s.needsDriver() {
		return startCuratorDriver(ctx, s)
	}
	cp, err := s.env.curatorClasspath(ctx)
	if err != nil {
		return nil, err
	}
	cfg := s.peerConfig()
	cfg.JVMFlags = curatorJIT
	return interop.StartCurator(ctx, cp, cfg)
}

// kazooImpl is kazoo's Lock, in the interop peer, with kazoo's own node
// names only (no patterns for other libraries' nodes: none share the path).
type kazooImpl struct{}

func (kazooImpl) Name() string         { return "kazoo" }
func (kazooImpl) Excludes() bool       { return true }
func (kazooImpl) Backend() backendKind { return zookeeperBackend }
func (kazooImpl) Supports(w string, f faultSet) error {
	return peerSupports("kazoo", w, f)
}

func (kazooImpl) Spawn(ctx context.Context, s spawnSpec) (*interop.Peer, error) {
	if s.needsDriver() {
		return startKazooDriver(ctx, s)
	}
	if _, err := interop.KazooVersion(ctx); err != nil {
		return nil, err
	}
	cfg := s.peerConfig()
	cfg.ExtraArgs = []string{"--extra-patterns", "none"}
	return interop.StartKazoo(ctx, cfg)
}

// plainImpl is the plain program of an in-process impl (plain.go), spawned
// beside the harness's run of it by -plain.
type plainImpl struct{ of impl }

func (p plainImpl) Name() string         { return p.of.Name() + " plain" }
func (p plainImpl) Excludes() bool       { return false } // a plain program checks nothing
func (p plainImpl) Backend() backendKind { return p.of.Backend() }
func (p plainImpl) Supports(w string, f faultSet) error {
	if err := p.of.Supports(w, f); err != nil {
		return err
	}
	return peerSupports(p.Name(), w, f)
}

// hasPlain: the impls with a plain program.
func hasPlain(name string) bool {
	switch name {
	case "turnstile", "gozk", "rawzk", "redis":
		return true
	}
	return false
}

func (p plainImpl) Spawn(ctx context.Context, s spawnSpec) (*interop.Peer, error) {
	o := s.workloadSpec
	o.impl = p.of.Name()
	return startChild(ctx, "plain", o.args())
}

// curatorPeer is the Curator peer's build, shared by every run of the
// process (the tests call run many times): compiling it takes seconds.
// main and TestMain remove it at exit.
var curatorPeer curatorBuild

// curatorBuild compiles the Curator peer once, on first use, into a temp
// dir that close removes.
type curatorBuild struct {
	once      sync.Once
	dir       string
	classpath string
	err       error
}

func (b *curatorBuild) get(ctx context.Context) (string, error) {
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "turnstile-stress-curator-*")
		if b.err != nil {
			return
		}
		bctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		b.classpath, b.err = interop.BuildCurator(bctx, b.dir)
		if b.err != nil {
			b.err = fmt.Errorf("build the Curator peer: %w", b.err)
		}
	})
	return b.classpath, b.err
}

func (b *curatorBuild) close() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
