package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestStatCPU reads utime and stime past a command name with spaces and
// parentheses.
func TestStatCPU(t *testing.T) {
	// Fields 3..15 after the name: state, ppid, pgrp, session, tty, tpgid,
	// flags, minflt, cminflt, majflt, cmajflt, utime=150, stime=50.
	line := "42 (a b) c)) S 1 42 42 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 3 0\n"
	d, err := statCPU([]byte(line))
	if err != nil || d != 2*time.Second {
		t.Errorf("statCPU = %v, %v; want 2s", d, err)
	}
	for _, bad := range []string{"", "42 (x S 1", "42 (x) S 1 2 3"} {
		if _, err := statCPU([]byte(bad)); err == nil {
			t.Errorf("statCPU(%q) gave no error", bad)
		}
	}
}

// TestOwnCPUTwoWays: this process's CPU time from /proc agrees with
// getrusage's to within a few ticks of /proc's 10 ms.
func TestOwnCPUTwoWays(t *testing.T) {
	start, ok := selfCPU()
	if !ok {
		t.Fatal("getrusage failed")
	}
	for x := 0; ; x++ { // burn 100 ms of CPU time, however long that takes
		if now, _ := selfCPU(); now-start >= 100*time.Millisecond {
			break
		}
	}
	p, err := procCPU(os.Getpid())
	s, _ := selfCPU()
	if err != nil {
		t.Fatal(err)
	}
	if diff := s - p; p <= 0 || diff < -50*time.Millisecond || diff > 50*time.Millisecond {
		t.Errorf("/proc says %v, getrusage %v", p, s)
	}
}

// TestFencedResource: the greatest token wins; an older one is refused; a
// write without a token cannot be judged and is accepted.
func TestFencedResource(t *testing.T) {
	r, err := newFencedResource(t.TempDir() + "/resource")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		token    int64
		hasToken bool
		accepted bool
	}{
		{10, true, true}, {12, true, true}, {12, true, true}, {11, true, false}, {0, false, true}, {13, true, true}, {12, true, false},
	}
	for i, s := range steps {
		ok, st, err := r.write(s.token, s.hasToken, "w"+string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		if ok != s.accepted {
			t.Errorf("step %d: token %d (has %v): accepted %v, want %v", i, s.token, s.hasToken, ok, s.accepted)
		}
		if ok && st.last != "w"+string(rune('a'+i)) {
			t.Errorf("step %d: last writer %q", i, st.last)
		}
	}
	st, err := r.state()
	if err != nil || st.maxToken != 13 || st.writes != 5 {
		t.Errorf("state %+v, %v; want greatest token 13 after 5 writes", st, err)
	}
}

// TestPeersAndPlain runs the Curator and kazoo peers and the plain
// programs beside the harness's own runs: each reports cycles in its
// window, latencies, its own CPU time and the server's requests.
func TestPeersAndPlain(t *testing.T) {
	o := runCmd(t, "-impl", "curator,kazoo,turnstile,redis", "-plain", "-workload", "contended", "-workers", "3",
		"-duration", "1s", "-warmup", "200ms")
	clean(t, o, "curator", "kazoo", "turnstile", "turnstile plain", "redis", "redis plain")
	for _, r := range o.results {
		if r.AcquireP50Ms <= 0 || r.ClientCPUUsPerCycle == nil || *r.ClientCPUUsPerCycle <= 0 || r.ServerRequestsPerCycle == nil {
			t.Errorf("%s: p50 %v ms, client CPU %s µs/cycle, server requests %s per cycle: want all measured",
				r.Impl, r.AcquireP50Ms, optF0(r.ClientCPUUsPerCycle), optF(r.ServerRequestsPerCycle))
		}
		if r.DurationS < 1 || r.WarmupS != 0.2 {
			t.Errorf("%s: window %vs after a warm-up of %vs; want at least 1s after 0.2s", r.Impl, r.DurationS, r.WarmupS)
		}
		if r.Checked != (r.Impl == "turnstile" || r.Impl == "redis") {
			t.Errorf("%s: checked %v: only the in-process runs are checked without -witness-file", r.Impl, r.Checked)
		}
	}
	// Redis is a server the harness started: its CPU time is known.
	if r := o.results[4]; r.ServerCPUUsPerCycle == nil {
		t.Errorf("redis: no server CPU time")
	}
}

// TestServerCPU: with a server of its own the harness reads the server
// process's CPU time as well as its own.
func TestServerCPU(t *testing.T) {
	o := runCmd(t, "-ensemble", "1", "-fsync=false", "-impl", "rawzk,gozk", "-workload", "contended", "-workers", "2",
		"-cycles", "300", "-duration", "2s")
	clean(t, o, "rawzk", "gozk")
	for _, r := range o.results {
		if r.ServerCPUUsPerCycle == nil || *r.ServerCPUUsPerCycle <= 0 || r.ClientCPUUsPerCycle == nil {
			t.Errorf("%s: server CPU %s, client CPU %s µs/cycle", r.Impl, optF0(r.ServerCPUUsPerCycle), optF0(r.ClientCPUUsPerCycle))
		}
	}
}

// TestPause stalls a holder process past its lease: another holder gets
// in while the stalled one still believes it holds (the witness sees it);
// when it goes on, turnstile's token lets the resource refuse its write,
// while Redis's lock, which has no token, lets the write through.
func TestPause(t *testing.T) {
	o := runCmd(t, "-impl", "turnstile,redis", "-faults", "pause", "-workload", "contended", "-workers", "3",
		"-session-timeout", "1s", "-fault-interval", "200ms", "-duration", "2s")
	clean(t, o, "turnstile", "redis")
	for _, r := range o.results {
		p := r.Pause
		if p == nil || p.Stalls < 1 || p.SecondHolderIn < 1 || p.WitnessSawStale < 1 {
			t.Fatalf("%s: pause %+v: want a stall during which another holder got in, seen by the witness\n%s", r.Impl, p, o.stderr)
		}
		if !strings.Contains(o.stderr, "pause ("+r.Impl+"): ") {
			t.Errorf("%s: no pause line in the table", r.Impl)
		}
	}
	if ts := o.results[0].Pause; ts.StaleRefused < 1 || ts.StaleAcceptedWithToken != 0 {
		t.Errorf("turnstile: stale writes refused %d, accepted with a token %d; want the token to fence", ts.StaleRefused, ts.StaleAcceptedWithToken)
	}
	if rd := o.results[1].Pause; rd.StaleAccepted < 1 || rd.StaleRefused != 0 {
		t.Errorf("redis: stale writes accepted %d, refused %d; want them through, with nothing to fence them", rd.StaleAccepted, rd.StaleRefused)
	}
}
