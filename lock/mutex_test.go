package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// seqOf is the sequence number a lease's node carries.
func seqOf(t testing.TB, l *lock.Lease) int64 {
	t.Helper()
	node := l.Node()
	n, err := strconv.ParseInt(node[len(node)-10:], 10, 64)
	if err != nil {
		t.Fatalf("node %q: %v", node, err)
	}
	return n
}

// One engine's acquisitions exclude each other and are granted in queue
// order: each with a node of its own, in the order of the nodes; passing a
// node among them, in the order of the nodes that carried them, each
// node's holders with growing tokens.
func TestMutexExcludesAndGrantsInQueueOrder(t *testing.T) {
	for _, mode := range queueModes {
		t.Run(mode.name, func(t *testing.T) { excludesInQueueOrder(t, mode.cfg) })
	}
}

func excludesInQueueOrder(t *testing.T, cfg engine.Config) {
	eng := startEngine(t, cfg)
	m := lock.NewMutex(eng, lockRoot(t)+"/one")
	ctx := context.Background()

	const workers, rounds = 50, 20
	var (
		inside     atomic.Int32
		violations atomic.Int32
		mu         sync.Mutex
		seqs       []int64
		tokens     []int64
		wg         sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for range rounds {
				lease, err := m.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					violations.Add(1)
				}
				mu.Lock()
				seqs = append(seqs, seqOf(t, lease))
				tokens = append(tokens, lease.Token())
				mu.Unlock()
				runtime.Gosched()
				inside.Add(-1)
				if err := lease.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d overlapping holders", v)
	}
	if len(seqs) != workers*rounds {
		t.Fatalf("%d grants, want %d", len(seqs), workers*rounds)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] < seqs[i-1] || seqs[i] == seqs[i-1] && cfg.Cohort.StrictFIFO {
			t.Fatalf("grant %d went to node %d after node %d: not in queue order", i, seqs[i], seqs[i-1])
		}
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("grant %d has token %d after %d: not increasing", i, tokens[i], tokens[i-1])
		}
	}
}

// pendingAcquisitions queues paths×perPath acquisitions from one goroutine,
// waits until every path has a holder and every waiter has armed its watch,
// and returns the goroutines the process runs beyond its baseline then.
func pendingAcquisitions(t *testing.T, cfg engine.Config, paths, perPath int) (extra int, futures []*engine.Future[*lock.Lease]) {
	eng := startEngine(t, cfg)
	root := lockRoot(t)
	ctx := context.Background()
	runtime.GC()
	baseline := runtime.NumGoroutine()
	before := eng.Stats()

	for i := range paths * perPath {
		m := lock.NewMutex(eng, fmt.Sprintf("%s/p%03d", root, i%paths))
		futures = append(futures, m.Acquire(ctx))
	}
	var granted atomic.Int32
	for _, f := range futures {
		f.Then(func(*lock.Lease, error) { granted.Add(1) })
	}
	// A waiter of its own node watches the one ahead; waiters passed a
	// node wait in their cohort, without a watch.
	waiters := uint64(paths * (perPath - 1))
	eventually(t, "every holder granted and every waiter watching or in its cohort", func() bool {
		if cfg.Cohort.StrictFIFO {
			return granted.Load() == int32(paths) && waits(eng.Stats())-waits(before) >= waiters
		}
		return granted.Load() == int32(paths) && uint64(max(eng.CohortStats().Waiting, 0)) == waiters
	})
	time.Sleep(50 * time.Millisecond) // let the last callbacks' goroutines end
	extra = runtime.NumGoroutine() - baseline
	t.Logf("%d pending acquisitions (%d paths): %d goroutines above baseline %d", paths*perPath, paths, extra, baseline)
	return extra, futures
}

func TestPendingAcquisitionsCostNoGoroutines(t *testing.T) {
	for _, c := range []struct{ paths, perPath int }{{200, 10}, {100, 100}} {
		for _, mode := range queueModes {
			t.Run(fmt.Sprintf("%s/%dx%d", mode.name, c.paths, c.perPath), func(t *testing.T) {
				pendingCostNoGoroutines(t, mode.cfg, c.paths, c.perPath)
			})
		}
	}
}

func pendingCostNoGoroutines(t *testing.T, cfg engine.Config, paths, perPath int) {
	extra, futures := pendingAcquisitions(t, cfg, paths, perPath)
	if extra > 64 {
		t.Errorf("%d goroutines above baseline with %d acquisitions pending; want at most 64", extra, len(futures))
	}
	// Drain: every holder releases, and each waiter in turn.
	ctx := context.Background()
	var released sync.WaitGroup
	for _, f := range futures {
		released.Add(1)
		f.Then(func(l *lock.Lease, err error) {
			defer released.Done()
			if err != nil {
				t.Error(err)
				return
			}
			if err := l.Release(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	released.Wait()
}

func TestPipelineThroughFutures(t *testing.T) {
	// 2,000 acquisitions over 200 paths, issued from one goroutine and
	// finished in callbacks; the goroutine count stays bounded throughout.
	eng := startEngine(t, engine.Config{})
	root := lockRoot(t)
	ctx := context.Background()
	runtime.GC()
	baseline := runtime.NumGoroutine()
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			if n := int64(runtime.NumGoroutine()); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})

	const total, paths = 2000, 200
	var done sync.WaitGroup
	var granted atomic.Int32
	for i := range total {
		done.Add(1)
		m := lock.NewMutex(eng, fmt.Sprintf("%s/p%03d", root, i%paths))
		m.Acquire(ctx).Then(func(l *lock.Lease, err error) {
			if err != nil {
				t.Error(err)
				done.Done()
				return
			}
			granted.Add(1)
			l.ReleaseAsync().Then(func(_ struct{}, err error) {
				if err != nil {
					t.Error(err)
				}
				done.Done()
			})
		})
	}
	done.Wait()
	close(stop)
	sampler.Wait()
	if granted.Load() != total {
		t.Fatalf("%d granted, want %d", granted.Load(), total)
	}
	t.Logf("peak goroutines %d (baseline %d) for %d acquisitions", peak.Load(), baseline, total)
	// In flight at once: at most MaxInFlight requests, plus running callbacks.
	if limit := int64(baseline + 256 + paths); peak.Load() > limit {
		t.Errorf("peak %d goroutines, above %d", peak.Load(), limit)
	}
}

func TestCancelStormLeavesNoNodes(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	root := lockRoot(t)
	conn := inspect(t, shared.Addr())
	bg := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))

	const paths, waiters = 10, 20
	var holders []*lock.Lease
	for p := range paths {
		l, err := lock.NewMutex(eng, fmt.Sprintf("%s/p%d", root, p)).Lock(bg)
		if err != nil {
			t.Fatal(err)
		}
		holders = append(holders, l)
	}
	type waiter struct {
		f      *engine.Future[*lock.Lease]
		cancel context.CancelFunc
	}
	var ws []waiter
	for i := range paths * waiters {
		ctx, cancel := context.WithCancel(bg)
		m := lock.NewMutex(eng, fmt.Sprintf("%s/p%d", root, i%paths))
		ws = append(ws, waiter{m.Acquire(ctx), cancel})
		if rng.IntN(4) == 0 {
			cancel() // some cancel before their create is even answered
		}
	}
	// Half of all waiters cancel, at random moments.
	var storm sync.WaitGroup
	for i, w := range ws {
		if i%2 == 0 {
			delay := time.Duration(rng.IntN(30)) * time.Millisecond
			storm.Go(func() {
				time.Sleep(delay)
				w.cancel()
			})
		}
	}
	storm.Wait()
	for _, l := range holders {
		if err := l.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
	// The rest acquire in queue order, which need not be the order they
	// were asked in (creates race), so each releases as soon as it is granted.
	errs := make(chan error, len(ws))
	for _, w := range ws {
		w.f.Then(func(l *lock.Lease, err error) {
			switch {
			case errors.Is(err, context.Canceled):
				errs <- nil
			case err != nil:
				errs <- err
			default:
				errs <- l.Release(bg)
			}
		})
	}
	for range ws {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range ws {
		w.cancel()
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

func TestTryAcquire(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	root := lockRoot(t)
	conn := inspect(t, shared.Addr())
	ctx := context.Background()
	m := lock.NewMutex(eng, root+"/try")

	held, err := m.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("uncontended try: %v", err)
	}
	if _, err := m.TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("contended try: %v, want ErrWouldBlock", err)
	}
	if n := lockNodes(t, conn, root); n != 1 {
		t.Fatalf("%d nodes after a failed try, want only the holder's", n)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := m.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("try after release: %v", err)
	}
	again.Release(ctx)
}

func TestReleaseTwiceIsNotHeld(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	ctx := context.Background()
	l, err := lock.NewMutex(eng, lockRoot(t)+"/x").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, engine.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
}

func TestInvalidPathsRejectedWithoutRequests(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	ctx := context.Background()
	before := eng.Stats()
	for _, p := range []string{"", "relative", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/nul\x00", "/ctl\x01x",
		"/" + strings.Repeat("x", 1024), "/zookeeper/quota", "/"} {
		_, err := lock.NewMutex(eng, p).Lock(ctx)
		if !errors.Is(err, engine.ErrInvalidPath) {
			t.Errorf("path %q: %v, want ErrInvalidPath", p, err)
		}
		if _, err := lock.NewMutex(eng, p).TryAcquire(ctx); !errors.Is(err, engine.ErrInvalidPath) {
			t.Errorf("try path %q: %v, want ErrInvalidPath", p, err)
		}
	}
	if after := eng.Stats(); after != before {
		t.Fatalf("invalid paths sent requests: %+v → %+v", before, after)
	}
}

// An uncontended cycle costs a create, a listing and a delete; once the
// engine has pinned the path, a create and a delete (the listing-free
// cycle). With NoPin, always three: the path stays (the engine leaves
// its deletion to the server), so each create after the first lists.
func TestUncontendedCycleCosts(t *testing.T) {
	t.Run("pinned", func(t *testing.T) { uncontendedCycleCost(t, engine.Config{}, 2) })
	t.Run("no-pin", func(t *testing.T) { uncontendedCycleCost(t, engine.Config{NoPin: true}, 3) })
}

func uncontendedCycleCost(t *testing.T, cfg engine.Config, perCycle uint64) {
	eng := startEngine(t, cfg)
	m := lock.NewMutex(eng, lockRoot(t)+"/cycle")
	ctx := context.Background()
	cycle := func() {
		l, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	first := eng.Stats()
	cycle() // the first use of a path also creates its parents
	for range 3 {
		cycle() // the second pins the path; the third's listing shows the pin
	}
	before := eng.Stats()
	t.Logf("first cycle: %d requests (%+v)", before.Requests()-first.Requests(), before)
	const n = 100
	for range n {
		cycle()
	}
	after := eng.Stats()
	got := after.Requests() - before.Requests()
	t.Logf("%d cycles: %d requests, %.2f per cycle", n, got, float64(got)/n)
	if got != perCycle*n {
		t.Fatalf("%d requests for %d uncontended cycles, want %d (%d a cycle): %+v", got, n, perCycle*n, perCycle, after)
	}
}

// A burst of contenders on a path that does not exist yet creates its
// parents once, not once per contender.
func TestMissingParentsCreatedOncePerBurst(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	m := lock.NewMutex(eng, lockRoot(t)+"/a/b/c")
	ctx := context.Background()
	const n = 50
	errs := make(chan error, n)
	for range n {
		m.Acquire(ctx).Then(func(l *lock.Lease, err error) {
			if err == nil {
				err = l.Release(ctx)
			}
			errs <- err
		})
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// The path is made with the first node: a multi of the node and c,
	// refused while c's parent is missing, is sent again with one level
	// more, so making /test, root, a, b and c costs at most five multis,
	// carrying 1+2+3+4+5 container creates.
	s := eng.Stats()
	t.Logf("%d contenders: %+v", n, s)
	if s.Multis > 5 || s.ParentCreates > 15 {
		t.Fatalf("%d multis, %d container creates for one burst on one missing path, want at most 5 and 15", s.Multis, s.ParentCreates)
	}
}

// When the holder and the next waiter share an engine, the waiter is
// granted on the reply to the holder's delete, without listing again; the
// tokens still grow.
//
// Without lock cohorting: with it, the lock would pass without a delete.
func TestLocalHandoffSkipsTheListing(t *testing.T) {
	eng := startEngine(t, strictFIFO)
	m := lock.NewMutex(eng, lockRoot(t)+"/handoff")
	ctx := context.Background()
	first, err := m.Lock(ctx) // the path exists from here on
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var fs []*engine.Future[*lock.Lease]
	for range n {
		fs = append(fs, m.Acquire(ctx))
	}
	eventually(t, "every waiter watching", func() bool { s := eng.Stats(); return s.Watches+s.LocalWatches == n })
	before := eng.Stats()
	prev := first.Token()
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Queue order is creation order, which need not be the order above.
	// Each callback releases after it reports its token; the test waits for
	// every release too, or the last could meet the engine's Close.
	tokens := make(chan int64, n)
	var released sync.WaitGroup
	released.Add(n)
	for _, f := range fs {
		f.Then(func(l *lock.Lease, err error) {
			defer released.Done()
			if err != nil {
				t.Error(err)
				tokens <- 0
				return
			}
			tokens <- l.Token()
			if err := l.Release(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	for range n {
		tok := <-tokens
		if tok <= prev {
			t.Fatalf("token %d after %d: fencing tokens must grow", tok, prev)
		}
		prev = tok
	}
	released.Wait()
	after := eng.Stats()
	lists := after.Lists - before.Lists
	t.Logf("%d handoffs: %d lists, %d deletes; waits: %d on the server, %d local", n, lists,
		after.Deletes-before.Deletes, after.Watches, after.LocalWatches)
	if lists != 0 {
		t.Fatalf("%d listings for %d handoffs within one engine, want 0", lists, n)
	}
	if after.Watches != 0 {
		t.Fatalf("%d watches asked of the server, want 0: every node waited on is this engine's", after.Watches)
	}
}

// Creates and deletes issued while earlier ones are in flight go out
// together as multi requests, and every acquisition still gets its own
// node and lease.
func TestConcurrentWritesGoOutTogether(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	ctx := context.Background()
	const n = 50
	for i := range n { // the paths exist from here on
		l, err := lock.NewMutex(eng, fmt.Sprintf("%s/p%d", root, i)).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
	}
	before := eng.Stats()
	errs := make(chan error, n)
	for i := range n {
		lock.NewMutex(eng, fmt.Sprintf("%s/p%d", root, i)).Acquire(ctx).Then(func(l *lock.Lease, err error) {
			if err == nil {
				err = l.Release(ctx)
			}
			errs <- err
		})
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	after := eng.Stats()
	multis, batched := after.Multis-before.Multis, after.Batched-before.Batched
	ops := (after.Creates - before.Creates) + (after.Deletes - before.Deletes)
	t.Logf("%d creates and deletes, %d of them in %d multi requests; %d requests in all",
		ops, batched, multis, after.Requests()-before.Requests())
	if ops != 2*n {
		t.Fatalf("%d creates and deletes for %d cycles, want %d", ops, n, 2*n)
	}
	if multis == 0 || batched <= multis {
		t.Fatalf("%d multi requests carrying %d writes: concurrent writes were not sent together", multis, batched)
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

// The two-process test: the test binary runs itself twice as a child.
const childEnv = "TURNSTILE_TEST_CHILD"

func TestTwoProcessesExclude(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	witness := filepath.Join(dir, "witness")
	path := lockRoot(t) + "/procs"
	var cmds []*exec.Cmd
	for i := range 2 {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), childEnv+"=1", "CHILD_ZK="+shared.Addr(), "CHILD_PATH="+path,
			"CHILD_WITNESS="+witness, "CHILD_ID="+strconv.Itoa(i))
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("child%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("child%d.log", i)))
			t.Fatalf("child %d: %v\n%s", i, err, log)
		}
	}
	for i := range cmds {
		log, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("child%d.log", i)))
		if !strings.Contains(string(log), "acquisitions=30 violations=0") {
			t.Fatalf("child %d: %s", i, log)
		}
	}
}

// runChild is the child's body: 30 holds of the lock, each proven exclusive
// by creating the witness file with O_EXCL.
func runChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{os.Getenv("CHILD_ZK")}})
	if err != nil {
		fmt.Println(err)
		return 2
	}
	defer eng.Close()
	m := lock.NewMutex(eng, os.Getenv("CHILD_PATH"), lock.WithOwner("child-"+os.Getenv("CHILD_ID")))
	witness := os.Getenv("CHILD_WITNESS")
	violations := 0
	for range 30 {
		l, err := m.Lock(ctx)
		if err != nil {
			fmt.Println(err)
			return 2
		}
		f, err := os.OpenFile(witness, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			violations++
		} else {
			f.Close()
			time.Sleep(2 * time.Millisecond)
			os.Remove(witness)
		}
		if err := l.Release(ctx); err != nil {
			fmt.Println(err)
			return 2
		}
	}
	fmt.Printf("acquisitions=30 violations=%d\n", violations)
	if violations > 0 {
		return 1
	}
	return 0
}
