package election_test

import (
	"context"
	"fmt"
	"time"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
)

// Campaign returns at once; the leadership arrives through the future when
// this candidate is elected. Resigning elects the next candidate.
func ExampleElection_Campaign() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	el := election.New(eng, "/examples/election-campaign")
	first := el.Campaign(ctx, []byte("scheduler-1"))
	second := el.Campaign(ctx, []byte("scheduler-2")) // the same engine: another candidate

	l, err := first.Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s leads\n", l.Value())
	fmt.Println("resign:", l.Resign(ctx))

	l, err = second.Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s leads\n", l.Value())
	fmt.Println("resign:", l.Resign(ctx))
	// Output:
	// scheduler-1 leads
	// resign: <nil>
	// scheduler-2 leads
	// resign: <nil>
}

// A leader does its work only while it leads: it stops at once when Lost()
// closes, and it hands its token to whatever it drives, so that a deposed
// leader that is slow to notice is refused.
func ExampleLeadership_Lost() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	l, err := election.New(eng, "/examples/election-lost").Campaign(ctx, []byte("scheduler-1")).Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Resign(ctx)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for run := 0; run < 3; run++ {
		select {
		case <-l.Lost():
			fmt.Println("no longer leading:", l.Err())
			return
		case <-tick.C:
			runJobs(l.Token())
		}
	}
	fmt.Println("three rounds of jobs, each with the term's token")
	// Output:
	// three rounds of jobs, each with the term's token
}

// runJobs stands for the leader's work: every write it makes to what it
// drives carries the token, and is refused under an older one than seen.
func runJobs(token int64) { _ = token }

// Leader reads who leads, whichever client it is.
func ExampleElection_Leader() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	el := election.New(eng, "/examples/election-leader")
	if _, err := el.Leader(ctx); err != nil {
		fmt.Println(err)
	}
	l, err := el.Campaign(ctx, []byte("scheduler-1")).Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Resign(ctx)
	leader, err := el.Leader(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("leader: %s\n", leader.Value)
	// Output:
	// turnstile: election has no leader
	// leader: scheduler-1
}

// Observe reports each new leader, in order, with no goroutine per
// observer.
func ExampleElection_Observe() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	el := election.New(eng, "/examples/election-observe")
	leaders := el.Observe(ctx)
	for _, name := range []string{"scheduler-1", "scheduler-2"} {
		l, err := el.Campaign(ctx, []byte(name)).Wait(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("observed %s\n", (<-leaders).Value)
		l.Resign(ctx)
	}
	// Output:
	// observed scheduler-1
	// observed scheduler-2
}

// A leader announces a new value (where it serves, say) without a new
// election; observers receive the same leader again with it.
func ExampleLeadership_Proclaim() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	el := election.New(eng, "/examples/election-proclaim")
	octx, stop := context.WithCancel(ctx)
	defer stop()
	leaders := el.Observe(octx)
	l, err := el.Campaign(ctx, []byte("10.0.0.1:8080")).Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("observed %s\n", (<-leaders).Value)
	fmt.Println("proclaim:", l.Proclaim(ctx, []byte("10.0.0.1:9090")))
	fmt.Printf("observed %s\n", (<-leaders).Value)
	fmt.Println("resign:", l.Resign(ctx))
	// Output:
	// observed 10.0.0.1:8080
	// proclaim: <nil>
	// observed 10.0.0.1:9090
	// resign: <nil>
}

// Candidates take turns: each leads while its function runs, then goes to
// the back of the election. Here one candidate takes two turns and stops.
func ExampleElection_Lead() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	el := election.New(eng, "/examples/election-lead")
	lctx, stop := context.WithCancel(ctx)
	turns := 0
	err = el.Lead(lctx, []byte("worker-1"), func(ctx context.Context, l *election.Leadership) error {
		turns++
		fmt.Printf("turn %d: %s leads\n", turns, l.Value())
		if turns == 2 {
			stop()
		}
		return nil // resign and queue again
	})
	fmt.Println("lead:", err)
	// Output:
	// turn 1: worker-1 leads
	// turn 2: worker-1 leads
	// lead: context canceled
}
