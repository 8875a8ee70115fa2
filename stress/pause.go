package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/turnstile-go/turnstile/internal/interop"
)

// The pause fault: what a lock does when its holder stalls (a GC pause, a
// VM frozen, SIGSTOP) for longer than its lease. One holder runs in a
// process of its own (pause_child.go) beside the run's workers, on the same
// lock path, witness file and resource (the fenced file of resource.go, or
// with -pause-resource postgres an account, pause_pg.go). At each fault the
// harness has it acquire the lock (and read the account), stops it with
// SIGSTOP as soon as it holds, waits longer than its session timeout
// (ZooKeeper) or TTL (Redis), continues it with SIGCONT, and has it write
// to the resource at once, as a holder that checked its lease just before
// it stalled would. Meanwhile:
//   - the workers' witness checks see whether another holder got in while
//     the stalled one still believed it held (the checker's staleOverlaps);
//   - the resource counts the other holders' writes during the stall;
//   - the stale write after the stall is accepted or refused: a lock with
//     fencing tokens lets the resource refuse it, one without cannot (nor
//     can an account written without the fence's check);
//   - on an account, the books at the end: deposits acknowledged against
//     the balance, the difference being the updates the stale writes lost;
//   - the holder reports whether and when its library told it the lease was
//     lost, and what its release said.
type pauser struct {
	child    *interop.Peer
	res      holdResource
	pauseFor time.Duration
	wait     time.Duration // bound on each exchange with the child

	mu       sync.Mutex
	n        int
	deposits int64 // the stalled holder's writes accepted (committed)
	stalls   []stallOutcome
	errs     []string
	closed   bool
}

// stallOutcome is one stall, as the child and the resource saw it.
type stallOutcome struct {
	othersWrote int64         // writes of other holders during the stall
	gotInAfter  time.Duration // from the stop to the first of them (0: none)
	token       string        // the stalled holder's token, "-" if the lock has none
	write       string        // accepted | refused | error:...
	lostAtWrite bool          // Lost() had closed when the stale write was made
	lostAfter   string        // ms from the continue to Lost(), "never", or "none" (no Lost)
	release     string
}

// startPauser starts the stalled holder's process for impl im on servers,
// writing to res: the file at cfg.WitnessFile + ".resource", or the
// account in the database of pgDSN.
func startPauser(ctx context.Context, cfg *config, env *runEnv, im impl, servers []string, marker []byte, res holdResource, pgDSN string) (*pauser, error) {
	o := pauseChildOptions{
		workloadSpec: cfg.spec(servers),
		resource:     cfg.WitnessFile + ".resource", marker: string(marker) + ":stalled", pgDSN: pgDSN,
	}
	o.impl, o.workers, o.witness = im.Name(), 1, cfg.WitnessFile
	child, err := startChild(ctx, "pause", o.args())
	if err != nil {
		return nil, err
	}
	p := &pauser{child: child, res: res}
	// Longer than the lease by every measure: the session the server
	// granted plus two ticks of its expiry sweep, or the TTL, and a second.
	lease := cfg.RedisTTL
	if im.Backend() == zookeeperBackend {
		lease = env.cl.negotiated(cfg.SessionTimeout) + 2*env.cl.tick
	}
	p.pauseFor = lease + time.Second
	p.wait = 2*cfg.SessionTimeout + 2*cfg.RedisTTL + time.Minute
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := child.WaitLine(wctx, "READY"); err != nil {
		child.Kill()
		return nil, err
	}
	return p, nil
}

// stall runs one stall to its end; it is not cut short by the run's end (a
// stopped process must be continued), only bounded by p.wait per step.
func (p *pauser) stall() error {
	p.mu.Lock()
	p.n++
	n := strconv.Itoa(p.n)
	p.mu.Unlock()
	if err := p.child.Send("acquire " + n); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.Background(), p.wait)
	defer cancel()
	heldLine, err := p.child.WaitLine(wctx, "HELD "+n+" ")
	if err != nil {
		return err
	}
	before, err := p.res.writes(wctx)
	if err != nil {
		return err
	}
	if err := p.child.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	if err := waitStopped(wctx, p.child.PID()); err != nil {
		p.child.Signal(syscall.SIGCONT)
		return err
	}
	stopped := time.Now()
	gotIn := p.watchOthers(wctx, before, stopped)
	after, err := p.res.writes(wctx)
	if err := errors.Join(err, p.child.Signal(syscall.SIGCONT)); err != nil {
		return err
	}
	if err := p.child.Send("write " + n); err != nil {
		return err
	}
	done, err := p.child.WaitLine(wctx, "DONE "+n+" ")
	if err != nil {
		return err
	}
	out := stallOutcome{othersWrote: after - before, token: heldLine, gotInAfter: gotIn}
	for _, f := range strings.Fields(done) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "write":
			out.write = v
		case "lost_at_write":
			out.lostAtWrite = v == "true"
		case "lost_after":
			out.lostAfter = v
		case "release":
			out.release = v
		}
	}
	p.mu.Lock()
	p.stalls = append(p.stalls, out)
	if out.write == "accepted" {
		p.deposits++
	}
	p.mu.Unlock()
	return nil
}

// watchOthers keeps the holder stopped for p.pauseFor, polling the
// resource for the first write of another holder; if none came by then,
// it waits for one up to twice as long again (a loaded server may expire
// the session late), so that what the lock allows shows. It returns when
// the first other write was seen, after the stop (0: none).
func (p *pauser) watchOthers(ctx context.Context, writes0 int64, stopped time.Time) time.Duration {
	var first time.Duration
	limit := stopped.Add(3 * p.pauseFor)
	for {
		el := time.Since(stopped)
		if first == 0 {
			if n, err := p.res.writes(ctx); err == nil && n > writes0 {
				first = el
			}
		}
		if el >= p.pauseFor && (first != 0 || time.Now().After(limit)) {
			return first
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStopped polls /proc/<pid>/stat until the process is stopped (state
// T), so that the pause is counted from when it took effect.
func waitStopped(ctx context.Context, pid int) error {
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil // no /proc: trust the signal
		}
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "T") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pause: process %d did not stop: %w", pid, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

func (p *pauser) noteErr(err error) {
	p.mu.Lock()
	p.errs = append(p.errs, err.Error())
	p.mu.Unlock()
}

// close ends the child (quit, then kill) once.
func (p *pauser) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.child.Signal(syscall.SIGCONT) // never leave it stopped
	p.child.Send("quit")
	select {
	case <-p.child.Done():
	case <-time.After(30 * time.Second):
		p.child.Kill()
	}
}

// pauseResult is the pause fault's report.
type pauseResult struct {
	Stalls         int     `json:"stalls"`
	PauseS         float64 `json:"pause_s"`
	SecondHolderIn int     `json:"second_holder_in"` // stalls during which another holder wrote
	// GotInAfterS: for each of those, seconds from the stop to the first
	// other holder's write.
	GotInAfterS []float64 `json:"got_in_after_s,omitempty"`
	// OthersWrote: for each stall, the writes the resource accepted from
	// other holders between the stalled holder's read and its continue.
	OthersWrote     []int64 `json:"others_wrote"`
	WitnessSawStale int64   `json:"witness_saw_stale"` // grants that found the stalled holder's witness file
	StaleAccepted   int     `json:"stale_writes_accepted"`
	StaleRefused    int     `json:"stale_writes_refused"`
	// StaleAcceptedWithToken: accepted although the stalled holder had a
	// fencing token: the token failed to fence (a violation).
	StaleAcceptedWithToken int64    `json:"stale_accepted_with_token"`
	LostBeforeWrite        int      `json:"lost_before_write"` // Lost() had closed when the stale write was made
	LostAfterWrite         int      `json:"lost_after_write"`
	LostNever              int      `json:"lost_never"` // Lost() exists but did not close in time
	NoLost                 int      `json:"no_lost"`    // the lock has no Lost()
	LostAfterMs            []int64  `json:"lost_after_ms,omitempty"`
	Releases               []string `json:"releases,omitempty"` // what each stalled holder's release said
	// Account: the books of a run on a PostgreSQL account (nil: the file).
	Account *accountResult `json:"account,omitempty"`
}

func (p *pauser) summary(witnessSaw int64) *pauseResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &pauseResult{Stalls: len(p.stalls), PauseS: p.pauseFor.Seconds(), WitnessSawStale: witnessSaw}
	judged := p.res.judgesTokens()
	for _, o := range p.stalls {
		s.OthersWrote = append(s.OthersWrote, o.othersWrote)
		if o.othersWrote > 0 {
			s.SecondHolderIn++
			s.GotInAfterS = append(s.GotInAfterS, o.gotInAfter.Seconds())
		}
		hasToken := o.token != "-"
		switch {
		case o.write == "accepted":
			s.StaleAccepted++
			if hasToken && judged && o.othersWrote > 0 {
				s.StaleAcceptedWithToken++
			}
		case o.write == "refused":
			s.StaleRefused++
		}
		switch {
		case o.lostAfter == "none":
			s.NoLost++
		case o.lostAfter == "never":
			s.LostNever++
		case o.lostAtWrite:
			s.LostBeforeWrite++
		default:
			s.LostAfterWrite++
		}
		if ms, err := strconv.ParseInt(o.lostAfter, 10, 64); err == nil {
			s.LostAfterMs = append(s.LostAfterMs, ms)
		}
		s.Releases = append(s.Releases, o.release)
	}
	return s
}

// stalledDeposits is the stalled holder's writes accepted.
func (p *pauser) stalledDeposits() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deposits
}

// account is the books of a run on an account; nil for p nil or the file.
func (p *pauseResult) account() *accountResult {
	if p == nil {
		return nil
	}
	return p.Account
}

// notes are the child's errors and the stalls that went wrong.
func (p *pauser) notes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n []string
	for _, e := range p.errs {
		n = append(n, "pause: "+e)
	}
	for _, l := range splitLines(p.child.Output()) {
		if strings.HasPrefix(l, "ERROR ") {
			n = append(n, "pause holder: "+l)
		}
	}
	return n
}

func splitLines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }
