//go:build linux

package partition

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netns"
	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// lab is a 3-member ensemble, each member on a host (namespace) of its
// own, and client hosts: every client engine's connections are made
// inside its host's namespace. ctl is the host the test's own checks
// (four-letter words) come from; no partition ever cuts it.
type lab struct {
	net     *netns.Net
	servers []*netns.Host // servers[i] runs ens.Servers[i]
	clients []*netns.Host
	ctl     *netns.Host
	ens     *zkserver.Ensemble
	opts    labOptions
}

type labOptions struct {
	tick      time.Duration // tickTime
	syncLimit int           // in ticks
	clients   int
	// leaderServesNo: the ensemble's leader takes no clients.
	leaderServesNo bool
}

// newLab builds the network and starts the ensemble; everything is removed
// at cleanup. It skips only where namespaces cannot be made at all.
func newLab(t *testing.T, o labOptions) *lab {
	t.Helper()
	n, err := netns.New()
	if errors.Is(err, netns.ErrUnsupported) {
		t.Skipf("real partitions need root and network namespaces: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{net: n, opts: o}
	t.Cleanup(func() {
		if l.ens != nil {
			if t.Failed() {
				for _, s := range l.ens.Servers {
					t.Logf("member %d log tail:\n%s", s.ID(), s.LogTail(30))
				}
			}
			_ = l.ens.Close()
		}
		if err := n.Close(); err != nil {
			t.Errorf("removing the namespaces: %v", err)
		}
	})
	add := func(name string) *netns.Host {
		h, err := n.AddHost(name)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	l.ctl = add("ctl")
	for i := range 3 {
		l.servers = append(l.servers, add("s"+strconv.Itoa(i+1)))
	}
	for i := range o.clients {
		l.clients = append(l.clients, add("c"+strconv.Itoa(i+1)))
	}
	members := make([]zkserver.Member, len(l.servers))
	for i, h := range l.servers {
		members[i] = zkserver.Member{IP: h.IP, Command: h.Command, Dial: l.ctl.DialContext}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l.ens, err = zkserver.StartEnsembleOn(ctx, members, zkserver.Options{
		TickTime:          o.tick,
		MinSessionTimeout: 2 * o.tick,
		ExtraConfig:       map[string]string{"syncLimit": strconv.Itoa(o.syncLimit), "initLimit": "20"},
		LeaderServesNo:    o.leaderServesNo,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// waitServing waits until every member serves a session: a member whose
// link came back answers ruok and srvr before it has caught up with the
// leader, and closes every client connection until then.
func (l *lab) waitServing(t *testing.T) {
	t.Helper()
	leader := -1
	if l.opts.leaderServesNo {
		leader, _ = l.roles(t) // it serves no client
	}
	for i, s := range l.ens.Servers {
		if i == leader {
			continue
		}
		conn, events, err := zk.Connect([]string{s.Addr()}, 2*time.Second,
			zk.WithDialer(l.ctl.Dial), zk.WithLogger(quiet{}))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.After(time.Minute)
	wait:
		for {
			select {
			case ev := <-events:
				if ev.State == zk.StateHasSession {
					break wait
				}
			case <-deadline:
				conn.Close()
				t.Fatalf("member %d serves no session", s.ID())
			}
		}
		conn.Close()
		for range events {
		}
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// roles are the indexes of the leader and of the two followers.
func (l *lab) roles(t *testing.T) (leader int, followers []int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.ens.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	leader, err := l.ens.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.servers {
		if i != leader {
			followers = append(followers, i)
		}
	}
	return leader, followers
}

func (l *lab) addrs(idx ...int) []string {
	var a []string
	for _, i := range idx {
		a = append(a, l.ens.Servers[i].Addr())
	}
	return a
}

// engineOn starts an engine whose connections are made from host.
func engineOn(t *testing.T, host *netns.Host, servers []string, session time.Duration) *engine.Engine {
	t.Helper()
	return engineWith(t, host, engine.Config{Servers: servers, SessionTimeout: session})
}

// engineWith starts an engine of cfg whose connections are made from
// host, logging into the test.
func engineWith(t *testing.T, host *netns.Host, cfg engine.Config) *engine.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	level := slog.LevelInfo
	if os.Getenv("TURNSTILE_PARTITION_DEBUG") != "" {
		level = slog.LevelDebug
	}
	cfg.Dialer = host.Dial
	cfg.Logger = slog.New(slog.NewTextHandler(&testLog{t: t, prefix: host.Name}, &slog.HandlerOptions{Level: level}))
	e, err := engine.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("engine on %s: %v", host.Name, err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// testLog writes log lines into the test's output while the test runs.
type testLog struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Logf("%s: %s", w.prefix, strings.TrimSpace(string(p)))
	return len(p), nil
}

var _ io.Writer = (*testLog)(nil)
