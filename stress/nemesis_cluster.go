//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/netns"
	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// nemCluster is the nemesis run's world: a network of namespaces
// (internal/netns), a ZooKeeper ensemble with one member per namespace,
// and client processes, one per namespace. ctl is the namespace the
// parent's own requests come from (readiness, leader, the registers'
// setup and last read); no fault ever cuts it.
type nemCluster struct {
	net       *netns.Net
	ctl       *netns.Host
	servers   []*netns.Host // servers[i] runs ens.Servers[i]
	hosts     []*netns.Host // the clients' namespaces, then the CLI participants'
	ens       *zkserver.Ensemble
	dir       string // the fence's socket and the client logs
	fence     *exec.Cmd
	fenceIn   io.WriteCloser // closed to end the fence process
	fenceDone chan struct{}
	hist      *nemHistory
	opts      nemClientOptions
	clients   []*nemProc
	log       *slog.Logger
}

// The ensemble's timing: the lab of internal/partition's, where a
// follower cut from its leader goes on answering its clients for up to
// syncLimit × tickTime = 5 s, longer than a session.
const (
	nemTick      = 250 * time.Millisecond
	nemSyncLimit = 20
)

// newNemCluster builds the network, starts the ensemble, creates the lock
// root and the registers, and starts the clients. On error, what was made
// is removed.
func newNemCluster(ctx context.Context, nodes, clients int, opts nemClientOptions, log *slog.Logger) (c *nemCluster, err error) {
	n, err := netns.New()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "turnstile-nemesis-")
	if err != nil {
		_ = n.Close()
		return nil, err
	}
	c = &nemCluster{net: n, dir: dir, hist: &nemHistory{}, log: log}
	defer func() {
		if err != nil {
			c.close()
			c = nil
		}
	}()
	add := func(name string) *netns.Host {
		if err != nil {
			return nil
		}
		var h *netns.Host
		h, err = n.AddHost(name)
		return h
	}
	c.ctl = add("ctl")
	for i := range nodes {
		c.servers = append(c.servers, add("s"+strconv.Itoa(i+1)))
	}
	for i := range clients + opts.cli {
		c.hosts = append(c.hosts, add("c"+strconv.Itoa(i+1)))
	}
	if err != nil {
		return nil, err
	}
	members := make([]zkserver.Member, nodes)
	for i, h := range c.servers {
		members[i] = zkserver.Member{IP: h.IP, Command: h.Command, Dial: c.ctl.DialContext}
	}
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c.ens, err = zkserver.StartEnsembleOn(sctx, members, zkserver.Options{
		TickTime:          nemTick,
		MinSessionTimeout: 2 * nemTick,
		ExtraConfig:       map[string]string{"syncLimit": strconv.Itoa(nemSyncLimit), "initLimit": "20"},
	})
	if err != nil {
		return nil, err
	}
	opts.servers = c.ens.Addrs()
	opts.fence = nemFenceSocket(dir)
	c.opts = opts
	if err = c.setup(); err != nil {
		return nil, err
	}
	if err = c.startFence(); err != nil {
		return nil, err
	}
	for i, h := range c.hosts {
		p := &nemProc{id: i, host: h, cli: i >= clients}
		c.clients = append(c.clients, p)
		if err = c.start(p); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// session opens a plain session from ctl, for the parent's own requests.
func (c *nemCluster) session(timeout time.Duration) (*zk.Conn, error) {
	conn, events, err := zk.Connect(c.ens.Addrs(), 10*time.Second, zk.WithDialer(c.ctl.Dial), zk.WithLogger(nemQuiet{}))
	if err != nil {
		return nil, err
	}
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() {
					for range events {
					}
				}()
				return conn, nil
			}
		case <-deadline:
			conn.Close()
			return nil, errors.New("nemesis: no session from ctl")
		}
	}
}

type nemQuiet struct{}

func (nemQuiet) Printf(string, ...any) {}

// startFence starts the fence process (nemesis_fence.go) and waits for it
// to listen.
func (c *nemCluster) startFence() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-socket", c.opts.fence)
	cmd.Env = append(os.Environ(), childEnv+"="+nemesisFenceMode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, stdin, logf, err := startLogged(cmd, filepath.Join(c.dir, "fence.log"))
	if err != nil {
		return fmt.Errorf("nemesis: the fence process: %w", err)
	}
	c.fence, c.fenceIn, c.fenceDone = cmd, stdin, make(chan struct{})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ready <- sc.Scan() && sc.Text() == "ready"
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		logf.Close()
		close(c.fenceDone)
	}()
	select {
	case ok := <-ready:
		if ok {
			return nil
		}
	case <-time.After(30 * time.Second):
	}
	return errors.New("nemesis: the fence process did not start (see fence.log)")
}

// fenceRecords reads the fence's log of accepted writes.
func (c *nemCluster) fenceRecords() ([]fenceRecord, error) {
	return fenceLog(c.opts.fence)
}

// cmdLives reads the lives of the CLI participants' writers, as the fence
// observed them, as history events.
func (c *nemCluster) cmdLives() ([]nemEvent, error) {
	lives, err := fenceLives(c.opts.fence)
	if err != nil {
		return nil, err
	}
	var out []nemEvent
	for _, l := range lives {
		var client, inc int
		if _, err := fmt.Sscanf(l.Who, "c%d.%d", &client, &inc); err != nil {
			return nil, fmt.Errorf("fence lives: writer %q: %w", l.Who, err)
		}
		ev := nemEvent{Client: client, Inc: inc, Kind: evCmdStart, T: l.Start, Lease: l.Lease, Path: l.Path, Token: l.Token}
		out = append(out, ev)
		if l.End != 0 {
			ev.Kind, ev.T = evCmdEnd, l.End
			out = append(out, ev)
		}
	}
	return out, nil
}

// stopFence ends the fence process: stdin closed, then killed (by its
// os.Process, never by name) if it has not exited within a bound.
func (c *nemCluster) stopFence() {
	if c.fence == nil {
		return
	}
	_ = c.fenceIn.Close()
	select {
	case <-c.fenceDone:
	case <-time.After(10 * time.Second):
		_ = c.fence.Process.Kill()
		<-c.fenceDone
	}
	c.fence = nil
}

// setup creates the root and each register with value 0.
func (c *nemCluster) setup() error {
	conn, err := c.session(time.Minute)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Create(nemRoot, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("nemesis: create %s: %w", nemRoot, err)
	}
	for i := range c.opts.paths {
		if _, err := conn.Create(nemRegisterPath(i), []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			return fmt.Errorf("nemesis: create the register: %w", err)
		}
	}
	return nil
}

// registers reads each register's final value, after a sync, once every
// fault is healed.
func (c *nemCluster) registers() ([]int64, error) {
	conn, err := c.session(time.Minute)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var vs []int64
	for i := range c.opts.paths {
		if _, err := conn.Sync(nemRegisterPath(i)); err != nil {
			return nil, err
		}
		data, _, err := conn.Get(nemRegisterPath(i))
		if err != nil {
			return nil, err
		}
		v, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// nemProc is one client's process, restarted under a new incarnation after
// each kill.
type nemProc struct {
	id   int
	host *netns.Host
	cli  bool // a CLI participant (nemesis_cli.go), not a client

	mu      sync.Mutex
	inc     int
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	done    chan struct{} // closed once the incarnation's process is reaped
	stopped bool
	last    nemEvent // the latest event, for the nemesis's choice of a victim
}

// start starts a new incarnation of p's process, in its namespace.
func (c *nemCluster) start(p *nemProc) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inc++
	inc := p.inc
	o := c.opts
	o.seed = o.seed*1000 + uint64(p.id*100+inc)
	o.name = fmt.Sprintf("c%d.%d", p.id, inc)
	cmd := p.host.Command(self, o.args()...)
	cmd.Env = append(os.Environ(), childEnv+"="+nemesisClientMode)
	if p.cli {
		runner := filepath.Join(c.dir, fmt.Sprintf("runner-%d.sock", p.id))
		cmd = p.host.Command(self, o.cliArgs(o.turnstile, runner)...)
		cmd.Env = append(os.Environ(), childEnv+"="+nemesisCLIMode)
	}
	// A process group of its own: the terminal's Ctrl-C is the parent's to
	// handle, which then ends its clients.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, stdin, logf, err := startLogged(cmd, fmt.Sprintf("%s/client-%d.log", c.dir, p.id))
	if err != nil {
		return fmt.Errorf("nemesis: client %d: %w", p.id, err)
	}
	done := make(chan struct{})
	p.cmd, p.stdin, p.done, p.stopped = cmd, stdin, done, false
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev nemEvent
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			ev.Client, ev.Inc = p.id, inc
			c.hist.add(ev)
			p.mu.Lock()
			if p.inc == inc {
				p.last = ev
			}
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	return nil
}

// signal signals p's current process (os.Process holds a pidfd, so a
// reaped process's PID, reused, is never hit).
func (p *nemProc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	switch sig {
	case syscall.SIGSTOP:
		p.stopped = true
	case syscall.SIGCONT:
		p.stopped = false
	}
}

// pause stops p's holder: a client's process, or a CLI participant's
// turnstile process (its command runs on); resume continues it.
func (p *nemProc) pause() {
	if p.cli {
		p.send("stop")
	} else {
		p.signal(syscall.SIGSTOP)
	}
}

func (p *nemProc) resume() {
	if p.cli {
		p.send("cont")
	} else {
		p.signal(syscall.SIGCONT)
	}
}

// send writes one command line to p's current process (nemesis_client.go);
// a process stopped meanwhile finds it in its pipe when continued.
func (p *nemProc) send(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	if p.stdin != nil {
		_, _ = io.WriteString(p.stdin, line+"\n")
	}
}

// kill ends p's current process at once and waits for it.
func (p *nemProc) kill() (inc int) {
	p.signal(syscall.SIGKILL)
	p.mu.Lock()
	done, inc := p.done, p.inc
	p.mu.Unlock()
	<-done
	return inc
}

// phase is p's latest event and its incarnation.
func (p *nemProc) phase() (nemEvent, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.inc
}

// stopClients ends every client: continued if stopped, stdin closed, then
// killed if it has not exited within a bound.
func (c *nemCluster) stopClients() {
	for _, p := range c.clients {
		p.signal(syscall.SIGCONT)
		p.mu.Lock()
		if p.stdin != nil {
			_ = p.stdin.Close()
		}
		done := p.done
		p.mu.Unlock()
		if done == nil {
			continue
		}
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			p.kill()
		}
	}
}

// waitServing waits until every running member serves a session from ctl:
// a member whose link came back answers four-letter words before it has
// caught up with the leader, and refuses sessions until then.
func (c *nemCluster) waitServing(ctx context.Context) error {
	if err := c.ens.WaitReady(ctx); err != nil {
		return err
	}
	for _, s := range c.ens.Servers {
		if !s.Running() {
			continue
		}
		conn, events, err := zk.Connect([]string{s.Addr()}, 2*time.Second,
			zk.WithDialer(c.ctl.Dial), zk.WithLogger(nemQuiet{}))
		if err != nil {
			return err
		}
		served := false
		for !served {
			select {
			case ev := <-events:
				served = ev.State == zk.StateHasSession
			case <-ctx.Done():
				conn.Close()
				return fmt.Errorf("nemesis: member %d serves no session: %w", s.ID(), ctx.Err())
			}
		}
		conn.Close()
		for range events {
		}
	}
	return nil
}

// close stops the clients, the fence, the ensemble, and removes every
// namespace.
func (c *nemCluster) close() {
	c.stopClients()
	c.stopFence()
	if c.ens != nil {
		_ = c.ens.Close()
	}
	if err := c.net.Close(); err != nil {
		c.log.Error("nemesis: removing the namespaces", "err", err)
	}
}

// startLogged starts cmd with its stderr appended to the file logPath and
// pipes to its stdout and stdin: a client's and the fence's, alike. The
// caller closes the log once cmd has been waited for.
func startLogged(cmd *exec.Cmd, logPath string) (stdout io.ReadCloser, stdin io.WriteCloser, logf *os.File, err error) {
	logf, err = os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, nil, err
	}
	cmd.Stderr = logf
	stdout, err = cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, nil, nil, err
	}
	stdin, err = cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, nil, err
	}
	return stdout, stdin, logf, nil
}
