package lock_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// (On an engine without lock cohorting, where the other owner waits on a
// node of its own: see TestReentrantMutexOwnersPassTheLock for the other.)
func TestReentrantMutexCountsPerOwner(t *testing.T) {
	eng := startEngine(t, strictFIFO)
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	r := lock.NewReentrantMutex(eng, root+"/re")
	ctx := context.Background()
	type job struct{ id int }
	owner := job{7}

	first, err := r.Lock(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	before := eng.Stats().Requests()
	for range 3 {
		again, err := r.Lock(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		if again != first {
			t.Fatal("a re-acquisition returned another lease")
		}
	}
	if got := eng.Stats().Requests() - before; got != 0 {
		t.Fatalf("re-acquiring cost %d ZooKeeper requests, want 0", got)
	}
	if n := r.Count(owner); n != 4 {
		t.Fatalf("count %d, want 4", n)
	}

	// Another owner waits while the first holds any count.
	other := r.Acquire(ctx, job{8})
	// Its node may still be on its way: wait for it before counting.
	eventually(t, "the other owner's node queued", func() bool { return lockNodes(t, conn, root) == 2 })
	for range 3 {
		if err := r.Release(ctx, owner); err != nil {
			t.Fatal(err)
		}
	}
	if n := lockNodes(t, conn, root); n != 2 || !pending(other) {
		t.Fatalf("after 3 of 4 releases: %d nodes, other owner granted: %v", n, !pending(other))
	}
	if err := r.Release(ctx, owner); err != nil {
		t.Fatal(err)
	}
	ol, err := other.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ol.Token() <= first.Token() {
		t.Fatalf("token %d after %d", ol.Token(), first.Token())
	}
	if err := r.Release(ctx, owner); !errors.Is(err, engine.ErrNotHeld) {
		t.Fatalf("one release too many: %v, want ErrNotHeld", err)
	}
	if err := r.Release(ctx, job{8}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

func TestReentrantMutexBadOwnersAndTry(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	r := lock.NewReentrantMutex(eng, lockRoot(t)+"/owners")
	ctx := context.Background()
	if _, err := r.Lock(ctx, nil); !errors.Is(err, lock.ErrInvalidOwner) {
		t.Fatalf("nil owner: %v, want ErrInvalidOwner", err)
	}
	if _, err := r.Lock(ctx, []int{1}); !errors.Is(err, lock.ErrInvalidOwner) {
		t.Fatalf("non-comparable owner: %v, want ErrInvalidOwner", err)
	}
	if err := r.Release(ctx, "nobody"); !errors.Is(err, engine.ErrNotHeld) {
		t.Fatalf("release by a non-holder: %v, want ErrNotHeld", err)
	}
	l, err := r.TryAcquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := r.TryAcquire(ctx, "a"); err != nil || again != l {
		t.Fatalf("the holder's try: %v", err)
	}
	if _, err := r.TryAcquire(ctx, "b"); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("another owner's try: %v, want ErrWouldBlock", err)
	}
	r.Release(ctx, "a")
	if err := r.Release(ctx, "a"); err != nil {
		t.Fatal(err)
	}
}

func TestReentrantMutexLostOnExpiry(t *testing.T) {
	ctx := context.Background()
	a, b, p := expiring(t)
	path := lockRoot(t) + "/expire"
	r := lock.NewReentrantMutex(a, path)
	l, err := r.Lock(ctx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	r.Lock(ctx, "owner")
	lostBeforeOthersGet(t, p, l, func() (*lock.Lease, error) { return lock.NewMutex(b, path).Lock(ctx) })
	if err := r.Release(ctx, "owner"); !errors.Is(err, engine.ErrLost) {
		t.Fatalf("release of a lost hold: %v, want ErrLost", err)
	}
	if n := r.Count("owner"); n != 0 {
		t.Fatalf("count %d after the loss, want 0", n)
	}
}

// Children of the lock path that no client names are ignored: the lock
// works around them. Each is logged once, through the engine's logger and
// never the process-wide default one. (The waiter queues a node of its own,
// and lists the path, with lock cohorting off.)
func TestForeignChildrenIgnored(t *testing.T) {
	var global, own logRecords
	prev := slog.Default()
	slog.SetDefault(slog.New(&global))
	t.Cleanup(func() { slog.SetDefault(prev) })
	cfg := strictFIFO
	cfg.Logger = slog.New(&own)
	eng := startEngine(t, cfg)
	conn := inspect(t, shared.Addr())
	path := lockRoot(t) + "/foreign"
	ctx := context.Background()
	l, err := lock.NewMutex(eng, path).Lock(ctx) // creates the path
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"_c_", "_c_short-lock-", "lock-notanumber", "readme", "x-lock-0000000001-extra"} {
		if _, err := conn.Create(path+"/"+name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	waiting := lock.NewMutex(eng, path).Acquire(ctx)
	l.Release(ctx)
	next, err := waiting.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next.Release(ctx)
	if n := global.total(); n != 0 {
		t.Errorf("%d foreign children logged through slog.Default", n)
	}
	for _, name := range []string{"_c_", "_c_short-lock-", "lock-notanumber", "readme", "x-lock-0000000001-extra"} {
		if n := own.count(name); n != 1 {
			t.Errorf("foreign child %q logged %d times through Config.Logger, want once", name, n)
		}
	}
}

// logRecords is a slog.Handler that keeps every record's "child"
// attribute.
type logRecords struct {
	mu       sync.Mutex
	children []string
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "child" {
			h.children = append(h.children, a.Value.String())
		}
		return true
	})
	return nil
}

func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

// count is how many records named child.
func (h *logRecords) count(child string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.children {
		if c == child {
			n++
		}
	}
	return n
}

// total is how many records named a child.
func (h *logRecords) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.children)
}

func TestReentrantMutexCancelLeavesNoNode(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	r := lock.NewReentrantMutex(eng, root+"/cancel")
	ctx := context.Background()
	if _, err := r.Lock(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	before := eng.Stats()
	f := r.Acquire(cctx, "b")
	queued(t, eng, before, 1)
	cancel()
	if _, err := f.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquisition: %v", err)
	}
	if n := r.Count("b"); n != 0 {
		t.Fatalf("count %d after a cancelled acquisition", n)
	}
	eventually(t, "only the holder's node", func() bool { return lockNodes(t, conn, root) == 1 })
	if err := r.Release(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

// A second acquisition by an owner whose first one still waits keeps to
// what its caller asked: a try fails at once, a context of its own bounds
// it and gives its count back.
func TestReentrantMutexJoiningAWaitingAcquisition(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	r := lock.NewReentrantMutex(eng, lockRoot(t)+"/join")
	ctx := context.Background()
	holder, err := r.Lock(ctx, "holder")
	if err != nil {
		t.Fatal(err)
	}
	before := eng.Stats()
	first := r.Acquire(ctx, "owner")
	queued(t, eng, before, 1)
	if _, err := r.TryAcquire(ctx, "owner"); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("try while the owner's acquisition waits: %v, want ErrWouldBlock", err)
	}
	jctx, cancel := context.WithCancel(ctx)
	joined := r.Acquire(jctx, "owner")
	cancel()
	if _, err := joined.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("joined acquisition after its context ended: %v, want context.Canceled", err)
	}
	if err := r.Release(ctx, "holder"); err != nil {
		t.Fatal(err)
	}
	l, err := first.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Count("owner"); n != 1 {
		t.Fatalf("count %d, want 1: the cancelled join gave its count back", n)
	}
	if err := r.Release(ctx, "owner"); err != nil {
		t.Fatal(err)
	}
	if l.Held() {
		t.Fatal("the lease is still held after the owner's only release")
	}
	_ = holder
}

// Checks of ReentrantMutex beyond reentrant_mutex_test.go: an owner's second
// Acquire joins its pending first one, a release before the grant changes
// nothing, owners exclude each other under load, owners that cannot be map
// keys are refused everywhere, and an owner starts afresh after a loss.

// An owner asking again while its first acquisition waits joins it: one
// node, one request stream, a count of two once granted. (Waiting on a node
// of its own, with lock cohorting off.)
func TestReentrantMutexJoinsPendingAcquisition(t *testing.T) {
	eng := startEngine(t, strictFIFO)
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	r := lock.NewReentrantMutex(eng, root+"/join")
	ctx := context.Background()

	if _, err := r.Lock(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	before := eng.Stats()
	first := r.Acquire(ctx, "b")
	queued(t, eng, before, 1)
	requests := eng.Stats().Requests()
	second := r.Acquire(ctx, "b")
	if n := eng.Stats().Requests() - requests; n != 0 {
		t.Fatalf("joining cost %d requests, want 0", n)
	}
	if n := r.Count("b"); n != 0 {
		t.Fatalf("count %d while waiting, want 0", n)
	}
	// A release before the grant is refused and changes nothing.
	if err := r.Release(ctx, "b"); !errors.Is(err, engine.ErrNotHeld) {
		t.Fatalf("release while waiting: %v, want ErrNotHeld", err)
	}
	if n := lockNodes(t, conn, root); n != 2 {
		t.Fatalf("%d nodes, want the holder's and one waiter's", n)
	}

	if err := r.Release(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	l, err := first.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l2, err := second.Wait(ctx); err != nil || l2 != l {
		t.Fatalf("the joined acquisition: %v, %v; want the first one's lease", l2, err)
	}
	if n := r.Count("b"); n != 2 {
		t.Fatalf("count %d after the grant, want 2", n)
	}
	if err := r.Release(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if !l.Held() || lockNodes(t, conn, root) != 1 {
		t.Fatal("the first of two releases gave the lock up")
	}
	if err := r.Release(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
	if err := r.Release(ctx, "b"); !errors.Is(err, engine.ErrNotHeld) {
		t.Fatalf("third release: %v, want ErrNotHeld", err)
	}
}

// Many owners over two engines, each nesting its acquisitions: at most one
// owner inside at any moment.
func TestReentrantMutexOwnersExcludeUnderLoad(t *testing.T) {
	a := startEngine(t, engine.Config{})
	b := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	path := root + "/load"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ra, rb := lock.NewReentrantMutex(a, path), lock.NewReentrantMutex(b, path)

	type worker struct{ n int }
	var inside, violations, entries atomic.Int32
	var wg sync.WaitGroup
	for i := range 10 {
		r := ra
		if i%2 == 1 {
			r = rb
		}
		owner := &worker{i} // pointers are comparable owners
		wg.Go(func() {
			for range 10 {
				outer, err := r.Lock(ctx, owner)
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					violations.Add(1)
				}
				entries.Add(1)
				inner, err := r.Lock(ctx, owner) // nested: no wait, same lease
				if err != nil || inner != outer {
					t.Errorf("nested acquisition: %v, same lease: %v", err, inner == outer)
				}
				time.Sleep(time.Millisecond)
				if err := r.Release(ctx, owner); err != nil {
					t.Error(err)
				}
				if !outer.Held() {
					violations.Add(1) // the inner release gave the lock up
				}
				inside.Add(-1)
				if err := r.Release(ctx, owner); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d entries, %d violations", entries.Load(), violations.Load())
	if violations.Load() != 0 {
		t.Fatalf("%d violations", violations.Load())
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

// Owners that are nil or not comparable are refused by every method,
// without a panic and without a request.
func TestReentrantMutexInvalidOwnersEverywhere(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	r := lock.NewReentrantMutex(eng, lockRoot(t)+"/bad")
	ctx := context.Background()
	type withSlice struct{ ids []int }
	type boxed struct{ v any } // a comparable type; this value is not
	var nilOwner any
	before := eng.Stats().Requests()
	for name, owner := range map[string]any{
		"nil":                         nilOwner,
		"slice":                       []int{1},
		"map":                         map[string]int{},
		"func":                        func() {},
		"struct with slice":           withSlice{ids: []int{1}},
		"array of non-comparable":     [1][]int{},
		"slice in an interface field": boxed{v: []int{1}},
	} {
		f := r.Acquire(ctx, owner)
		if _, done, err := f.Result(); !done || !errors.Is(err, lock.ErrInvalidOwner) {
			t.Errorf("%s: Acquire resolved=%v err=%v, want ErrInvalidOwner at once", name, done, err)
		}
		if _, err := r.TryAcquire(ctx, owner); !errors.Is(err, lock.ErrInvalidOwner) {
			t.Errorf("%s: TryAcquire %v", name, err)
		}
		if err := r.Release(ctx, owner); !errors.Is(err, lock.ErrInvalidOwner) {
			t.Errorf("%s: Release %v", name, err)
		}
		if n := r.Count(owner); n != 0 {
			t.Errorf("%s: Count %d", name, n)
		}
	}
	if n := eng.Stats().Requests() - before; n != 0 {
		t.Fatalf("refused owners cost %d requests", n)
	}
}

// After its lease is lost, an owner acquires afresh: a new lease, count 1.
func TestReentrantMutexOwnerStartsAgainAfterLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b, p := expiring(t)
	path := lockRoot(t) + "/again"
	r := lock.NewReentrantMutex(a, path)
	l, err := r.Lock(ctx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	lostBeforeOthersGet(t, p, l, func() (*lock.Lease, error) { return lock.NewMutex(b, path).Lock(ctx) })
	if n := r.Count("owner"); n != 0 {
		t.Fatalf("count %d after the loss, want 0", n)
	}
	again, err := r.Lock(ctx, "owner")
	if err != nil {
		t.Fatalf("acquire after the loss: %v", err)
	}
	if again == l || !again.Held() || again.Token() <= l.Token() {
		t.Fatalf("after the loss: a new held lease with a greater token, got same=%v held=%v token %d after %d",
			again == l, again.Held(), again.Token(), l.Token())
	}
	if n := r.Count("owner"); n != 1 {
		t.Fatalf("count %d, want 1", n)
	}
	if err := r.Release(ctx, "owner"); err != nil {
		t.Fatal(err)
	}
}
