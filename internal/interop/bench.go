package interop

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The bench protocol. A peer started with PeerConfig.Bench (or any program
// that wants to be measured the same way, such as the stress harness's
// plain Go programs) runs its workers from the start and measures one
// window on CLOCK_MONOTONIC (Java's System.nanoTime, Python's
// time.monotonic_ns, Go's monotonic clock: one clock for every peer). On
// stdout it prints
//
//	BENCH-START                                   the window opens (after the warm-up)
//	BENCH-END                                     the window closes
//	BENCH cycles=<n> errors=<e> window_ns=<ns>    cycles completed inside the window
//	LAT <µs>:<count> <µs>:<count> ...             their acquire latencies
//
// in that order, BENCH-START and BENCH-END at the moment they happen, so
// that whoever reads them can sample what it measures around the window
// (the peer's and the server's CPU time). LAT's latencies are rounded down
// to three significant digits, ascending.
const (
	BenchStartLine = "BENCH-START"
	BenchEndLine   = "BENCH-END"
)

// LatencyBucket is a latency rounded down to three significant digits, in
// µs, and how many acquisitions took it.
type LatencyBucket struct {
	Micros int64
	Count  int64
}

// BenchResult is what a peer's BENCH and LAT lines say.
type BenchResult struct {
	Cycles  int64
	Errors  int64
	Window  time.Duration
	Latency []LatencyBucket
}

// Rate is Cycles per second of Window.
func (r BenchResult) Rate() float64 {
	if r.Window <= 0 {
		return 0
	}
	return float64(r.Cycles) / r.Window.Seconds()
}

var (
	benchRE = regexp.MustCompile(`(?m)^BENCH cycles=(\d+) errors=(\d+) window_ns=(\d+)\s*$`)
	latRE   = regexp.MustCompile(`(?m)^LAT((?: \d+:\d+)*)\s*$`)
)

// ParseBench reads the BENCH and LAT lines from a peer's output.
func ParseBench(out string) (BenchResult, error) {
	var r BenchResult
	m := benchRE.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("interop: no BENCH line in the output\n%s", indent(out))
	}
	r.Cycles, _ = strconv.ParseInt(m[1], 10, 64)
	r.Errors, _ = strconv.ParseInt(m[2], 10, 64)
	ns, _ := strconv.ParseInt(m[3], 10, 64)
	r.Window = time.Duration(ns)
	l := latRE.FindStringSubmatch(out)
	if l == nil {
		return r, fmt.Errorf("interop: no LAT line in the output\n%s", indent(out))
	}
	for _, f := range strings.Fields(l[1]) {
		us, n, _ := strings.Cut(f, ":")
		b := LatencyBucket{}
		b.Micros, _ = strconv.ParseInt(us, 10, 64)
		b.Count, _ = strconv.ParseInt(n, 10, 64)
		r.Latency = append(r.Latency, b)
	}
	return r, nil
}

// LatencyRound rounds µs down to the three significant digits of LAT.
func LatencyRound(micros int64) int64 {
	scale := int64(1)
	for micros/scale >= 1000 {
		scale *= 10
	}
	return micros / scale * scale
}

// WriteBench prints r as the BENCH and LAT lines, for Go programs that
// speak the protocol; equal latencies are summed.
func WriteBench(w io.Writer, r BenchResult) error {
	sum := map[int64]int64{}
	for _, x := range r.Latency {
		sum[x.Micros] += x.Count
	}
	us := make([]int64, 0, len(sum))
	for v := range sum {
		us = append(us, v)
	}
	sort.Slice(us, func(i, j int) bool { return us[i] < us[j] })
	var b strings.Builder
	fmt.Fprintf(&b, "BENCH cycles=%d errors=%d window_ns=%d\nLAT", r.Cycles, r.Errors, r.Window.Nanoseconds())
	for _, v := range us {
		fmt.Fprintf(&b, " %d:%d", v, sum[v])
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
