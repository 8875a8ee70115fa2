//go:build linux

// Package netns builds a small network of its own for fault tests: one
// Linux network namespace per host (a ZooKeeper server, a client), each
// joined by a veth pair to a bridge that lives in a hub namespace of its
// own, so that nothing is added to the machine's own namespace. Every
// address lives on those veth links, in one /24; no namespace has a
// default route, nothing is forwarded or translated, so no packet can
// leave the machine. Partitions are real: nftables rules inside a host's
// namespace drop its packets to and from chosen peers, or its link is
// taken down.
//
// It needs root, the ip and nft commands (Debian's iproute2 and nftables)
// and a kernel with network namespaces, veth, bridges and nf_tables.
// Every namespace is named with a fixed prefix and the PID of the process
// that made it: New sweeps those of processes that are gone, and Close
// removes its own.
package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrUnsupported is returned (wrapped) by New where namespaces cannot be
// made: not root, no ip or nft command, or a kernel that refuses.
var ErrUnsupported = errors.New("netns: network namespaces unavailable")

// Prefix starts the name of every namespace this package makes.
const Prefix = "tsnet"

// subnet is the /24 of every host's address: on veth links only.
const subnet = "10.213.0."

// Net is one network: a hub namespace with the bridge, and the hosts.
type Net struct {
	tag string // Prefix + PID + a sequence number
	hub string // the hub namespace

	mu     sync.Mutex
	hosts  []*Host
	closed bool
}

// Host is one namespace on the network, with one address.
type Host struct {
	n    *Net
	Name string // short name, as given to AddHost
	NS   string // the namespace's name, for ip netns exec
	IP   string // its address on the bridge
	port string // its veth's name in the hub namespace

	mu        sync.Mutex
	blocked   map[string]bool // peers whose packets are dropped
	blockedIn map[string]bool // peers whose packets to h only are dropped
}

var seq struct {
	sync.Mutex
	n int
}

// New makes the hub namespace and its bridge, after sweeping namespaces
// left by processes that died before their Close.
func New() (*Net, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: not root", ErrUnsupported)
	}
	for _, cmd := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return nil, fmt.Errorf("%w: no %s command (apt-get install -y iproute2 nftables)", ErrUnsupported, cmd)
		}
	}
	Sweep()
	seq.Lock()
	seq.n++
	n := &Net{tag: fmt.Sprintf("%s%d-%d", Prefix, os.Getpid(), seq.n)}
	seq.Unlock()
	n.hub = n.tag + "-hub"
	if err := run("ip", "netns", "add", n.hub); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "br0", "type", "bridge"},
		{"link", "set", "br0", "up"},
	} {
		if err := run("ip", append([]string{"-n", n.hub}, args...)...); err != nil {
			n.Close()
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
	}
	return n, nil
}

// AddHost makes a namespace joined to the bridge, with the next address.
func (n *Net) AddHost(name string) (*Host, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("netns: network closed")
	}
	i := len(n.hosts) + 1
	if i > 250 {
		return nil, errors.New("netns: too many hosts")
	}
	h := &Host{
		n:         n,
		Name:      name,
		NS:        fmt.Sprintf("%s-%d", n.tag, i),
		IP:        subnet + strconv.Itoa(i+1),
		port:      "p" + strconv.Itoa(i),
		blocked:   make(map[string]bool),
		blockedIn: make(map[string]bool),
	}
	if err := run("ip", "netns", "add", h.NS); err != nil {
		return nil, err
	}
	n.hosts = append(n.hosts, h)
	steps := [][]string{
		{"ip", "-n", h.NS, "link", "set", "lo", "up"},
		{"ip", "-n", n.hub, "link", "add", h.port, "type", "veth", "peer", "name", "eth0", "netns", h.NS},
		{"ip", "-n", n.hub, "link", "set", h.port, "master", "br0"},
		{"ip", "-n", n.hub, "link", "set", h.port, "up"},
		{"ip", "-n", h.NS, "addr", "add", h.IP + "/24", "dev", "eth0"},
		{"ip", "-n", h.NS, "link", "set", "eth0", "up"},
		// The table the partitions fill: drop rules by peer address.
		{"ip", "netns", "exec", h.NS, "nft", "add table inet part; " +
			"add chain inet part in { type filter hook input priority 0; policy accept; }; " +
			"add chain inet part out { type filter hook output priority 0; policy accept; }"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Hosts are the hosts made so far, in order.
func (n *Net) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.hosts...)
}

// Close removes every namespace of the network (their veth links go with
// them). Processes still running inside lose their network only: the
// caller stops them first. It is idempotent.
func (n *Net) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	var errs []error
	for _, h := range n.hosts {
		errs = append(errs, run("ip", "netns", "delete", h.NS))
	}
	errs = append(errs, run("ip", "netns", "delete", n.hub))
	return errors.Join(errs...)
}

// Sweep deletes the namespaces of this package whose maker is gone.
func Sweep() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], Prefix) {
			continue
		}
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(f[0], Prefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			_ = run("ip", "netns", "delete", f[0])
		}
	}
}

// Command is a command to run inside the host's namespace.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}

// Dial connects from inside the host's namespace, as a process there
// would. The socket is made on an OS thread moved into the namespace, and
// that thread is never used for anything else: the goroutine that locked
// it returns without unlocking, and the runtime then ends the thread. The
// socket keeps its namespace for its whole life, whichever thread uses it.
func (h *Host) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: this thread's namespace is no longer the
		// process's, so it must die with this goroutine.
		if err := h.enter(); err != nil {
			ch <- result{nil, err}
			return
		}
		d := net.Dialer{Timeout: timeout}
		c, err := d.Dial(network, address)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// DialContext is Dial bounded by ctx rather than a timeout.
func (h *Host) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	timeout := 5 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	return h.Dial(network, address, timeout)
}

// enter moves the calling OS thread into the host's namespace.
func (h *Host) enter() error {
	f, err := os.Open("/var/run/netns/" + h.NS)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, _, errno := syscall.RawSyscall(sysSetns, f.Fd(), syscall.CLONE_NEWNET, 0); errno != 0 {
		return fmt.Errorf("netns: setns %s: %w", h.NS, errno)
	}
	return nil
}

// Block drops every packet between h and each peer, both ways, inside h's
// namespace: a partition of the link between them. Unblock heals it.
func (h *Host) Block(peers ...*Host) error { return h.setBlocked(true, peers) }

// Unblock removes the drop rules Block set for peers.
func (h *Host) Unblock(peers ...*Host) error { return h.setBlocked(false, peers) }

// BlockIn drops, inside h's namespace, the packets that reach h from each
// peer, and lets h's own packets out: an asymmetric partition, in which
// the peers hear h while h hears none of them. Heal removes it.
func (h *Host) BlockIn(peers ...*Host) error {
	h.mu.Lock()
	for _, p := range peers {
		h.blockedIn[p.IP] = true
	}
	h.mu.Unlock()
	return h.setBlocked(true, nil)
}

func (h *Host) setBlocked(on bool, peers []*Host) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range peers {
		h.blocked[p.IP] = on
	}
	var b strings.Builder
	b.WriteString("flush chain inet part in; flush chain inet part out; ")
	for ip, on := range h.blocked {
		if on {
			fmt.Fprintf(&b, "add rule inet part in ip saddr %s drop; add rule inet part out ip daddr %s drop; ", ip, ip)
		}
	}
	for ip, on := range h.blockedIn {
		if on && !h.blocked[ip] {
			fmt.Fprintf(&b, "add rule inet part in ip saddr %s drop; ", ip)
		}
	}
	return run("ip", "netns", "exec", h.NS, "nft", b.String())
}

// Partition cuts every host of a from every host of b, both ways.
func Partition(a, b []*Host) error {
	var errs []error
	for _, h := range a {
		errs = append(errs, h.Block(b...))
	}
	for _, h := range b {
		errs = append(errs, h.Block(a...))
	}
	return errors.Join(errs...)
}

// Heal removes every drop rule of the given hosts.
func Heal(hosts ...*Host) error {
	var errs []error
	for _, h := range hosts {
		h.mu.Lock()
		clear(h.blocked)
		clear(h.blockedIn)
		h.mu.Unlock()
		errs = append(errs, h.setBlocked(false, nil))
	}
	return errors.Join(errs...)
}

// LinkDown takes the host's link to the bridge down: every peer is cut at
// once, and a connection attempt fails at once instead of timing out.
// LinkUp brings it back.
func (h *Host) LinkDown() error { return run("ip", "-n", h.NS, "link", "set", "eth0", "down") }

// LinkUp brings the host's link back, with its address.
func (h *Host) LinkUp() error { return run("ip", "-n", h.NS, "link", "set", "eth0", "up") }

func run(name string, args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("netns: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}
