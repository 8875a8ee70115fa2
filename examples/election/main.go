// Command election runs three schedulers, each on an engine (a session) of
// its own, that elect one leader among them. Only the leader runs the job
// loop: it stops at once when its Lost() channel closes, and every job
// carries the term's fencing token to the store it writes, which refuses a
// token older than one it has seen. Each leader resigns after a few jobs and
// campaigns again, at the back. Midway, the leader of the moment is cut off
// ZooKeeper until its session expires: it stops within the Lost() deadline,
// before anyone else is elected, and rejoins once it is back.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/examples/internal/zkenv"
	"github.com/turnstile-go/turnstile/internal/netfault"
)

const (
	electionPath = "/examples/election/scheduler"
	terms        = 6 // the run ends after this many terms
	// A term is longer than the session: the leader cut off midway is
	// still in its job loop when Lost() closes.
	jobsPerTerm = 25
	jobEvery    = 100 * time.Millisecond
	session     = 2 * time.Second         // short, so the cut-off leader's session expires soon
	away        = session + 2*time.Second // how long it is cut off: past the session
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "election:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	servers, stopZK, err := zkenv.Servers(ctx)
	if err != nil {
		return err
	}
	defer stopZK()

	store := &fencedStore{}
	elected := make(chan *scheduler)
	var schedulers []*scheduler
	for i := 1; i <= 3; i++ {
		s := &scheduler{name: fmt.Sprintf("scheduler-%d", i), store: store, elected: elected}
		eng, err := engine.Start(ctx, engine.Config{Servers: servers, SessionTimeout: session, Dialer: s.net.Dial})
		if err != nil {
			return err
		}
		defer eng.Close()
		s.el = election.New(eng, electionPath)
		schedulers = append(schedulers, s)
	}

	// The observer has a session of its own, which no fault touches.
	watcher, err := engine.Start(ctx, engine.Config{Servers: servers})
	if err != nil {
		return err
	}
	defer watcher.Close()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { observe(runCtx, election.New(watcher, electionPath)) })
	for _, s := range schedulers {
		wg.Go(func() { s.run(runCtx) })
	}

	for term := 1; term <= terms; term++ {
		var leader *scheduler
		select {
		case leader = <-elected:
		case <-runCtx.Done():
			return runCtx.Err()
		}
		if term == terms/2 {
			// Cut the leader off ZooKeeper for longer than its session.
			fmt.Printf("-- cutting %s off ZooKeeper for %v\n", leader.name, away)
			leader.net.Cut()
			time.AfterFunc(away, func() {
				fmt.Printf("-- %s reaches ZooKeeper again\n", leader.name)
				leader.net.Heal()
			})
		}
	}
	cancel()
	wg.Wait()
	fmt.Printf("store: %d writes accepted, %d refused\n", store.accepted, store.refused)
	return nil
}

// scheduler is one instance of a service that must run its jobs on one
// instance at a time.
type scheduler struct {
	name    string
	el      *election.Election
	net     netfault.Partition // its link to ZooKeeper, cut by the demo
	store   *fencedStore
	elected chan<- *scheduler
}

// run campaigns, leads, resigns and campaigns again until ctx ends.
func (s *scheduler) run(ctx context.Context) {
	for ctx.Err() == nil {
		l, err := s.el.Campaign(ctx, []byte(s.name)).Wait(ctx)
		if err != nil {
			if ctx.Err() == nil {
				fmt.Printf("%s: campaign: %v\n", s.name, err)
			}
			return
		}
		fmt.Printf("%s elected, token %d\n", s.name, l.Token())
		select {
		case s.elected <- s:
		case <-ctx.Done():
		}
		s.lead(ctx, l)
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = l.Resign(rctx)
		cancel()
		switch {
		case errors.Is(err, engine.ErrLost):
			fmt.Printf("%s: its term was lost (%v); it campaigns again once back\n", s.name, l.Err())
		case err != nil:
			fmt.Printf("%s: resign: %v\n", s.name, err)
		default:
			fmt.Printf("%s resigns\n", s.name)
		}
	}
}

// lead is the job loop: it runs only while the leadership holds, and
// returns at once when it is lost.
func (s *scheduler) lead(ctx context.Context, l *election.Leadership) {
	tick := time.NewTicker(jobEvery)
	defer tick.Stop()
	for job := 1; job <= jobsPerTerm; job++ {
		select {
		case <-l.Lost():
			fmt.Printf("%s: Lost() closed: stops its jobs at once\n", s.name)
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := s.store.write(s.name, l.Token()); err != nil {
			fmt.Printf("%s: job %d: %v\n", s.name, job, err)
			return
		}
	}
}

// observe prints every new leader until ctx ends.
func observe(ctx context.Context, el *election.Election) {
	for l := range el.Observe(ctx) {
		fmt.Printf("   observer: %s leads (%s)\n", l.Value, l.Node)
	}
}

// fencedStore stands for what the leader drives: it accepts a write only
// with a token at least as high as every token it has seen, so a deposed
// leader that is slow to notice cannot overwrite its successor's work.
type fencedStore struct {
	mu                sync.Mutex
	highest           int64
	accepted, refused int
}

func (f *fencedStore) write(who string, token int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token < f.highest {
		f.refused++
		return fmt.Errorf("store refused %s: token %d is older than %d", who, token, f.highest)
	}
	f.highest = token
	f.accepted++
	return nil
}
