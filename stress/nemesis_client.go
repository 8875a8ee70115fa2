package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/seam"
	"github.com/turnstile-go/turnstile/lock"
)

// The nemesis run's client: this binary in child mode "nemesis-client", a
// process of its own inside a network namespace of its own, with one
// turnstile engine (one session). It contends for the run's lock paths and,
// in each critical section, reads the path's register (a znode), waits a
// random think time (the window in which the nemesis likes to stop it),
// writes the fenced register (the fence process, nemesis_fence.go) with its
// lease's token, and writes the register with the value read plus one. In
// the guarded mode that write is Lease.Guarded and the fence refuses an old
// token; in the control mode the write is a plain SetData and the token is
// not given to the fence, which then accepts every write. The engine dials
// its servers through a delaying proxy of the process's own
// (nemesis_proxy.go), idle until the parent asks for latency.
//
// Every event goes to stdout as a JSON line (nemesis_history.go); the
// engine's log goes to stderr. The parent writes to stdin one line per
// command, "latency <duration>" (each way; 0 ends it); the process ends
// when its stdin closes (the parent is done, or died) or on SIGTERM.

// nemClientOptions are the client's flags.
type nemClientOptions struct {
	servers []string
	paths   int
	session time.Duration
	think   time.Duration // the longest think time
	control bool
	fence   string // the fence process's socket
	name    string // the writer's name at the fence: c<client>.<incarnation>
	seed    uint64

	// The CLI participants (nemesis_cli.go), beside the clients: how
	// many, and the turnstile command's binary they run.
	cli       int
	turnstile string
}

func (o nemClientOptions) args() []string {
	a := []string{"-servers", strings.Join(o.servers, ","), "-paths", strconv.Itoa(o.paths),
		"-session", o.session.String(), "-think", o.think.String(), "-fence", o.fence, "-name", o.name,
		"-seed", strconv.FormatUint(o.seed, 10)}
	if o.control {
		a = append(a, "-control")
	}
	return a
}

// The znodes of a run: lock path i guards register i.
const nemRoot = "/nemesis"

func nemLockPath(i int) string         { return fmt.Sprintf("%s/lock-%d", nemRoot, i) }
func nemRegisterPath(i int) string     { return fmt.Sprintf("%s/register-%d", nemRoot, i) }
func nemFenceSocket(dir string) string { return filepath.Join(dir, "fence.sock") }

func nemesisClientMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o nemClientOptions
	var servers string
	fl := flag.NewFlagSet("nemesis-client", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&servers, "servers", "", "")
	fl.IntVar(&o.paths, "paths", 1, "")
	fl.DurationVar(&o.session, "session", 2*time.Second, "")
	fl.DurationVar(&o.think, "think", 200*time.Millisecond, "")
	fl.BoolVar(&o.control, "control", false, "")
	fl.StringVar(&o.fence, "fence", "", "")
	fl.StringVar(&o.name, "name", "", "")
	fl.Uint64Var(&o.seed, "seed", 1, "")
	if err := fl.Parse(args); err != nil || servers == "" || o.fence == "" || o.name == "" || o.paths < 1 {
		fmt.Fprintln(stderr, "nemesis client: -servers, -fence, -name and -paths ≥ 1 are needed")
		return exitUsage
	}
	o.servers = strings.Split(servers, ",")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	proxy := newDelayProxy()
	defer proxy.Close()
	go func() {
		// The parent closes stdin to end the run; its death closes it too.
		nemCommands(stdin, proxy, log)
		cancel()
	}()
	var eng *engine.Engine
	for eng == nil {
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		e, err := engine.Start(sctx, engine.Config{Servers: o.servers, SessionTimeout: o.session, Logger: log, Dialer: proxy.dial})
		scancel()
		if err == nil {
			eng = e
			break
		}
		if ctx.Err() != nil {
			return 0
		}
		log.Warn("nemesis client: engine start", "err", err)
	}
	defer eng.Close()
	c := &nemClient{o: o, eng: eng, out: &eventWriter{w: stdout},
		rng: rand.New(rand.NewPCG(o.seed, uint64(os.Getpid())))}
	c.run(ctx)
	return 0
}

// nemCommands obeys the parent's commands on r until r ends.
func nemCommands(r io.Reader, proxy *delayProxy, log *slog.Logger) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 2 && fs[0] == "latency" {
			if d, err := time.ParseDuration(fs[1]); err == nil {
				proxy.setDelay(d)
				log.Info("nemesis client: latency", "each way", d)
				continue
			}
		}
		log.Warn("nemesis client: unknown command", "line", sc.Text())
	}
}

type nemClient struct {
	o      nemClientOptions
	eng    *engine.Engine
	out    *eventWriter
	rng    *rand.Rand
	leases int
}

func (c *nemClient) run(ctx context.Context) {
	for ctx.Err() == nil {
		p := c.rng.IntN(c.o.paths)
		c.out.emit(nemEvent{Kind: evAcquire, Path: p})
		actx, cancel := context.WithTimeout(ctx, 20*time.Second)
		lease, err := lock.NewMutex(c.eng, nemLockPath(p)).Lock(actx)
		cancel()
		if err != nil {
			c.out.emit(nemEvent{Kind: evAcqFail, Path: p, Err: err.Error()})
			sleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		c.leases++
		n := c.leases
		c.out.emit(nemEvent{Kind: evGrant, Path: p, Lease: n, Token: lease.Token()})
		ended := make(chan struct{})
		go func() {
			select {
			case <-lease.Lost():
				c.out.emit(nemEvent{Kind: evLost, Path: p, Lease: n, Err: fmt.Sprint(lease.Err())})
			case <-ended:
			}
		}()
		c.critical(ctx, p, n, lease)
		c.out.emit(nemEvent{Kind: evReleaseInv, Path: p, Lease: n})
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = lease.Release(rctx)
		rcancel()
		c.out.emit(nemEvent{Kind: evRelease, Path: p, Lease: n, Out: nemOutcome(err, false), Err: errText(err)})
		close(ended)
	}
}

// critical is one critical section: one to three rounds, so that a fault
// finds holders mid section. A round that failed is tried again while the
// lease is not lost, a few times: a holder that goes on believing it holds
// until Lost() says otherwise is what puts that promise to the test.
func (c *nemClient) critical(ctx context.Context, p, n int, lease *engine.Lease) {
	rounds := 1 + c.rng.IntN(3)
	for done, tries := 0, 0; done < rounds && tries < rounds+4 && ctx.Err() == nil && lease.Err() == nil; tries++ {
		if c.round(ctx, p, n, lease) {
			done++
		}
	}
}

// round is one read, think, fenced write and register write; it reports
// whether all went well. A holder does not look at its lease between the
// read and the writes: the guard and the fence are what must stop a stale
// one.
func (c *nemClient) round(ctx context.Context, p, n int, lease *engine.Lease) bool {
	ev := func(kind string) nemEvent { return nemEvent{Kind: kind, Path: p, Lease: n, Token: lease.Token()} }
	c.out.emit(ev(evReadInv))
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	data, err := seam.Data(c.eng, rctx, nemRegisterPath(p))
	cancel()
	var v int64
	if err == nil {
		v, err = strconv.ParseInt(string(data), 10, 64)
	}
	done := ev(evReadDone)
	done.V, done.Out, done.Err = v, nemOutcome(err, false), errText(err)
	c.out.emit(done)
	if err != nil {
		return false
	}
	sleepCtx(ctx, time.Duration(c.rng.Int64N(int64(c.o.think)+1)))

	c.out.emit(ev(evFenceInv))
	seq, err := fenceWrite(c.o.fence, p, lease.Token(), !c.o.control, c.o.name)
	fd := ev(evFenceDone)
	switch {
	case errors.Is(err, errFenceRefused):
		fd.Out = outFail
	case err != nil:
		fd.Out, fd.Err = outUnknown, err.Error()
	default:
		fd.Out, fd.Seq = outOK, seq
	}
	c.out.emit(fd)

	w := ev(evWriteInv)
	w.V = v + 1
	c.out.emit(w)
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	value := []byte(strconv.FormatInt(v+1, 10))
	if c.o.control {
		err = seam.SetData(c.eng, wctx, nemRegisterPath(p), value)
	} else {
		_, err = lease.Guarded(wctx, &zk.SetDataRequest{Path: nemRegisterPath(p), Data: value, Version: -1})
	}
	wcancel()
	wd := ev(evWriteDone)
	wd.V, wd.Out, wd.Err = v+1, nemOutcome(err, true), errText(err)
	// Refused by ZooKeeper (the multi's check), not by the lease's own
	// state before the request: Guarded's message says which.
	wd.Server = errors.Is(err, engine.ErrLost) && strings.Contains(err.Error(), "guarded write refused")
	c.out.emit(wd)
	return err == nil && fd.Out == outOK
}

// nemOutcome classifies a result. A write refused by its guard (ErrLost,
// ErrNotHeld: the check failed, or the lease was lost before the request)
// surely did not happen; any other error leaves a write's outcome unknown.
// A read that failed did not observe anything, so it is a failure.
func nemOutcome(err error, write bool) string {
	switch {
	case err == nil:
		return outOK
	case !write:
		return outFail
	case errors.Is(err, engine.ErrLost), errors.Is(err, engine.ErrNotHeld):
		return outFail
	}
	return outUnknown
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
