//go:build unix

package interop_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/internal/interop"
)

func TestBenchLinesRoundTrip(t *testing.T) {
	in := interop.BenchResult{Cycles: 7, Errors: 1, Window: 1500 * time.Millisecond,
		Latency: []interop.LatencyBucket{{Micros: 1230, Count: 5}, {Micros: 87, Count: 1}, {Micros: 87, Count: 1}}}
	var b bytes.Buffer
	if err := interop.WriteBench(&b, in); err != nil {
		t.Fatal(err)
	}
	out, err := interop.ParseBench("noise\n" + b.String() + "RESULT acquisitions=9 violations=0\n")
	if err != nil {
		t.Fatal(err)
	}
	if out.Cycles != 7 || out.Errors != 1 || out.Window != in.Window || len(out.Latency) != 2 ||
		out.Latency[0] != (interop.LatencyBucket{Micros: 87, Count: 2}) || out.Latency[1] != in.Latency[0] { // merged, ascending
		t.Errorf("parsed %+v from\n%s", out, b.String())
	}
	if _, err := interop.ParseBench("RESULT acquisitions=9 violations=0\n"); err == nil {
		t.Errorf("no BENCH line parsed without an error")
	}
	for us, want := range map[int64]int64{0: 0, 999: 999, 1000: 1000, 1234: 1230, 98765: 98700, 1234567: 1230000} {
		if got := interop.LatencyRound(us); got != want {
			t.Errorf("LatencyRound(%d) = %d, want %d", us, got, want)
		}
	}
}

// TestPeerBench runs each peer in bench mode, workers on paths of their
// own: the window's lines come in order, every recorded cycle is in the
// latencies, at the protocol's precision, and the window lasts at least
// the duration asked for.
func TestPeerBench(t *testing.T) {
	for name, start := range map[string]func(*testing.T) starter{"curator": curatorStarter, "kazoo": kazooStarter} {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			cfg := interop.PeerConfig{
				Connect: zookeeper(t), Path: lockPath(t), Recipe: "mutex", Workers: 3, Paths: 2,
				Iterations: 1 << 30, Duration: 1500 * time.Millisecond, Bench: true, Warmup: 200 * time.Millisecond,
				Witness: t.TempDir() + "/witness", Timeout: peerTimeout,
			}
			p := startPeers(t, ctx, start(t), 1, cfg)[0]
			for _, line := range []string{interop.BenchStartLine, interop.BenchEndLine} {
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				_, err := p.WaitLine(wctx, line)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
			}
			res := waitAll(t, p)[0]
			if res.Violations != 0 {
				t.Errorf("%d violations", res.Violations)
			}
			if s, e := strings.Index(res.Output, interop.BenchStartLine), strings.Index(res.Output, interop.BenchEndLine); s < 0 || e < s {
				t.Errorf("BENCH-START at %d, BENCH-END at %d", s, e)
			}
			b, err := interop.ParseBench(res.Output)
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			for _, l := range b.Latency {
				n += l.Count
				if interop.LatencyRound(l.Micros) != l.Micros || l.Micros <= 0 {
					t.Errorf("latency %d µs is not rounded to 3 digits", l.Micros)
				}
			}
			if b.Cycles <= 0 || n != b.Cycles || b.Errors != 0 {
				t.Errorf("cycles %d, latencies recorded %d, errors %d", b.Cycles, n, b.Errors)
			}
			if b.Window < cfg.Duration || int64(res.Acquisitions) < b.Cycles {
				t.Errorf("window %v (asked %v), acquisitions %d < cycles %d", b.Window, cfg.Duration, res.Acquisitions, b.Cycles)
			}
		})
	}
}
