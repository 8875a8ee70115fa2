package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// turnstileImpl is the library under test: one engine (one session, one
// loop goroutine) shared by every worker of the run. By default, workers
// waiting for one lock pass a granted node among themselves (lock
// cohorting); strictFIFO ("turnstile-fifo") has each queue a node of its
// own, as the other libraries do; deletePaths ("turnstile-delpaths") sets
// Config.DeleteLockPaths, for keys locked once. sqlFence
// ("turnstile-sqlfence") is the same lock, whose holders check their token
// with package sqlfence in every transaction on the pause fault's
// PostgreSQL account (pause_pg.go); plain turnstile's holders write it
// unfenced.
type turnstileImpl struct{ strictFIFO, deletePaths, sqlFence bool }

func (i turnstileImpl) Name() string {
	switch {
	case i.strictFIFO:
		return "turnstile-fifo"
	case i.deletePaths:
		return "turnstile-delpaths"
	case i.sqlFence:
		return "turnstile-sqlfence"
	}
	return "turnstile"
}
func (turnstileImpl) Excludes() bool       { return true }
func (turnstileImpl) Backend() backendKind { return zookeeperBackend }

func (i turnstileImpl) Supports(workload string, faults faultSet) error {
	if workload == "twoproc" && len(faults) > 0 {
		return unsupported(i.Name(), "-faults with -workload twoproc", "its second process runs outside the harness's fault injection")
	}
	if i.sqlFence && !faults.has("pause") {
		return unsupported(i.Name(), "a run without -faults pause", "it is turnstile, fencing the pause fault's PostgreSQL account")
	}
	return nil
}

// sqlFenced: impl name's holders fence the PostgreSQL account.
func sqlFenced(name string) bool { return name == "turnstile-sqlfence" }

func (i turnstileImpl) Open(ctx context.Context, o openOptions) (client, error) {
	cfg := turnstileConfig(o.Servers, o.SessionTimeout, o.MaxInFlight, i.strictFIFO, i.deletePaths, o.Logger)
	cfg.Cohort.Linger = o.Linger
	eng, err := engine.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &turnstileClient{eng: eng, owner: string(o.Marker), strictFIFO: i.strictFIFO}, nil
}

// turnstileConfig is the engine of a run, the harness's and the plain
// program's alike.
func turnstileConfig(servers []string, sessionTimeout time.Duration, maxInFlight int, strictFIFO, deletePaths bool, logger *slog.Logger) engine.Config {
	return engine.Config{
		Servers:         servers,
		SessionTimeout:  sessionTimeout,
		MaxInFlight:     maxInFlight,
		Logger:          logger,
		Cohort:          engine.CohortConfig{StrictFIFO: strictFIFO},
		DeleteLockPaths: deletePaths,
	}
}

type turnstileClient struct {
	eng        *engine.Engine
	owner      string
	strictFIFO bool
}

func (c *turnstileClient) Mutex(path string) (locker, error) {
	return turnstileLocker{m: lock.NewMutex(c.eng, path, lock.WithOwner(c.owner))}, nil
}

func (c *turnstileClient) RWMutex(path string) (rwLocker, error) {
	rw := lock.NewRWMutex(c.eng, path, lock.WithOwner(c.owner))
	return turnstileRWLocker{r: turnstileLocker{ownerPerAcquisition{rw, false}}, w: turnstileLocker{ownerPerAcquisition{rw, true}}}, nil
}

// ownerPerAcquisition makes each acquisition its own RWMutex owner: the
// harness's workers share a locker, and never nest their holds.
type ownerPerAcquisition struct {
	rw    *lock.RWMutex
	write bool
}

func (o ownerPerAcquisition) Acquire(ctx context.Context) *engine.Future[*engine.Lease] {
	if o.write {
		return o.rw.Owner().Writer().Acquire(ctx)
	}
	return o.rw.Owner().Reader().Acquire(ctx)
}

func (c *turnstileClient) Semaphore(path string, n int) (locker, error) {
	s, err := lock.NewSemaphore(c.eng, path, n, lock.WithOwner(c.owner))
	if err != nil {
		return nil, err
	}
	return turnstileLocker{s}, nil
}

func (c *turnstileClient) Requests() int64 { return int64(c.eng.Stats().Requests()) }

// Waits counts the waits armed: watches on the server, waits on a node of
// the engine's own, and acquisitions queued in a cohort behind one.
func (c *turnstileClient) Waits() int64 {
	s := c.eng.Stats()
	return int64(s.Watches+s.LocalWatches) + c.eng.CohortStats().Waiting
}

// NodesFor: with cohorting, waiters behind a holder of the same engine
// queue without a node; they have the holder's.
func (c *turnstileClient) NodesFor(waiters int) int {
	if c.strictFIFO {
		return waiters + 1
	}
	return 1
}
func (c *turnstileClient) Close() error { return c.eng.Close() }

// Cohort says what lock cohorting did in the run, for the table's notes.
func (c *turnstileClient) Cohort() string { return cohortNote(c.eng.CohortStats()) }

// cohortNote is a run's lock cohorting in one line: the harness's own
// and a plain turnstile program's (printed on a COHORT line).
func cohortNote(s engine.CohortStats) string {
	return fmt.Sprintf("cohort: %d nodes granted, %d passes, given back %d times to another client and %d times at a bound, renewed %d times past MaxHold",
		s.Carriers, s.Passes, s.Yielded, s.Bounded, s.Renewed)
}

// futureAcquirer is what every turnstile recipe offers: an acquisition that
// returns a future at once.
type futureAcquirer interface {
	Acquire(ctx context.Context) *engine.Future[*engine.Lease]
}

// turnstileLocker adapts any turnstile recipe to locker and asyncLocker.
type turnstileLocker struct{ m futureAcquirer }

func (l turnstileLocker) Acquire(ctx context.Context) (held, error) {
	f := l.m.Acquire(ctx)
	// The engine resolves the future when ctx ends, so waiting on Done alone
	// never drops a lease granted at the moment ctx ended.
	<-f.Done()
	lease, _, err := f.Result()
	if err != nil {
		return nil, err
	}
	return turnstileHeld{lease}, nil
}

// AcquireAsync queues the waiter in the engine and registers a callback:
// no goroutine exists for the waiter until it is granted.
func (l turnstileLocker) AcquireAsync(ctx context.Context, cb func(held, error)) {
	l.m.Acquire(ctx).Then(func(lease *engine.Lease, err error) {
		if err != nil {
			cb(nil, err)
			return
		}
		cb(turnstileHeld{lease}, nil)
	})
}

type turnstileHeld struct{ l *engine.Lease }

func (h turnstileHeld) Token() (int64, bool)              { return h.l.Token(), true }
func (h turnstileHeld) Lost() <-chan struct{}             { return h.l.Lost() }
func (h turnstileHeld) Release(ctx context.Context) error { return h.l.Release(ctx) }

// turnstileRWLocker is a read-write recipe as two lockers.
type turnstileRWLocker struct{ r, w turnstileLocker }

func (l turnstileRWLocker) Reader() locker { return l.r }
func (l turnstileRWLocker) Writer() locker { return l.w }
