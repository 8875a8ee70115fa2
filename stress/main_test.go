package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// shared is one real ZooKeeper for every test but the ensemble one, which
// starts its own three.
var shared *zkserver.Server

func TestMain(m *testing.M) {
	// The harness re-executes its own binary for plain programs and the pause
	// fault's holder: under test, that binary is this one.
	if code, ok := childMode(); ok {
		os.Exit(code)
	}
	// toxiproxy's link goroutines (faults.go) outlive Proxy.Stop now and
	// then: a stopped link's toxic pipe is left blocked, sending to a stub
	// nobody reads any more. They are the fault library's, not the
	// harness's or the engine's, so the check passes over them alone.
	goleak.VerifyTestMain(removeCuratorAfter{zkserver.Shared(m, &shared)},
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"))
}

// removeCuratorAfter removes the Curator peer's build after the tests.
type removeCuratorAfter struct{ m interface{ Run() int } }

func (r removeCuratorAfter) Run() int {
	defer curatorPeer.close()
	return r.m.Run()
}

// outcome is one invocation of the command.
type outcome struct {
	code    int
	results []result
	stderr  string
	stdout  string
}

// runCmd runs the command in process with args, against the shared server
// unless args name their own, under a lock root of the test's own, with
// -json so the results can be read back.
func runCmd(t *testing.T, args ...string) outcome {
	t.Helper()
	root := "/stresstest/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	full := []string{"-lock-root", root, "-json", "-seed", "42"}
	own := false
	for _, a := range args {
		if a == "-ensemble" || a == "-servers" {
			own = true
		}
	}
	if !own {
		full = append(full, "-servers", shared.Addr())
	}
	full = append(full, args...)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, full, &stdout, &stderr)
	o := outcome{code: code, stderr: stderr.String(), stdout: stdout.String()}
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var r result
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("stdout is not JSON objects: %v\n%s", err, o.stdout)
		}
		o.results = append(o.results, r)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("stress %s → exit %d\n%s", strings.Join(full, " "), code, o.stderr)
	}
	return o
}

// clean asserts a run that must pass: exit 0, and for every result cycles
// made, no violation, no orphan, no leak, no stuck worker.
func clean(t *testing.T, o outcome, impls ...string) {
	t.Helper()
	if o.code != exitOK {
		t.Errorf("exit code %d, want 0\n%s", o.code, o.stderr)
	}
	if len(o.results) != len(impls) {
		t.Fatalf("%d results, want %d (%v)\n%s", len(o.results), len(impls), impls, o.stderr)
	}
	for i, r := range o.results {
		if r.Impl != impls[i] {
			t.Errorf("result %d is %s, want %s", i, r.Impl, impls[i])
		}
		if r.Cycles <= 0 {
			t.Errorf("%s: no cycles", r.Impl)
		}
		if r.Violations != 0 || r.Orphans != 0 || r.Leaked != 0 || r.Stuck != 0 || r.Error != "" {
			t.Errorf("%s: violations %d %v, orphans %d, leaked %d, stuck %d, error %q\n%s",
				r.Impl, r.Violations, r.ViolationsDetail, r.Orphans, r.Leaked, r.Stuck, r.Error, o.stderr)
		}
	}
}

func supported(t *testing.T, implName, workload string, faults ...string) bool {
	t.Helper()
	im, err := implByName(implName)
	if err != nil {
		t.Fatal(err)
	}
	if err := im.Supports(workload, faultSet(faults)); err != nil {
		return false
	}
	return true
}

// short bounds a test run by cycles and by time, whichever ends first.
var short = []string{"-cycles", "1000", "-duration", "2s", "-session-timeout", "4s"}

func TestWorkloads(t *testing.T) {
	for _, wl := range []string{"uncontended", "contended", "paths", "rw", "semaphore"} {
		for _, im := range []string{"turnstile", "gozk", "rawzk"} {
			if !supported(t, im, wl) {
				continue // refused with a clear message: TestUnsupported
			}
			t.Run(wl+"/"+im, func(t *testing.T) {
				args := append([]string{"-impl", im, "-workload", wl, "-workers", "6", "-paths", "3"}, short...)
				o := runCmd(t, args...)
				clean(t, o, im)
				r := o.results[0]
				if r.Checked != (im != "rawzk") {
					t.Errorf("checked = %v for %s", r.Checked, im)
				}
				if r.ServerRequestsPerCycle == nil {
					t.Errorf("no server_requests_per_cycle")
				}
			})
		}
	}
}

func TestWaiters(t *testing.T) {
	for _, im := range []string{"turnstile", "gozk"} {
		t.Run(im, func(t *testing.T) {
			o := runCmd(t, "-impl", im, "-workload", "waiters", "-paths", "4", "-workers", "25")
			clean(t, o, im)
			r := o.results[0]
			if r.Waiters != 100 || r.Cycles != 100 {
				t.Errorf("waiters %d, cycles %d; want 100 and 100", r.Waiters, r.Cycles)
			}
			if r.Plateau == nil || !*r.Plateau {
				t.Errorf("the plateau (every waiter queued) was not seen")
			}
			if r.GoroutinesPlateau == 0 || r.HeapInuseBytes == 0 || r.RSSBytes == 0 {
				t.Errorf("memory not measured: goroutines %d heap %d rss %d", r.GoroutinesPlateau, r.HeapInuseBytes, r.RSSBytes)
			}
		})
	}
}

// TestFaults runs each fault, short, for turnstile (and for the other impls
// where they support it and the fault is one their recipe survives).
func TestFaults(t *testing.T) {
	cases := []struct {
		fault string
		impls []string
		args  []string
	}{
		{"conn-cut", []string{"turnstile"}, []string{"-fault-interval", "500ms", "-duration", "3s", "-cycles", "100000"}},
		{"latency", []string{"turnstile", "gozk"}, []string{"-latency", "2ms", "-jitter", "1ms", "-duration", "2s", "-cycles", "150"}},
		// Away longer than the 1 s session: the server expires it once.
		{"expire", []string{"turnstile"}, []string{"-session-timeout", "1s", "-fault-interval", "600ms", "-duration", "3s", "-cycles", "100000"}},
		{"cancel", []string{"turnstile"}, []string{"-cancel-ratio", "0.5", "-cancel-max", "10ms", "-duration", "2s", "-cycles", "600"}},
	}
	for _, c := range cases {
		for _, im := range c.impls {
			t.Run(c.fault+"/"+im, func(t *testing.T) {
				args := append([]string{"-impl", im, "-workload", "contended", "-workers", "8", "-faults", c.fault}, c.args...)
				o := runCmd(t, args...)
				clean(t, o, im)
				r := o.results[0]
				if c.fault != "latency" && r.FaultsInjected == 0 {
					t.Errorf("no fault was injected")
				}
				if r.Faults != c.fault {
					t.Errorf("faults %q, want %q", r.Faults, c.fault)
				}
			})
		}
	}
	t.Run("cancel/waiters", func(t *testing.T) {
		o := runCmd(t, "-workload", "waiters", "-paths", "3", "-workers", "20", "-faults", "cancel", "-cancel-ratio", "0.5", "-cancel-max", "20ms")
		clean(t, o, "turnstile")
	})
}

func TestLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server ensemble")
	}
	o := runCmd(t, "-ensemble", "3", "-faults", "leader-kill", "-workload", "paths", "-workers", "6", "-paths", "3",
		"-duration", "5s", "-fault-interval", "1500ms")
	clean(t, o, "turnstile")
	if o.results[0].FaultsInjected == 0 {
		t.Errorf("no leader was killed")
	}
}

// TestCheckersCatchNone proves the checkers: "none" takes no lock, so under
// contention with a hold time holders overlap and the run must fail.
func TestCheckersCatchNone(t *testing.T) {
	for _, c := range []struct{ workload, leases string }{{"contended", "1"}, {"rw", "1"}, {"semaphore", "2"}} {
		t.Run(c.workload, func(t *testing.T) {
			o := runCmd(t, "-impl", "none", "-workload", c.workload, "-leases", c.leases, "-write-ratio", "0.5",
				"-workers", "6", "-hold", "2ms", "-duration", "1s", "-cycles", "300", "-witness-file", shmWitness(t))
			if o.code != exitFailed {
				t.Errorf("exit code %d, want %d", o.code, exitFailed)
			}
			if len(o.results) != 1 {
				t.Fatalf("%d results", len(o.results))
			}
			r := o.results[0]
			if r.Violations == 0 || r.ViolationsDetail["overlap"] == 0 || r.ViolationsDetail["witness"] == 0 {
				t.Errorf("violations %d %v: both the detector and the witness must see the overlaps", r.Violations, r.ViolationsDetail)
			}
			if !strings.Contains(o.stderr, "VIOLATION") {
				t.Errorf("violations not logged")
			}
		})
	}
}

func TestImplAll(t *testing.T) {
	o := runCmd(t, "-impl", "all", "-workload", "contended", "-workers", "4", "-cycles", "200", "-duration", "2s")
	clean(t, o, allImpls...)
	for _, im := range allImpls[1:] {
		if want := "turnstile vs " + im + ": cycles/s"; !strings.Contains(o.stderr, want) {
			t.Errorf("no ratio line %q in the table:\n%s", want, o.stderr)
		}
	}
	// Unsupported impls are skipped under all, not fatal.
	o = runCmd(t, "-impl", "all", "-workload", "waiters", "-paths", "2", "-workers", "5")
	clean(t, o, "turnstile", "gozk")
	for _, im := range []string{"curator", "kazoo", "redis", "rawzk"} {
		if !strings.Contains(o.stderr, im+": skipped") {
			t.Errorf("%s's skip not reported", im)
		}
	}
}

func TestUnsupported(t *testing.T) {
	for _, args := range [][]string{
		{"-impl", "gozk", "-faults", "cancel"},
		{"-impl", "rawzk", "-workload", "waiters"},
		{"-impl", "gozk", "-workload", "rw"},
		{"-impl", "rawzk", "-workload", "semaphore"},
		{"-impl", "curator", "-workload", "waiters"},
		{"-impl", "kazoo", "-faults", "conn-cut"},
		{"-impl", "redis", "-workload", "rw"},
		{"-impl", "rawzk", "-faults", "pause"},
	} {
		o := runCmd(t, append(args, "-duration", "1s")...)
		if o.code != exitUsage {
			t.Errorf("%v: exit code %d, want %d", args, o.code, exitUsage)
		}
		if !strings.Contains(o.stderr, "does not support") || len(o.results) != 0 {
			t.Errorf("%v: want a clear 'does not support' and no run:\n%s", args, o.stderr)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-workload", "nope"},
		{"-impl", "nope"},
		{"-faults", "nope"},
		{"-faults", "leader-kill"}, // needs -ensemble 3
		{"-duration", "0"},         // nothing would end the run
		{"-workers", "0"},
		{"-lock-path", "/elsewhere/x"},
		{"-impl", "turnstile,nope"},
		{"-bench", "-workload", "contended"}, // the suite has its own
		{"-faults", "pause", "-workload", "uncontended"},
		{"-redis-appendfsync", "sometimes"},
		{"-bench-latency", "-impl", "gozk"}, // the suite has its own
		{"-bench", "-bench-latency"},
		{"-bench-twoproc", "-workers", "4"}, // the suite has its own
		{"-bench", "-bench-twoproc"},
		{"-rate", "-1"},
		{"-rate", "10", "-workload", "waiters"}, // nothing to start at a rate
		{"-pause-resource", "postgres"},         // written by the pause fault's holders only
		{"-pause-resource", "disk", "-faults", "pause"},
		{"-impl", "turnstile-sqlfence", "-faults", "pause"}, // it fences the account, not the file
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != exitUsage {
			t.Errorf("%v: exit code %d, want %d", args, code, exitUsage)
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-help"}, &out, &errb); code != exitOK {
		t.Errorf("-help: exit code %d", code)
	}
	help := errb.String()
	for _, want := range []string{"-workload", "-witness-file", "-faults", "-seed", "rawzk"} {
		if !strings.Contains(help, want) {
			t.Errorf("-help lacks %s", want)
		}
	}
	_, implHelp, _ := strings.Cut(help, "-impl string")
	implHelp, _, _ = strings.Cut(strings.TrimSpace(implHelp), "\n")
	if !strings.Contains(implHelp, "gozk") || strings.Contains(implHelp, "none") {
		t.Errorf("-impl help %q: want the impls, without the hidden none", implHelp)
	}
}

// TestJSONAndSeed: one JSON object per run with the fields the issue names,
// and the seed printed and echoed.
func TestJSONAndSeed(t *testing.T) {
	o := runCmd(t, "-workload", "contended", "-workers", "3", "-cycles", "50", "-duration", "2s")
	clean(t, o, "turnstile")
	if !strings.Contains(o.stderr, "seed 42") || o.results[0].Seed != 42 {
		t.Errorf("seed not printed or echoed")
	}
	var m map[string]any
	line, _, _ := strings.Cut(o.stdout, "\n")
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"impl", "workload", "workers", "paths", "duration_s", "faults", "seed", "servers",
		"violations", "orphans", "lost", "goroutines_peak", "heap_inuse_bytes", "rss_bytes", "cycles", "cycles_per_s",
		"acquire_p50_ms", "acquire_p99_ms", "acquire_max_ms", "server_requests_per_cycle",
		"client_cpu_us_per_cycle", "server_cpu_us_per_cycle"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

// shmWitness is a witness file of the test's own under /dev/shm, named
// without a directory as -witness-file allows, removed when the test ends.
func shmWitness(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("turnstile-stress-test-%d-%s", os.Getpid(), strings.NewReplacer("/", "_").Replace(t.Name()))
	t.Cleanup(func() {
		files, _ := filepath.Glob(filepath.Join(memoryDir, name+"*"))
		for _, f := range files {
			os.Remove(f)
		}
	})
	return name
}

// TestWitnessOnlyWhenAsked: without -witness-file the in-process detector
// still catches every overlap, and no witness file is used; with one, the
// witness catches them too.
func TestWitnessOnlyWhenAsked(t *testing.T) {
	args := []string{"-impl", "none", "-workload", "contended", "-workers", "4", "-hold", "2ms", "-duration", "1s", "-cycles", "200"}
	o := runCmd(t, args...)
	if o.code != exitFailed || len(o.results) != 1 {
		t.Fatalf("exit code %d, %d results; want %d and 1", o.code, len(o.results), exitFailed)
	}
	if d := o.results[0].ViolationsDetail; d["overlap"] == 0 || d["witness"] != 0 {
		t.Errorf("without -witness-file: violations %v, want overlaps from the in-process detector and none from a witness", d)
	}
	o = runCmd(t, append(args, "-witness-file", shmWitness(t))...)
	if len(o.results) != 1 || o.results[0].ViolationsDetail["witness"] == 0 {
		t.Errorf("with -witness-file: no witness violation (%d results)\n%s", len(o.results), o.stderr)
	}
}

// TestWitnessPlacement: a bare name goes to /dev/shm; a directory that is
// not a memory filesystem is refused unless -witness-on-disk.
func TestWitnessPlacement(t *testing.T) {
	f, err := placeWitness("w", false)
	if err != nil || f != filepath.Join(memoryDir, "w") {
		t.Errorf("placeWitness(w) = %q, %v; want %s/w", f, err, memoryDir)
	}
	// procfs is no memory filesystem for this purpose, and is on every Linux.
	if _, err := placeWitness("/proc/w", false); !errors.Is(err, errWitnessOnDisk) {
		t.Errorf("placeWitness(/proc/w) = %v, want errWitnessOnDisk", err)
	}
	if f, err := placeWitness("/proc/w", true); err != nil || f != "/proc/w" {
		t.Errorf("placeWitness(/proc/w, on disk) = %q, %v", f, err)
	}

	dir := diskDir(t)
	o := runCmd(t, "-workload", "contended", "-workers", "2", "-cycles", "10", "-witness-file", filepath.Join(dir, "w"))
	if o.code != exitUsage || !strings.Contains(o.stderr, "-witness-on-disk") {
		t.Errorf("-witness-file in %s: exit %d, want %d and a message naming -witness-on-disk\n%s", dir, o.code, exitUsage, o.stderr)
	}
}

// diskDir is a directory on a disk filesystem: the package's own, or
// /proc where the source tree is in memory.
func diskDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if mem, _, err := inMemoryFS(wd); err == nil && !mem {
		return wd
	}
	return "/proc"
}
