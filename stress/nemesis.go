//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/turnstile-go/turnstile/internal/netns"
)

// The nemesis run (stress nemesis; make nemesis): a ZooKeeper ensemble and
// client processes, each in a network namespace of its own, under faults
// scheduled from a seed (nemesis_faults.go); the clients hold a lock in
// turn and write a register in ZooKeeper through Lease.Guarded and a
// fenced register, a process of its own, with their token
// (nemesis_client.go, nemesis_fence.go); the history is then checked
// (nemesis_check.go). Beside the clients, CLI participants (-cli, given
// the turnstile command's binary with -turnstile) hold the lock through
// `turnstile lock PATH -- CMD`, where CMD writes the fenced register with
// the token the CLI hands it; the fence observes each CMD's life, and no
// other holder may be granted the lock while one lives (nemesis_cli.go).
// A control run follows, under the same schedule, whose clients write
// without the guard and without the token, and whose CLI participants'
// CMD hands its writing to a service outside its process tree, which the
// CLI's kill on Lost() does not reach: its checker must find violations,
// and one of a CMD alive beside a grant when a CLI participant ran, or
// the checker is blind.
//
// It ends with one line:
//
//	nemesis: M min, N operations, faults <kind>=<n> ..., violations V, linearizable yes|no, control violations C, CLI: L leases, commands alive beside a grant A, control A'

type nemOptions struct {
	duration, controlDuration time.Duration
	seed                      uint64
	nodes, clients, paths     int
	session, think            time.Duration
	keep                      bool
	cli                       int    // CLI participants
	turnstile                 string // the turnstile command's binary
}

func nemesisMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o nemOptions
	fl := flag.NewFlagSet("nemesis", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.DurationVar(&o.duration, "duration", 2*time.Minute, "how long the nemesis runs (the real run)")
	fl.DurationVar(&o.controlDuration, "control-duration", 0, "how long the control runs (default: the duration, at most 2m)")
	fl.Uint64Var(&o.seed, "seed", 0, "the nemesis's seed (default: from the clock, printed)")
	fl.IntVar(&o.nodes, "nodes", 3, "ZooKeeper servers (3 or 5)")
	fl.IntVar(&o.clients, "clients", 4, "client processes")
	fl.IntVar(&o.paths, "paths", 1, "lock paths, each with its register")
	fl.DurationVar(&o.session, "session", 2*time.Second, "the clients' session timeout")
	fl.DurationVar(&o.think, "think", 200*time.Millisecond, "the longest pause between a holder's read and its writes")
	fl.BoolVar(&o.keep, "keep", false, "keep the run's directory (client and fence logs)")
	fl.StringVar(&o.turnstile, "turnstile", "", "the turnstile command's binary (go build ./cmd/turnstile), which the CLI participants run; none without it")
	fl.IntVar(&o.cli, "cli", 1, "CLI participants, beside the clients, when -turnstile is given")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	if o.nodes != 3 && o.nodes != 5 || o.clients < 2 || o.paths < 1 || o.duration <= 0 || o.cli < 0 {
		fmt.Fprintln(stderr, "nemesis: -nodes 3|5, -clients ≥ 2, -paths ≥ 1, -duration > 0, -cli ≥ 0")
		return exitUsage
	}
	if o.turnstile == "" {
		o.cli = 0
	} else if abs, err := filepath.Abs(o.turnstile); err == nil {
		o.turnstile = abs
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	if o.controlDuration == 0 {
		o.controlDuration = min(o.duration, 2*time.Minute)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	fmt.Fprintf(stdout, "nemesis: seed %d, %d servers, %d clients, %d CLI participant(s), %d path(s), session %v, %v (control %v)\n",
		o.seed, o.nodes, o.clients, o.cli, o.paths, o.session, o.duration, o.controlDuration)

	real, err := nemesisRun(ctx, o, false, o.duration, log, stdout)
	if errors.Is(err, netns.ErrUnsupported) {
		fmt.Fprintf(stderr, "nemesis: %v (run as root, with ip and nft: make deps)\n", err)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(stderr, "nemesis: %v\n", err)
		return exitFailed
	}
	control, err := nemesisRun(ctx, o, true, o.controlDuration, log, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "nemesis: control: %v\n", err)
		return exitFailed
	}
	v, cv := real.check.Violations(o.paths), control.check.Violations(o.paths)
	lin := "yes"
	if real.check.Linearizable != porcupine.Ok {
		lin = "no"
		if real.check.Linearizable == porcupine.Unknown {
			lin = "unknown (porcupine timed out)"
		}
	}
	fmt.Fprintf(stdout, "nemesis: %.1f min, %d operations, faults %s, violations %d, linearizable %s, control violations %d, CLI: %d leases, commands alive beside a grant %d, control %d\n",
		real.elapsed.Minutes(), real.check.Operations, faultCounts(real.faults), v, lin, cv,
		real.check.CLILeases, real.check.CmdOverlaps, control.check.CmdOverlaps)
	if v > 0 || lin != "yes" || cv == 0 || missingKinds(real.faults) != "" || real.check.FenceErrors > 0 {
		return exitFailed
	}
	if o.cli > 0 && (real.check.CLILeases == 0 || control.check.CmdOverlaps == 0) {
		return exitFailed
	}
	return 0
}

// nemRunResult is one run's outcome.
type nemRunResult struct {
	elapsed time.Duration
	faults  map[string]int
	check   *nemCheck
}

// nemesisRun builds the world, runs the clients under the nemesis for d,
// heals, stops the clients, reads the registers and checks the history.
func nemesisRun(ctx context.Context, o nemOptions, control bool, d time.Duration, log *slog.Logger, stdout io.Writer) (*nemRunResult, error) {
	name := "guarded"
	if control {
		name = "control"
	}
	c, err := newNemCluster(ctx, o.nodes, o.clients, nemClientOptions{
		paths: o.paths, session: o.session, think: o.think, control: control, seed: o.seed,
		cli: o.cli, turnstile: o.turnstile,
	}, log)
	if err != nil {
		return nil, err
	}
	keep := o.keep
	defer func() {
		c.close()
		if keep {
			fmt.Fprintf(stdout, "nemesis: %s run's directory kept: %s\n", name, c.dir)
		} else {
			_ = os.RemoveAll(c.dir)
		}
	}()
	start := time.Now()
	nctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	n := &nemesis{c: c, rng: rand.New(rand.NewPCG(o.seed, 22)), session: o.session, cliFirst: control}
	nerr := n.run(nctx)
	elapsed := time.Since(start)
	// Every fault is healed; let the clients go on a moment on a whole
	// network, so the last leases end, then stop them.
	sleepCtx(ctx, 2*o.session)
	c.stopClients()
	end := time.Now().UnixNano()
	// The last fault's heal may leave the ensemble electing: wait for every
	// member to serve, as after each fault, so that an error names it.
	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err = c.waitServing(wctx)
	wcancel()
	if err != nil {
		keep = true
		return nil, fmt.Errorf("%s: at the end: %w", name, err)
	}
	finals, err := c.registers()
	if err != nil {
		keep = true
		return nil, fmt.Errorf("%s: reading the registers at the end: %w", name, err)
	}
	fence, err := c.fenceRecords()
	if err != nil {
		return nil, fmt.Errorf("%s: reading the fence's log: %w", name, err)
	}
	lives, err := c.cmdLives()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if nerr != nil {
		return nil, fmt.Errorf("%s: %w", name, nerr)
	}
	// The writers' lives, as the fence saw them, among the processes'
	// own events: in the order of time, which every process shares.
	events := append(c.hist.snapshot(), lives...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].T < events[j].T })
	r := checkNemesis(events, n.windows, finals, end, fence)
	fmt.Fprintf(stdout, "nemesis: %s run: %d operations, %d leases (%d lost, the next grant %s after a loss at the closest; %d stopped or killed while held), %d register writes refused (%d by ZooKeeper's check), %d fenced writes refused (%d failed), faults %s; overlaps %d, token order %d, fence order %d, lost writes %d, linearizable %s; registers end at %v\n",
		name, r.Operations, r.Leases, r.Lost, margin(r.LostMargin), r.Excused, r.Refused, r.ServerRefused, r.Fenced, r.FenceErrors, faultCounts(n.counts),
		r.Overlaps, r.TokenOrder, r.FenceOrder, r.LostWrites, r.Linearizable, finals)
	if o.cli > 0 {
		fmt.Fprintf(stdout, "nemesis: %s run: CLI participant(s): %d leases, %d losses reported by turnstile lock, a command's life after its CLI reported the loss at most %s, after its CLI was killed at most %s, the next grant %s after a command's end at the closest; commands alive beside a grant %d\n",
			name, r.CLILeases, r.CLILost, margin(r.CmdAfterLost), margin(r.CmdAfterKill), margin(r.CmdMargin), r.CmdOverlaps)
	}
	for _, e := range r.Examples {
		fmt.Fprintf(stdout, "nemesis: %s: %s\n", name, e)
	}
	if !control && r.Violations(o.paths) > 0 {
		keep = true
	}
	if keep {
		if err := writeHistory(filepath.Join(c.dir, "history.jsonl"), events, n.windows); err != nil {
			log.Warn("nemesis: writing the history", "err", err)
		}
	}
	return &nemRunResult{elapsed: elapsed, faults: n.counts, check: r}, nil
}

func margin(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return d.Round(time.Millisecond).String()
}

func faultCounts(m map[string]int) string {
	var parts []string
	for _, k := range nemKinds {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// missingKinds names the kinds of fault never injected.
func missingKinds(m map[string]int) string {
	var miss []string
	for _, k := range nemKinds {
		if m[k] == 0 {
			miss = append(miss, k)
		}
	}
	return strings.Join(miss, ",")
}
