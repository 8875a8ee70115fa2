package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"

	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/lock"
)

// BenchmarkLingerArrivalCurator: how long a Curator InterProcessMutex takes
// to acquire a lock path whose node a turnstile engine keeps after its
// release (Cohort.Linger), against a free path (the path there, no node on
// it), and against the same linger done by hand: a plain go-zookeeper
// session whose node waits under a children watch and is deleted as soon
// as the watch fires. The by-hand arrival is what the goal calls "one
// notification and one delete" longer than free, done with nothing in
// between; the engine's arrival may cost no more. On the same server it
// also times one delete and the notification it fires (a second session's
// exists watch on the node): the goal's yardstick. One Curator worker (the
// harness's driver, --each) takes keys <root>-0/0, 1, 2, ... one after the
// other, in fours: one held and released once by the engine beforehand,
// so that its node lingers; one made empty; one with the plain session's
// node; one made empty under a children watch whose firing starts one
// delete-and-notify, so that the yardstick is timed where an engine's
// delete would be, while the JVM and the server work as they do for an
// arrival. The kinds alternate, so that a noisy machine's drift falls on
// all alike, and each extra is the median of the differences within a four
// (a lingering arrival's time less the free one's next to it); the first
// warm keys of each kind (the JVM's JIT) are not counted. b.N is the
// arrivals of each kind. The same yardstick timed with nothing else on the
// server, half before the driver runs and half after, is reported too
// (delete+notify-idle). forceSync on, as the harness runs. Needs the
// Curator jars and a JDK (the interop peer's); skipped without them.
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

	// The linger by hand: deleter's node on each such key, deleted by a
	// goroutine of its own the moment the key's children watch fires.
	const (
		engineKind = iota // the engine's lingering node
		freeKind          // no node
		handKind          // the plain session's node
		yardKind          // no node; its watch starts a delete-and-notify
		kinds
	)
	var byHand errgroup.Group
	lingerByHand := func(p string) {
		node, err := deleter.conn.Create(p+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			b.Fatal(err)
		}
		_, _, ch, err := deleter.conn.ChildrenW(p)
		if err != nil {
			b.Fatal(err)
		}
		byHand.Go(func() error {
			<-ch
			return deleter.conn.Delete(node, -1)
		})
	}

	// The yardstick beside the arrivals: the watcher's children watch on
	// the key fires as Curator's node lands, and a goroutine then times the
	// deleter's delete of a node of its own until the watcher's exists
	// watch on it fires.
	var (
		yardMu sync.Mutex
		yard   []time.Duration
	)
	yardstick := func(p string, counted bool) {
		x := ndRoot + "/y" + path.Base(p)
		mustCreate(b, deleter.conn, x)
		ok, _, xch, err := watcher.conn.ExistsW(x)
		if err != nil || !ok {
			b.Fatalf("exists watch on %s: %v %v", x, ok, err)
		}
		_, _, ch, err := watcher.conn.ChildrenW(p)
		if err != nil {
			b.Fatal(err)
		}
		byHand.Go(func() error {
			<-ch
			start := time.Now()
			if err := deleter.conn.Delete(x, -1); err != nil {
				return err
			}
			if ev := <-xch; ev.Type != zk.EventNodeDeleted {
				return fmt.Errorf("watch on %s: %v", x, ev)
			}
			if counted {
				yardMu.Lock()
				yard = append(yard, time.Since(start))
				yardMu.Unlock()
			}
			return nil
		})
	}

	keys := kinds * (b.N + warm)
	const root = "/linger-curator/k"
	base := root + "-0"
	mustCreate(b, watcher.conn, base)
	for n := range keys {
		p := base + "/" + strconv.Itoa(n)
		switch n % kinds {
		case freeKind:
			mustCreate(b, watcher.conn, p)
			continue
		case handKind:
			mustCreate(b, watcher.conn, p)
			lingerByHand(p)
			continue
		case yardKind:
			mustCreate(b, watcher.conn, p)
			yardstick(p, n >= kinds*warm)
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
	var waits [kinds][]time.Duration
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	got := 0
	for sc.Scan() {
		var n int
		var us int64
		if _, err := fmt.Sscanf(sc.Text(), "EACH %d %d", &n, &us); err != nil {
			continue
		}
		got++
		if n >= kinds*warm {
			waits[n%kinds] = append(waits[n%kinds], time.Duration(us)*time.Microsecond)
		}
	}
	if got != keys {
		b.Fatalf("the driver timed %d acquisitions, want %d:\n%s", got, keys, out)
	}
	if err := byHand.Wait(); err != nil {
		b.Fatalf("the linger by hand: %v", err)
	}
	deleteAndNotify(b.N - b.N/2)
	if s := eng.CohortStats(); s.Yielded < uint64(b.N) {
		b.Fatalf("cohort stats %+v: fewer lingering nodes given back than Curator arrivals (%d)", s, b.N)
	}
	// The extras, before report sorts the waits.
	extra := func(kind int) (d []time.Duration) {
		for i, w := range waits[kind] {
			d = append(d, w-waits[freeKind][i])
		}
		slices.Sort(d)
		return d
	}
	engineExtra, handExtra := extra(engineKind), extra(handKind)
	report := func(name string, w []time.Duration) {
		slices.Sort(w)
		b.ReportMetric(float64(w[len(w)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(w[len(w)*99/100].Microseconds())/1000, name+"-p99-ms")
	}
	report("free", waits[freeKind])
	report("lingering", waits[engineKind])
	report("by-hand", waits[handKind])
	report("delete+notify", yard)
	report("delete+notify-idle", notify)
	b.ReportMetric(float64(engineExtra[len(engineExtra)/2].Microseconds())/1000, "extra-p50-ms")
	b.ReportMetric(float64(handExtra[len(handExtra)/2].Microseconds())/1000, "by-hand-extra-p50-ms")
}

// mustCreate makes a persistent node with no data.
func mustCreate(b *testing.B, c *zk.Conn, p string) {
	b.Helper()
	if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		b.Fatalf("create %s: %v", p, err)
	}
}
