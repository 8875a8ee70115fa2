package interop

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Acquirer takes the lock under test for one in-process contender: worker
// is its number (0..Workers-1), write says which side of a read/write lock
// it wants (always true for a mutex, false for a semaphore). It returns the
// function that releases what it acquired.
//
// With turnstile, for example:
//
//	func(ctx context.Context, _ int, _ bool) (func(context.Context) error, error) {
//		l, err := lock.NewMutex(eng, path).Lock(ctx)
//		if err != nil {
//			return nil, err
//		}
//		return l.Release, nil
//	}
type Acquirer func(ctx context.Context, worker int, write bool) (release func(context.Context) error, err error)

// goWorkers numbers the witness files of in-process contenders, so that
// concurrent RunGo calls in one process never share Path.r.<pid>.<n>.
var goWorkers atomic.Int64

// RunGo is the Go counterpart of a peer process: cfg.Workers goroutines
// each loop cfg.Iterations times — acquire, witness check, hold, witness
// release, release — on the recipe cfg.Recipe names ("mutex",
// "semaphore-mutex", "rw", "read", "write", "semaphore" with cfg.Leases,
// "latch": a leader election's terms),
// with the same witness protocol as the peers. Connect and Path are not
// used (acquire knows its lock). It returns when every worker is done, or
// gives up when ctx ends; the error is non-nil on a violation or a failed
// acquire or release, and Result.Output lists them.
func RunGo(ctx context.Context, cfg PeerConfig, acquire Acquirer) (Result, error) {
	workers, leases := cfg.Workers, cfg.Leases
	if workers <= 0 {
		workers = 1
	}
	if leases <= 0 {
		leases = 1
	}
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	var w *Witness
	if cfg.Witness != "" {
		var err error
		if w, err = NewWitness(cfg.Witness); err != nil {
			return Result{}, err
		}
	}

	var (
		mu           sync.Mutex
		log          strings.Builder
		errs         []error
		acquisitions int
		violations   int
	)
	note := func(worker int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if errors.Is(err, ErrViolation) {
			violations++
			fmt.Fprintf(&log, "VIOLATION worker=%d: %v\n", worker, err)
			return
		}
		errs = append(errs, fmt.Errorf("worker %d: %w", worker, err))
		fmt.Fprintf(&log, "ERROR worker=%d: %v\n", worker, err)
	}

	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		id := int(goWorkers.Add(1)) // witness file number, unique in the process
		rng := rand.New(rand.NewSource(cfg.Seed*1_000_003 + int64(i)))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := 0; n < cfg.Iterations; n++ {
				write := cfg.Recipe != "semaphore" && cfg.Recipe != "read"
				if cfg.Recipe == "rw" {
					write = rng.Float64() < cfg.WriteRatio
				}
				release, err := acquire(ctx, i, write)
				if err != nil {
					note(i, fmt.Errorf("acquire: %w", err))
					return
				}
				mu.Lock()
				acquisitions++
				mu.Unlock()
				if w != nil {
					enter, exit := w.sides(cfg.Recipe, write, id, leases)
					if err := enter(); err != nil {
						note(i, err)
					}
					sleep(ctx, cfg.Hold)
					if err := exit(); err != nil {
						note(i, err)
					}
				} else {
					sleep(ctx, cfg.Hold)
				}
				// Release with a context of its own: the caller's may be
				// done, and the lock must still be given back.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				err = release(rctx)
				cancel()
				if err != nil {
					note(i, fmt.Errorf("release: %w", err))
					return
				}
			}
		}(i)
	}
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(&log, "RESULT acquisitions=%d violations=%d\n", acquisitions, violations)
	r := Result{Acquisitions: acquisitions, Violations: violations, Output: log.String()}
	if violations > 0 {
		errs = append(errs, fmt.Errorf("%w: %d witness violation(s)", ErrViolation, violations))
	}
	if len(errs) > 0 {
		r.ExitCode = 1
		return r, fmt.Errorf("interop: go contenders: %w", errors.Join(errs...))
	}
	return r, nil
}

// sides returns the witness entry and exit of one acquisition.
func (w *Witness) sides(recipe string, write bool, worker, leases int) (enter, exit func() error) {
	switch {
	case recipe == "semaphore":
		return func() error { return w.EnterSemaphore(worker, leases) },
			func() error { return w.ExitSemaphore(worker) }
	case recipe == "mutex" || recipe == "semaphore-mutex" || recipe == "latch": // one leader is one holder
		return w.AcquireMutex, w.ReleaseMutex
	case write:
		return w.EnterWrite, w.ExitWrite
	default:
		return func() error { return w.EnterRead(worker) },
			func() error { return w.ExitRead(worker) }
	}
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
