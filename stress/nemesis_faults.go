//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/turnstile-go/turnstile/internal/netns"
)

// The nemesis: one fault at a time, chosen from a seed, each healed after a
// bounded time, then a wait until every member serves again, until the
// run's end. The kinds come in rounds, each round every kind once in an
// order drawn from the seed, so that a short run sees each kind.
var nemKinds = []string{
	"partition-minority", // a minority of the servers cut from the rest
	"partition-leader",   // the leader cut from every other server
	"partition-bridge",   // two sides that only one server (the bridge) sees both of
	"partition-oneway",   // one server hears none of the others, which hear it
	"client-cut",         // clients cut from some or all of the servers
	"pause-client",       // a client stopped (SIGSTOP) past its session, mid critical section; a CLI participant's turnstile process, its CMD running on
	"kill-server",        // a server killed (SIGKILL) and restarted
	"kill-client",        // a client killed (SIGKILL) and started again; a CLI participant's turnstile process killed, mid CMD
	"stall-server",       // a server stopped for under a second: latency on every request through it
	"latency",            // clients' links to every server delayed, by their own proxy (nemesis_proxy.go)
}

// nemesis runs faults until ctx ends, and reports how many of each kind it
// injected and the windows in which clients were stopped or killed.
type nemesis struct {
	c       *nemCluster
	rng     *rand.Rand
	session time.Duration
	counts  map[string]int
	windows []nemWindow
	// cliFirst: kill-client and client-cut always take a CLI participant
	// when there is one (the control's, whose escaped writer is what they
	// must bring to light), not half the time.
	cliFirst bool
}

func (n *nemesis) run(ctx context.Context) error {
	n.counts = map[string]int{}
	for ctx.Err() == nil {
		order := n.rng.Perm(len(nemKinds))
		for _, k := range order {
			if !sleepCtx(ctx, n.between(time.Second, 3*time.Second)) {
				return nil
			}
			kind := nemKinds[k]
			n.c.log.Info("nemesis: fault", "kind", kind)
			if err := n.inject(ctx, kind); err != nil {
				return fmt.Errorf("nemesis: %s: %w", kind, err)
			}
			n.counts[kind]++
			// The next fault waits for every member to serve again, so
			// that faults do not pile up into an outage without end.
			wctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err := n.c.waitServing(wctx)
			cancel()
			if err != nil {
				return fmt.Errorf("nemesis: after %s: %w", kind, err)
			}
			if ctx.Err() != nil {
				return nil
			}
		}
	}
	return nil
}

func (n *nemesis) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int64N(int64(hi-lo)+1))
}

// hold waits for the fault's length: the heal comes even when the run
// ends meanwhile.
func (n *nemesis) hold(ctx context.Context, lo, hi time.Duration) {
	_ = sleepCtx(context.WithoutCancel(ctx), n.between(lo, hi))
}

// inject causes one fault and heals it.
func (n *nemesis) inject(ctx context.Context, kind string) error {
	c := n.c
	srv := c.servers
	switch kind {
	case "partition-minority":
		perm := n.rng.Perm(len(srv))
		cut := (len(srv) - 1) / 2
		return n.partition(ctx, pick(srv, perm[:cut]), pick(srv, perm[cut:]))
	case "partition-leader":
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		leader, err := c.ens.Leader(lctx)
		cancel()
		if err != nil {
			return err
		}
		var rest []*netns.Host
		for i, h := range srv {
			if i != leader {
				rest = append(rest, h)
			}
		}
		return n.partition(ctx, []*netns.Host{srv[leader]}, rest)
	case "partition-bridge":
		// The bridge is left out of both sides: it sees every server.
		perm := n.rng.Perm(len(srv))
		side := (len(srv) - 1) / 2
		return n.partition(ctx, pick(srv, perm[1:1+side]), pick(srv, perm[1+side:]))
	case "partition-oneway":
		i := n.rng.IntN(len(srv))
		var rest []*netns.Host
		for j, h := range srv {
			if j != i {
				rest = append(rest, h)
			}
		}
		if err := srv[i].BlockIn(rest...); err != nil {
			return err
		}
		n.hold(ctx, 3*time.Second, 8*time.Second)
		return netns.Heal(srv[i])
	case "client-cut":
		clients := pick(c.hosts, n.rng.Perm(len(c.hosts))[:1+n.rng.IntN(2)])
		servers := pick(srv, n.rng.Perm(len(srv))[:1+n.rng.IntN(len(srv))])
		if clis := n.cliProcs(); len(clis) > 0 && (n.rng.IntN(2) == 0 || n.cliFirst) {
			// A CLI participant whose command writes, cut from every
			// server: its Lost(), and its command's stop, put to the test.
			clients[0], servers = n.busyCLI(ctx, clis).host, srv
		} else if h := n.holder(); h != nil && n.rng.IntN(2) == 0 {
			clients[0] = h.host // the holder, so that its Lost() is put to the test
		}
		if err := netns.Partition(clients, servers); err != nil {
			return err
		}
		n.hold(ctx, 2*time.Second, 6*time.Second)
		return netns.Heal(append(clients, servers...)...)
	case "pause-client":
		p := n.victim(ctx)
		_, inc := p.phase()
		from := time.Now().UnixNano()
		p.pause()
		n.hold(ctx, n.session+time.Second, n.session+3*time.Second)
		p.resume()
		n.windows = append(n.windows, nemWindow{client: p.id, inc: inc, from: from, to: time.Now().UnixNano()})
		return nil
	case "kill-server":
		s := c.ens.Servers[n.rng.IntN(len(srv))]
		if err := s.Kill(); err != nil {
			return err
		}
		n.hold(ctx, time.Second, 4*time.Second)
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return s.Restart(rctx)
	case "kill-client":
		p := c.clients[n.rng.IntN(len(c.clients))]
		if clis := n.cliProcs(); len(clis) > 0 && (n.rng.IntN(2) == 0 || n.cliFirst) {
			p = n.busyCLI(ctx, clis)
		}
		if p.cli {
			// The turnstile process dies (its supervisor must kill the
			// command at once); the participant starts the next.
			_, inc := p.phase()
			n.windows = append(n.windows, nemWindow{client: p.id, inc: inc, from: time.Now().UnixNano(), killed: true})
			p.send("kill")
			n.hold(ctx, 500*time.Millisecond, 2*time.Second)
			return nil
		}
		from := time.Now().UnixNano()
		inc := p.kill()
		n.windows = append(n.windows, nemWindow{client: p.id, inc: inc, from: from, killed: true})
		n.hold(ctx, 500*time.Millisecond, 2*time.Second)
		return c.start(p)
	case "latency":
		// 50-400 ms each way, on one or more clients (the holder half the
		// time), for 3-8 s: longer than a session, so that every reply the
		// engine's trust deadline counts on comes late for a while.
		procs := c.clients
		var ps []*nemProc
		for _, i := range n.rng.Perm(len(procs))[:1+n.rng.IntN(len(procs))] {
			ps = append(ps, procs[i])
		}
		if h := n.holder(); h != nil && n.rng.IntN(2) == 0 {
			ps[0] = h
		}
		d := n.between(50*time.Millisecond, 400*time.Millisecond).Round(time.Millisecond)
		for _, p := range ps {
			p.send("latency " + d.String())
		}
		n.hold(ctx, 3*time.Second, 8*time.Second)
		for _, p := range ps {
			p.send("latency 0s")
		}
		return nil
	case "stall-server":
		s := c.ens.Servers[n.rng.IntN(len(srv))]
		pid := s.PID()
		if pid == 0 {
			return nil
		}
		// By PID: the member's JVM, which zkserver started and still waits for.
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return err
		}
		n.hold(ctx, 300*time.Millisecond, 1500*time.Millisecond)
		return syscall.Kill(pid, syscall.SIGCONT)
	}
	return fmt.Errorf("unknown fault %q", kind)
}

// partition cuts the servers a from the servers b for a while, then heals
// both sides. Each client goes with one side or the other, or stays
// between them: a client left with a minority keeps a server that answers
// it while the majority expires its session.
func (n *nemesis) partition(ctx context.Context, a, b []*netns.Host) error {
	a, b = append([]*netns.Host(nil), a...), append([]*netns.Host(nil), b...)
	for _, h := range n.c.hosts {
		switch n.rng.IntN(3) {
		case 0:
			a = append(a, h)
		case 1:
			b = append(b, h)
		}
	}
	if err := netns.Partition(a, b); err != nil {
		return err
	}
	n.hold(ctx, 3*time.Second, 8*time.Second)
	return netns.Heal(append(a, b...)...)
}

// victim is the client to stop: preferably one between its read and its
// writes, where a stop does the most harm, waiting a little for one; half
// the time, when there is one, a CLI participant whose command writes.
func (n *nemesis) victim(ctx context.Context) *nemProc {
	if clis := n.cliProcs(); len(clis) > 0 && n.rng.IntN(2) == 0 {
		return n.busyCLI(ctx, clis)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, i := range n.rng.Perm(len(n.c.clients)) {
			p := n.c.clients[i]
			if ev, _ := p.phase(); !p.cli && ev.Kind == evReadDone && ev.Out == outOK {
				return p
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return n.c.clients[n.rng.IntN(len(n.c.clients))]
}

// cliProcs are the CLI participants.
func (n *nemesis) cliProcs() []*nemProc {
	var out []*nemProc
	for _, p := range n.c.clients {
		if p.cli {
			out = append(out, p)
		}
	}
	return out
}

// busyCLI is one of the CLI participants, preferably one whose command
// has written and has at least cliRoundsLeft rounds to go (two seconds or
// so: past the next grant, were the CLI's lease lost now), waiting a
// while for one; else one whose command writes at all.
func (n *nemesis) busyCLI(ctx context.Context, clis []*nemProc) *nemProc {
	deadline := time.Now().Add(10 * time.Second)
	var any *nemProc
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, i := range n.rng.Perm(len(clis)) {
			if ev, _ := clis[i].phase(); ev.Kind == evFenceDone {
				if ev.V >= cliRoundsLeft {
					return clis[i]
				}
				any = clis[i]
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if any != nil {
		return any
	}
	return clis[n.rng.IntN(len(clis))]
}

const cliRoundsLeft = 10

// holder is a client in a critical section, if one is.
func (n *nemesis) holder() *nemProc {
	for _, i := range n.rng.Perm(len(n.c.clients)) {
		p := n.c.clients[i]
		switch ev, _ := p.phase(); ev.Kind {
		case evGrant, evReadInv, evReadDone, evFenceInv, evFenceDone, evWriteInv:
			return p
		}
	}
	return nil
}

func pick(hs []*netns.Host, idx []int) []*netns.Host {
	out := make([]*netns.Host, len(idx))
	for i, j := range idx {
		out[i] = hs[j]
	}
	return out
}
