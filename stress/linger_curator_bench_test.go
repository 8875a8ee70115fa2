package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/lock"
)

// BenchmarkLingerArrivalCurator: how long a Curator InterProcessMutex takes
// to acquire a lock path whose node a turnstile engine keeps after its
// release (Cohort.Linger), against a free path (the path there, no node on
// it); and, on the same server, one delete and the notification it fires
// (a second session's exists watch on the node), the cost the linger may
// add. One Curator worker (the harness's driver, --each) takes keys
// <root>-0/0, 1, 2, ... one after the other: even keys held and released
// once by the engine beforehand, so that its node lingers; odd keys made
// empty beforehand. The free and lingering arrivals alternate, so that a
// noisy machine's drift falls on both alike; the first warm keys of each
// kind (the JVM's JIT) are not counted. b.N is the arrivals of each kind;
// half the delete-and-notify samples are taken before the driver runs,
// half after. forceSync on, as the harness runs. Needs the Curator jars and
// a JDK (the interop peer's); skipped without them.
//
//	go test -run '^$' -bench LingerArrivalCurator -benchtime 300x ./stress
func BenchmarkLingerArrivalCurator(b *testing.B) {
	const warm = 50
	ctx := context.Background()
	dir := b.TempDir()
	cp, err := interop.BuildCurator(ctx, dir)
	if errors.Is(err, interop.ErrNotInstalled) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	java, err := javaPath()
	if err != nil {
		b.Skip(err)
	}
	src := filepath.Join(dir, "CuratorDriver.java")
	if err := os.WriteFile(src, curatorDriverSource, 0o644); err != nil {
		b.Fatal(err)
	}
	srv, eng := lingeringEngine(b, ctx, "-XX:TieredStopAtLevel=4")
	watcher, err := dialZK(ctx, []string{srv.Addr()}, 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer watcher.Close()
	deleter, err := dialZK(ctx, []string{srv.Addr()}, 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer deleter.Close()

	// One delete and its notification: the watcher sets an exists watch
	// on a node, the deleter deletes it; timed from the delete's call to
	// the watch's event.
	const ndRoot = "/linger-curator/nd"
	mustCreate(b, watcher.conn, "/linger-curator")
	mustCreate(b, watcher.conn, ndRoot)
	var notify []time.Duration
	deleteAndNotify := func(n int) {
		for i := range n {
			p := ndRoot + "/" + strconv.Itoa(len(notify)+i)
			mustCreate(b, watcher.conn, p)
			ok, _, ch, err := watcher.conn.ExistsW(p)
			if err != nil || !ok {
				b.Fatalf("exists watch on %s: %v %v", p, ok, err)
			}
			start := time.Now()
			if err := deleter.conn.Delete(p, -1); err != nil {
				b.Fatal(err)
			}
			if ev := <-ch; ev.Type != zk.EventNodeDeleted {
				b.Fatalf("watch on %s: %v", p, ev)
			}
			notify = append(notify, time.Since(start))
			time.Sleep(5 * time.Millisecond)
		}
	}

	keys := 2 * (b.N + warm)
	const root = "/linger-curator/k"
	base := root + "-0"
	mustCreate(b, watcher.conn, base)
	for n := range keys {
		p := base + "/" + strconv.Itoa(n)
		if n%2 == 1 {
			mustCreate(b, watcher.conn, p)
			continue
		}
		l, err := lock.NewMutex(eng, p).Acquire(ctx).Wait(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // every lingering node's watch asked and answered
	deleteAndNotify(b.N / 2)

	b.ResetTimer()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(dctx, java, "-XX:+UseSerialGC", "-Xms16m", "-Xmx256m", "-Xss512k", "-cp", cp, src,
		"--connect", srv.Addr(), "--path", root, "--keys", "--each", strconv.Itoa(keys))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	b.StopTimer()
	if err != nil {
		b.Fatalf("Curator driver: %v", err)
	}
	var waits [2][]time.Duration // free, lingering
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	got := 0
	for sc.Scan() {
		var n int
		var us int64
		if _, err := fmt.Sscanf(sc.Text(), "EACH %d %d", &n, &us); err != nil {
			continue
		}
		got++
		if n >= 2*warm {
			kind := 0
			if n%2 == 0 {
				kind = 1
			}
			waits[kind] = append(waits[kind], time.Duration(us)*time.Microsecond)
		}
	}
	if got != keys {
		b.Fatalf("the driver timed %d acquisitions, want %d:\n%s", got, keys, out)
	}
	deleteAndNotify(b.N - b.N/2)
	if s := eng.CohortStats(); s.Yielded < uint64(b.N) {
		b.Fatalf("cohort stats %+v: fewer lingering nodes given back than Curator arrivals (%d)", s, b.N)
	}
	report := func(name string, w []time.Duration) {
		slices.Sort(w)
		b.ReportMetric(float64(w[len(w)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(w[len(w)*99/100].Microseconds())/1000, name+"-p99-ms")
	}
	report("free", waits[0])
	report("lingering", waits[1])
	report("delete+notify", notify)
}

// mustCreate makes a persistent node with no data.
func mustCreate(b *testing.B, c *zk.Conn, p string) {
	b.Helper()
	if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		b.Fatalf("create %s: %v", p, err)
	}
}
