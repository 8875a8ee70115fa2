package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestKeysWorkload runs the keys workload on a server of its own, whose
// empty containers are swept every second: the bare cold cycle leaves no
// key behind (turnstile none but of acquisitions the run's end cut
// short), go-zookeeper's Lock leaves every key as a persistent node; no lock node is left by any, and every cycle was on a
// new path (the bare cycle's 4 requests, go-zookeeper's more).
func TestKeysWorkload(t *testing.T) {
	o := runCmd(t, "-ensemble", "1", "-fsync=false", "-impl", "turnstile,rawzk,gozk", "-workload", "keys", "-workers", "4",
		"-cycles", "200", "-duration", "3s", "-session-timeout", "4s")
	clean(t, o, "turnstile", "rawzk", "gozk")
	for _, r := range o.results {
		if r.KeysLeft == nil {
			t.Fatalf("%s: keys left forever not counted\n%s", r.Impl, o.stderr)
		}
		switch r.Impl {
		case "gozk":
			if *r.KeysLeft < int(r.Cycles) {
				t.Errorf("gozk: %d keys left forever after %d cycles, want one a cycle (zk.Lock creates its path as persistent nodes)", *r.KeysLeft, r.Cycles)
			}
		case "turnstile":
			// The end of the run cancels the acquisitions under way, one a
			// worker at most; one cut short between its key's container and
			// its lock node leaves a container that never had a child,
			// which the server keeps. (rawzk's cycle ignores cancellation.)
			if *r.KeysLeft > r.Workers {
				t.Errorf("turnstile: %d keys left forever, want none but those of acquisitions the end of the run cut short (at most %d)", *r.KeysLeft, r.Workers)
			}
		default:
			if *r.KeysLeft != 0 {
				t.Errorf("%s: %d keys left forever, want none: only containers the server reaps", r.Impl, *r.KeysLeft)
			}
		}
		if r.ServerRequestsPerCycle == nil {
			t.Fatalf("%s: no requests per cycle", r.Impl)
		}
		req := *r.ServerRequestsPerCycle
		if r.Impl == "rawzk" && (req < 3.9 || req > 4.5) {
			t.Errorf("rawzk: %.2f requests per cycle, want the bare cold cycle's 4", req)
		}
		if r.Impl == "gozk" && req < 8 {
			t.Errorf("gozk: %.2f requests per cycle: want NoNode, an exists per level and the creates (a new path every cycle)", req)
		}
	}
}

// TestKeysPlainAndPeers: the plain programs and the Curator and kazoo
// drivers run the keys workload and leave no lock node.
func TestKeysPlainAndPeers(t *testing.T) {
	o := runCmd(t, "-impl", "rawzk,curator,kazoo", "-plain", "-workload", "keys", "-workers", "3",
		"-duration", "1s", "-warmup", "200ms")
	clean(t, o, "rawzk", "rawzk plain", "curator", "kazoo")
	for _, r := range o.results {
		if r.ServerRequestsPerCycle == nil || *r.ServerRequestsPerCycle < 3.9 {
			t.Errorf("%s: requests per cycle %s: want at least the cold cycle's 4", r.Impl, optF(r.ServerRequestsPerCycle))
		}
		if r.KeysLeft != nil {
			t.Errorf("%s: keys left counted on a server whose container sweep is unknown", r.Impl)
		}
	}
}

// TestOpenLoop runs -rate for the in-process impls and a driver: the
// offered rate is reported, latencies come with their p99.9, and the
// plain programs, which run closed loop, are skipped with the reason.
func TestOpenLoop(t *testing.T) {
	o := runCmd(t, "-impl", "turnstile,gozk,kazoo", "-plain", "-rate", "100", "-workload", "uncontended", "-workers", "4",
		"-duration", "1500ms", "-warmup", "200ms")
	clean(t, o, "turnstile", "gozk", "kazoo")
	for _, r := range o.results {
		if r.OfferedPerS != 100 || r.AcquireP999Ms <= 0 || r.AcquireP999Ms < r.AcquireP99Ms || r.AcquireMaxMs < r.AcquireP999Ms {
			t.Errorf("%s: offered %v, p99 %v, p99.9 %v, max %v", r.Impl, r.OfferedPerS, r.AcquireP99Ms, r.AcquireP999Ms, r.AcquireMaxMs)
		}
	}
	if !strings.Contains(o.stderr, "turnstile plain does not support -rate") {
		t.Errorf("no skip of the plain program under -rate:\n%s", o.stderr)
	}
}

// TestReportFile: -report writes one self-contained page with a latency
// and a throughput chart per in-process run, the measured window and the
// faults injected.
func TestReportFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.html")
	o := runCmd(t, "-impl", "turnstile", "-workload", "contended", "-workers", "3", "-faults", "conn-cut",
		"-fault-interval", "400ms", "-duration", "2s", "-report", file)
	clean(t, o, "turnstile")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"<svg", "latency per second", "grants per second", "conn-cut", "turnstile · contended"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if n := o.results[0].FaultsInjected; n < 1 || !strings.Contains(page, fmt.Sprintf("%d faults: conn-cut", n)) {
		t.Errorf("%d faults injected, not listed in the report", n)
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=|@import|url\(`).FindString(page); m != "" {
		t.Errorf("the report fetches something (%q): it must be self-contained", m)
	}
}

// TestTimelinePoints: grants and errors land in their second; a second
// with nothing recorded is a gap, not a zero latency.
func TestTimelinePoints(t *testing.T) {
	t0 := time.Unix(100, 0)
	tl := newTimeline(t0)
	tl.grant(t0.Add(100*time.Millisecond), 2*time.Millisecond)
	tl.grant(t0.Add(900*time.Millisecond), 4*time.Millisecond)
	tl.errorAt(t0.Add(2500 * time.Millisecond))
	tl.grant(t0.Add(3100*time.Millisecond), time.Second)
	tl.fault("conn-cut", t0.Add(2*time.Second), t0.Add(2300*time.Millisecond))
	pts := tl.points()
	if len(pts) != 4 {
		t.Fatalf("%d seconds, want 4", len(pts))
	}
	if p := pts[0]; p.Grants != 2 || !p.HasLatency || p.P50Ms < 1.9 || p.P50Ms > 2.1 || p.MaxMs < 3.9 || p.MaxMs > 4.1 {
		t.Errorf("second 0: %+v", p)
	}
	if p := pts[1]; p.HasLatency || p.Grants != 0 {
		t.Errorf("second 1 recorded nothing: %+v", p)
	}
	if p := pts[2]; p.Errors != 1 || p.HasLatency {
		t.Errorf("second 2: %+v", p)
	}
	faults, _, _, _ := tl.marks()
	if len(faults) != 1 || faults[0].From != 2*time.Second || faults[0].To != 2300*time.Millisecond {
		t.Errorf("faults %+v", faults)
	}
	var nilTL *timeline
	nilTL.grant(t0, time.Millisecond) // runs without -report: no-ops
	nilTL.fault("x", t0, t0)
}
