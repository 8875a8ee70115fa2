package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/zktest"
	"github.com/turnstile-go/turnstile/lock"
)

// closeBound is how long a test waits for Close before it calls it hung: far
// beyond any Close that works (CloseTimeout is 5s by default).
const closeBound = 30 * time.Second

// startUnmanaged starts an engine whose Close the test calls itself: a
// cleanup that called it too would hang the run when Close hangs.
func startUnmanaged(t *testing.T) *engine.Engine {
	t.Helper()
	return zktest.StartEngine(t, shared.Addr(), engine.Config{})
}

// returnsWithin fails the test if done is not closed within closeBound.
func returnsWithin(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(closeBound):
		t.Fatalf("%s did not return within %v", what, closeBound)
	}
}

func TestCloseFromCallbackReturns(t *testing.T) {
	eng := startUnmanaged(t)
	ctx := context.Background()
	root := testRoot(t)
	waiting := lock.NewMutex(eng, root+"/b")
	held, err := waiting.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queued := waiting.Acquire(ctx) // resolves with ErrClosed when Close runs

	closed := make(chan struct{})
	var closeErr error
	lock.NewMutex(eng, root+"/a").Acquire(ctx).Then(func(l *engine.Lease, err error) {
		if err != nil {
			t.Errorf("acquire: %v", err)
		}
		closeErr = eng.Close()
		close(closed)
	})
	returnsWithin(t, "Close called from a Then callback", closed)
	if closeErr != nil {
		t.Errorf("Close: %v", closeErr)
	}
	if _, err := queued.Wait(ctx); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("waiter after Close: %v, want ErrClosed", err)
	}
	if !errors.Is(held.Err(), engine.ErrLost) {
		t.Errorf("lease after Close: %v, want lost", held.Err())
	}
	// Close again, now from the test: it returns too.
	again := make(chan struct{})
	go func() { eng.Close(); close(again) }()
	returnsWithin(t, "a second Close", again)
}

func TestCloseFromManyGoroutinesReturns(t *testing.T) {
	eng := startUnmanaged(t)
	ctx := context.Background()
	root := testRoot(t)
	m := lock.NewMutex(eng, root+"/a")
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	for range n {
		m.Acquire(ctx).Then(func(*engine.Lease, error) {}) // waiters, cancelled by Close
	}
	for range n {
		// Half from callbacks of futures that Close resolves, half from
		// goroutines of their own.
		wg.Add(2)
		m.Acquire(ctx).Then(func(*engine.Lease, error) { eng.Close(); wg.Done() })
		go func() { eng.Close(); wg.Done() }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	returnsWithin(t, "Close called from many goroutines at once", done)
}

// Then on futures of a closing engine, from several goroutines while Close
// runs (on futures Close resolves, and on resolved ones): no callback is
// lost, and Close returns. Repeated, since the calls must land during
// Close's wait.
func TestCloseConcurrentWithThenReturns(t *testing.T) {
	for range 10 {
		eng := startUnmanaged(t)
		ctx := context.Background()
		m := lock.NewMutex(eng, testRoot(t)+"/a")
		l, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		futures := []*engine.Future[*engine.Lease]{m.Acquire(ctx), m.Acquire(ctx)}
		release := l.ReleaseAsync()
		var (
			calls   sync.WaitGroup
			callers sync.WaitGroup
			stop    = make(chan struct{})
		)
		for range 4 {
			callers.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					for _, f := range futures {
						calls.Add(1)
						f.Then(func(*engine.Lease, error) { calls.Done() })
					}
					calls.Add(1)
					release.Then(func(struct{}, error) { calls.Done() })
				}
			})
		}
		closed := make(chan struct{})
		go func() { eng.Close(); close(closed) }()
		returnsWithin(t, "Close concurrent with Then", closed)
		close(stop)
		callers.Wait()
		ran := make(chan struct{})
		go func() { calls.Wait(); close(ran) }()
		returnsWithin(t, "every callback", ran)
		for _, f := range futures {
			if l, err := f.Wait(ctx); err == nil {
				l.Release(ctx)
			}
		}
	}
}
