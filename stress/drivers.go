package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/internal/interop"
)

// The harness's own drivers of Curator and kazoo (drivers/): internal/interop's
// peers run closed-loop workers on fixed lock paths, so the keys workload
// (a new lock path every cycle) and open-loop runs (-rate) are driven by
// these instead. They speak the same bench protocol, plus an OPEN line.

//go:embed drivers/CuratorDriver.java
var curatorDriverSource []byte

//go:embed drivers/kazoo_driver.py
var kazooDriverSource string

// driverOpenThreads caps a driver's threads in an open loop. Curator's and
// kazoo's locks block a thread per acquisition; given the thousand workers
// of the suite's open loops (openWorkers), Curator fell to 1,297 of the
// 2,096 cycles/s offered, where it ran 2,357 closed loop with 64, and
// kazoo's session dropped: the threads, not the lock, were measured.
const driverOpenThreads = 64

// needsDriver: the runs the interop peers cannot do.
func (s spawnSpec) needsDriver() bool { return s.keys || s.rate > 0 }

// driverArgs is s as the drivers' flags.
func (s spawnSpec) driverArgs() ([]string, error) {
	if s.duration <= 0 {
		return nil, errors.New("the Curator and kazoo drivers run for a -duration (not -cycles alone)")
	}
	if s.witness != "" || s.hold > 0 {
		return nil, errors.New("the Curator and kazoo drivers take no -witness-file or -hold")
	}
	workers := s.workers
	if s.rate > 0 {
		workers = min(workers, driverOpenThreads)
	}
	a := []string{
		"--connect", strings.Join(s.servers, ","), "--path", s.path,
		"--workers", strconv.Itoa(workers), "--paths", strconv.Itoa(s.paths),
		"--duration-ms", strconv.FormatInt(s.duration.Milliseconds(), 10),
		"--warmup-ms", strconv.FormatInt(s.warmup.Milliseconds(), 10),
		"--rate", strconv.FormatFloat(s.rate, 'f', -1, 64),
		"--session-ms", strconv.FormatInt(s.sessionTimeout.Milliseconds(), 10),
		"--timeout-s", strconv.FormatInt(int64((s.warmup + s.duration + 2*time.Minute).Seconds()), 10),
	}
	if s.keys {
		a = append(a, "--keys")
	}
	if il := s.interleave; il != nil && s.rate > 0 {
		// The driver's window then counts from the epoch, on the wall
		// clock all the impls' processes share, and its tickets fall in
		// its slices only (from and length in ns after the epoch).
		spans := make([]string, len(s.slices))
		for i, sl := range s.slices {
			spans[i] = fmt.Sprintf("%d:%d", sl.from.Nanoseconds(), sl.length.Nanoseconds())
		}
		a = append(a, "--epoch-unix-ns", strconv.FormatInt(il.epoch.UnixNano(), 10), "--slices", strings.Join(spans, ","))
		a[slices.Index(a, "--warmup-ms")+1] = strconv.FormatInt(il.windowFrom().Milliseconds(), 10)
		a[slices.Index(a, "--duration-ms")+1] = strconv.FormatInt(il.window().Milliseconds(), 10)
		a[slices.Index(a, "--timeout-s")+1] = strconv.FormatInt(int64((time.Until(il.epoch) + il.windowFrom() + il.window() + 2*time.Minute).Seconds()), 10)
	}
	return a, nil
}

// startCuratorDriver runs CuratorDriver.java in Java's source-file mode on
// the Curator peer's classpath.
func startCuratorDriver(ctx context.Context, s spawnSpec) (*interop.Peer, error) {
	args, err := s.driverArgs()
	if err != nil {
		return nil, err
	}
	cp, err := s.env.curatorClasspath(ctx)
	if err != nil {
		return nil, err
	}
	java, err := javaPath()
	if err != nil {
		return nil, err
	}
	src := filepath.Join(s.env.curator.dir, "CuratorDriver.java")
	if err := os.WriteFile(src, curatorDriverSource, 0o644); err != nil {
		return nil, err
	}
	// The JIT a long-running client has, and a heap as small as the peer's.
	flags := []string{"-XX:+UseSerialGC", "-Xms16m", "-Xmx256m", "-Xss512k", "-cp", cp, src}
	return interop.StartProgram(ctx, "curator", java, append(flags, args...), nil)
}

// startKazooDriver runs kazoo_driver.py on the interop peer's Python.
func startKazooDriver(ctx context.Context, s spawnSpec) (*interop.Peer, error) {
	args, err := s.driverArgs()
	if err != nil {
		return nil, err
	}
	if _, err := interop.KazooVersion(ctx); err != nil {
		return nil, err
	}
	return interop.StartProgram(ctx, "kazoo", interop.KazooPython(), append([]string{"-c", kazooDriverSource}, args...),
		[]string{"PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"})
}

// javaPath is $JAVA_HOME/bin/java, else java on PATH.
func javaPath() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		if p := filepath.Join(h, "bin", "java"); fileExists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("java not found: %w", interop.ErrNotInstalled)
	}
	return p, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

var openRE = regexp.MustCompile(`(?m)^OPEN unfinished=(\d+)\s*$`)

// parseUnfinished reads a driver's OPEN line (0 when there is none).
func parseUnfinished(out string) int64 {
	m := openRE.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}
