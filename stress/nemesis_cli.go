package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The nemesis run's CLI participant: this binary in child mode
// "nemesis-cli", a process of its own inside a network namespace of its
// own, as a client is (nemesis_client.go), which holds the lock through
// the turnstile command rather than the library. In a loop it runs
//
//	turnstile lock -servers ... -session-timeout S PATH -- CMD
//
// where CMD is this binary in child mode "nemesis-cmd", the writer: it says
// hello to the fence process, which then observes its life until its
// connection ends (the kernel ends it the moment the process dies, however
// it dies), and writes the fenced register a few times with the token the
// CLI put in its environment (TURNSTILE_TOKEN), a think time before each
// write. Half the writers ignore SIGTERM, so that the CLI's SIGKILL within
// the lost margin is what stops them. The checker holds each writer's life
// against the other holders' grants (nemesis_check.go).
//
// The participant stands for the machine the CLI runs on. It reaches the
// servers through a delaying proxy of its own (nemesis_proxy.go): the CLI
// is given local addresses, one per server, that the proxy forwards from
// inside the namespace, so that a partition's drop rules still apply and
// the parent can ask for latency. The parent writes it one command a line
// on stdin: "latency D"; "stop" and "cont", SIGSTOP and SIGCONT to the
// turnstile process that runs (a frozen CLI, whose loss the tool does not
// promise to see: its CMD runs on, and the fence must refuse it), no new
// one started meanwhile; "kill", SIGKILL to it (the tool dies: its
// supervisor must kill CMD's tree at once, a promise the checker holds it
// to). It ends when stdin closes: the turnstile process gets SIGTERM.
//
// In the control, CMD does not write itself: it asks the participant's
// runner, a service on the machine outside CMD's process tree, to run the
// writer, and waits for it to end, as `systemd-run --wait`, `docker run`
// or `ssh host cmd` do. The CLI kills CMD on Lost() within its margin as
// it should, and the writer, which is not CMD's descendant, runs on: the
// checker must see it alive beside the next holder's grant.

// The child modes of the CLI participant and of its command.
const (
	nemesisCLIMode = "nemesis-cli"
	nemesisCmdMode = "nemesis-cmd"
)

// cliArgs are a CLI participant's arguments: a client's, and the turnstile
// binary and the runner's socket.
func (o nemClientOptions) cliArgs(turnstile, runner string) []string {
	return append(o.args(), "-turnstile", turnstile, "-runner", runner)
}

func nemesisCLIMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o nemClientOptions
	var servers, turnstile, runner string
	fl := flag.NewFlagSet(nemesisCLIMode, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&servers, "servers", "", "")
	fl.IntVar(&o.paths, "paths", 1, "")
	fl.DurationVar(&o.session, "session", 2*time.Second, "")
	fl.DurationVar(&o.think, "think", 200*time.Millisecond, "")
	fl.BoolVar(&o.control, "control", false, "")
	fl.StringVar(&o.fence, "fence", "", "")
	fl.StringVar(&o.name, "name", "", "")
	fl.Uint64Var(&o.seed, "seed", 1, "")
	fl.StringVar(&turnstile, "turnstile", "", "the turnstile command's binary")
	fl.StringVar(&runner, "runner", "", "the runner's socket (the control's)")
	if err := fl.Parse(args); err != nil || servers == "" || o.fence == "" || o.name == "" || o.paths < 1 ||
		turnstile == "" || o.control && runner == "" {
		fmt.Fprintln(stderr, "nemesis cli: -servers, -fence, -name, -turnstile, -paths ≥ 1 and, with -control, -runner are needed")
		return exitUsage
	}
	o.servers = strings.Split(servers, ",")
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "nemesis cli: %v\n", err)
		return exitFailed
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	proxy := newDelayProxy()
	defer proxy.Close()
	fronts, closeFronts, err := startFronts(proxy, o.servers, o.session)
	if err != nil {
		fmt.Fprintf(stderr, "nemesis cli: %v\n", err)
		return exitFailed
	}
	defer closeFronts()
	p := &nemCLI{o: o, turnstile: turnstile, self: self, fronts: fronts, runner: runner,
		stdout: stdout, stderr: stderr, out: &eventWriter{w: stdout}, log: log,
		rng: rand.New(rand.NewPCG(o.seed, uint64(os.Getpid())))}
	p.resumed = sync.NewCond(&p.mu)
	if o.control {
		r, err := startRunner(runner, self, stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "nemesis cli: %v\n", err)
			return exitFailed
		}
		defer r.close()
	}
	go func() {
		// The parent closes stdin to end the run; its death closes it too.
		p.commands(stdin, proxy)
		cancel()
		p.mu.Lock()
		p.paused = false
		p.resumed.Broadcast()
		p.mu.Unlock()
	}()
	p.run(ctx)
	return 0
}

// nemCLI is the participant's state.
type nemCLI struct {
	o                       nemClientOptions
	turnstile, self, runner string
	fronts                  []string
	stdout, stderr          io.Writer
	out                     *eventWriter
	log                     *slog.Logger
	rng                     *rand.Rand
	leases                  int
	mu                      sync.Mutex
	cur                     *exec.Cmd // the turnstile process running, if any
	stopped                 *exec.Cmd // the one "stop" stopped
	paused                  bool      // between "stop" and "cont": no turnstile process starts
	resumed                 *sync.Cond
}

// run is the participant's loop: one turnstile lock process at a time.
func (p *nemCLI) run(ctx context.Context) {
	for ctx.Err() == nil {
		p.mu.Lock()
		for p.paused && ctx.Err() == nil {
			p.resumed.Wait()
		}
		p.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		path := p.rng.IntN(p.o.paths)
		p.leases++
		n := p.leases
		p.out.emit(nemEvent{Kind: evAcquire, Path: path, Lease: n})
		code := p.hold(ctx, path, n)
		p.out.emit(nemEvent{Kind: evCLIExit, Path: path, Lease: n, V: int64(code)})
		if code != 0 {
			sleepCtx(ctx, 50*time.Millisecond)
		}
	}
}

// hold runs one turnstile lock process, and returns its exit status
// (128+N when signal N ended it, -1 when it could not start).
func (p *nemCLI) hold(ctx context.Context, path, n int) int {
	// The writer: 4 to 20 rounds of a think time (up to twice a client's)
	// and a fenced write, a job of two or three seconds on average: long
	// enough that a cut from the servers often finds it running when the
	// CLI's lease is lost, a session's timeout less its margin later.
	argv := []string{"-fence", p.o.fence, "-path", strconv.Itoa(path), "-lease", strconv.Itoa(n),
		"-name", p.o.name, "-think", (2 * p.o.think).String(), "-rounds", strconv.Itoa(4 + p.rng.IntN(17)),
		"-seed", strconv.FormatUint(p.rng.Uint64(), 10)}
	if p.rng.IntN(2) == 0 {
		argv = append(argv, "-stubborn")
	}
	if p.o.control {
		argv = append(argv, "-control", "-runner", p.runner)
	}
	args := append([]string{"lock", "-servers", strings.Join(p.fronts, ","),
		"-session-timeout", p.o.session.String(), "-grace", "1s", "-timeout", "20s", "-owner", p.o.name,
		nemLockPath(path), "--", p.self}, argv...)
	cmd := exec.CommandContext(ctx, p.turnstile, args...)
	cmd.Env = append(os.Environ(), childEnv+"="+nemesisCmdMode)
	cmd.Stdout = p.stdout // CMD writes its events straight to the parent's pipe
	cmd.Stderr = &cliLines{p: p, path: path, n: n}
	// The end of the run: SIGTERM, as a service manager would send; the
	// tool stops CMD within -grace and releases.
	cmd.Cancel = func() error {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		return cmd.Process.Signal(syscall.SIGTERM)
	}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		p.log.Error("nemesis cli: turnstile lock", "err", err)
		return -1
	}
	p.mu.Lock()
	p.cur = cmd
	if p.paused { // a stop came while it started
		_ = cmd.Process.Signal(syscall.SIGSTOP)
		p.stopped = cmd
	}
	p.mu.Unlock()
	err := cmd.Wait()
	p.mu.Lock()
	p.cur = nil
	p.mu.Unlock()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exitErr.ExitCode()
	}
	p.log.Warn("nemesis cli: turnstile lock", "err", err)
	return -1
}

// commands obeys the parent's commands on r until r ends.
func (p *nemCLI) commands(r io.Reader, proxy *delayProxy) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) == 2 && fs[0] == "latency":
			if d, err := time.ParseDuration(fs[1]); err == nil {
				proxy.setDelay(d)
				p.log.Info("nemesis cli: latency", "each way", d)
				continue
			}
		case len(fs) == 1 && fs[0] == "stop":
			p.mu.Lock()
			p.paused = true
			if p.cur != nil {
				_ = p.cur.Process.Signal(syscall.SIGSTOP)
				p.stopped = p.cur
			}
			p.mu.Unlock()
			continue
		case len(fs) == 1 && fs[0] == "cont":
			p.mu.Lock()
			if p.stopped != nil {
				_ = p.stopped.Process.Signal(syscall.SIGCONT)
				p.stopped = nil
			}
			p.paused = false
			p.resumed.Broadcast()
			p.mu.Unlock()
			continue
		case len(fs) == 1 && fs[0] == "kill":
			p.mu.Lock()
			if p.cur != nil {
				// By its os.Process, which holds a pidfd: never another
				// process that took a reaped one's pid.
				_ = p.cur.Process.Signal(syscall.SIGKILL)
			}
			p.mu.Unlock()
			continue
		}
		p.log.Warn("nemesis cli: unknown command", "line", sc.Text())
	}
}

// cliLines is the turnstile process's stderr: copied to the participant's,
// and its word that the lease was lost noted as an event.
type cliLines struct {
	p       *nemCLI
	path, n int
	buf     []byte
}

func (w *cliLines) Write(b []byte) (int, error) {
	w.buf = append(w.buf, b...)
	for {
		i := slices.Index(w.buf, '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		// runWhile's "turnstile: lock on PATH lost (ERR): stopping CMD".
		if strings.HasPrefix(line, "turnstile: lock on ") && strings.Contains(line, " lost (") {
			w.p.out.emit(nemEvent{Kind: evCLILost, Path: w.path, Lease: w.n, Err: line})
		}
		fmt.Fprintf(w.p.stderr, "[turnstile lease %d] %s\n", w.n, line)
	}
	return len(b), nil
}

// startFronts listens on a local address per server, each connection
// forwarded to its server through proxy; it returns the addresses and a
// function that closes the listeners.
func startFronts(proxy *delayProxy, servers []string, timeout time.Duration) ([]string, func(), error) {
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	var addrs []string
	for _, s := range servers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("front for %s: %w", s, err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go forward(proxy, c, s, timeout)
			}
		}()
	}
	return addrs, closeAll, nil
}

// forward joins c to a connection to server through proxy; the end of
// either ends both. A server the proxy cannot reach closes c at once, as
// a refused dial would.
func forward(proxy *delayProxy, c net.Conn, server string, timeout time.Duration) {
	up, err := proxy.dial("tcp", server, timeout)
	if err != nil {
		c.Close()
		return
	}
	go func() {
		_, _ = io.Copy(up, c)
		up.Close()
		c.Close()
	}()
	_, _ = io.Copy(c, up)
	c.Close()
	up.Close()
}

// nemesisCmdMain is the CLI's CMD (see above): the writer, or in the
// control (-runner) a request to the runner to run the writer.
func nemesisCmdMain(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet(nemesisCmdMode, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fence := fl.String("fence", "", "the fence's socket")
	path := fl.Int("path", 0, "the lock path's index")
	lease := fl.Int("lease", 0, "the lease's number in the participant")
	name := fl.String("name", "", "the writer's name at the fence")
	think := fl.Duration("think", 400*time.Millisecond, "the longest think time before a write")
	rounds := fl.Int("rounds", 1, "fenced writes")
	seed := fl.Uint64("seed", 1, "")
	stubborn := fl.Bool("stubborn", false, "ignore SIGTERM")
	control := fl.Bool("control", false, "write without the fence's judgement")
	runner := fl.String("runner", "", "have the runner at this socket run the writer, and wait for it")
	if err := fl.Parse(args); err != nil || *fence == "" || *name == "" || *lease < 1 {
		fmt.Fprintln(stderr, "nemesis cmd: -fence, -name and -lease are needed")
		return exitUsage
	}
	token, err := strconv.ParseInt(os.Getenv("TURNSTILE_TOKEN"), 10, 64)
	if err != nil {
		fmt.Fprintf(stderr, "nemesis cmd: TURNSTILE_TOKEN: %v\n", err)
		return exitUsage
	}
	if *stubborn {
		signal.Ignore(syscall.SIGTERM)
	}
	if *runner != "" {
		var rest []string
		fl.Visit(func(f *flag.Flag) {
			if f.Name != "runner" {
				rest = append(rest, "-"+f.Name+"="+f.Value.String())
			}
		})
		return runThrough(*runner, token, rest, stderr)
	}
	conn, err := fenceHello(*fence, *path, token, *name, *lease)
	if err != nil {
		fmt.Fprintf(stderr, "nemesis cmd: %v\n", err)
		return exitFailed
	}
	defer conn.Close()
	out := &eventWriter{w: stdout}
	rng := rand.New(rand.NewPCG(*seed, uint64(os.Getpid())))
	// Each event's V is the rounds left after this one: the nemesis
	// picks a command with much left to do.
	for i := range *rounds {
		left := int64(*rounds - 1 - i)
		time.Sleep(time.Duration(rng.Int64N(int64(*think) + 1)))
		out.emit(nemEvent{Kind: evFenceInv, Path: *path, Lease: *lease, Token: token, V: left})
		seq, err := fenceWrite(*fence, *path, token, !*control, *name)
		fd := nemEvent{Kind: evFenceDone, Path: *path, Lease: *lease, Token: token, V: left}
		switch {
		case errors.Is(err, errFenceRefused):
			fd.Out = outFail
		case err != nil:
			fd.Out, fd.Err = outUnknown, err.Error()
		default:
			fd.Out, fd.Seq = outOK, seq
		}
		out.emit(fd)
	}
	return 0
}

// runRequest is CMD's request to the runner: the writer's arguments and
// its token.
type runRequest struct {
	Token int64    `json:"token"`
	Args  []string `json:"args"`
}

// runThrough asks the runner at socket to run the writer with args, waits
// for its end and returns its status.
func runThrough(socket string, token int64, args []string, stderr io.Writer) int {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "nemesis cmd: runner: %v\n", err)
		return exitFailed
	}
	defer c.Close()
	b, _ := json.Marshal(runRequest{Token: token, Args: args})
	if _, err := c.Write(append(b, '\n')); err != nil {
		fmt.Fprintf(stderr, "nemesis cmd: runner: %v\n", err)
		return exitFailed
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	code, perr := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "exit "))
	if err != nil || perr != nil {
		fmt.Fprintf(stderr, "nemesis cmd: runner: answer %q: %v\n", line, err)
		return exitFailed
	}
	return code
}

// nemRunner is the control's service: it runs each writer it is asked
// to, as a child of the participant, outside the CLI's tree, and answers
// with the writer's status when it ends.
type nemRunner struct {
	ln   net.Listener
	mu   sync.Mutex
	cmds map[*exec.Cmd]struct{}
	wg   sync.WaitGroup
}

func startRunner(socket, self string, stdout, stderr io.Writer) (*nemRunner, error) {
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	r := &nemRunner{ln: ln, cmds: map[*exec.Cmd]struct{}{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer c.Close()
				r.serve(c, self, stdout, stderr)
			}()
		}
	}()
	return r, nil
}

func (r *nemRunner) serve(c net.Conn, self string, stdout, stderr io.Writer) {
	line, err := bufio.NewReader(c).ReadString('\n')
	var req runRequest
	if err != nil || json.Unmarshal([]byte(line), &req) != nil {
		return
	}
	cmd := exec.Command(self, req.Args...)
	cmd.Env = append(os.Environ(), childEnv+"="+nemesisCmdMode, "TURNSTILE_TOKEN="+strconv.FormatInt(req.Token, 10))
	cmd.Stdout, cmd.Stderr = stdout, stderr
	r.mu.Lock()
	if r.cmds == nil { // closed
		r.mu.Unlock()
		return
	}
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		fmt.Fprintf(c, "exit %d\n", exitFailed)
		return
	}
	r.cmds[cmd] = struct{}{}
	r.mu.Unlock()
	err = cmd.Wait()
	r.mu.Lock()
	delete(r.cmds, cmd)
	r.mu.Unlock()
	code := 0
	if err != nil {
		code = exitFailed
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && exitErr.ExitCode() >= 0 {
			code = exitErr.ExitCode()
		}
	}
	// CMD may be gone (killed by the CLI): nobody reads the answer then.
	fmt.Fprintf(c, "exit %d\n", code)
}

// close stops accepting, kills the writers still running (its own
// children, by their os.Process) and waits for them.
func (r *nemRunner) close() {
	r.ln.Close()
	r.mu.Lock()
	for cmd := range r.cmds {
		_ = cmd.Process.Kill()
	}
	r.cmds = nil
	r.mu.Unlock()
	r.wg.Wait()
}
