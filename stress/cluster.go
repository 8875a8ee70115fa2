package main

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// cluster is the ZooKeeper a run talks to: embedded (a standalone server or
// an ensemble, started here and always closed here) or external.
type cluster struct {
	addrs    []string
	server   *zkserver.Server   // embedded standalone
	ensemble *zkserver.Ensemble // embedded ensemble
	version  string

	// reaps: the embedded servers sweep empty containers every reapEvery
	// (a keys run is planned); false on -servers, whose sweep is unknown.
	reaps bool

	// The server's session bounds and tick, from "conf", to know how long
	// an expiry fault must keep a client away. Zero when unknown.
	minSession, maxSession, tick time.Duration
}

// serverOptions are the embedded servers' options. The harness measures
// ZooKeeper as it is run in production: -fsync (the default) keeps its
// default durability, forceSync=yes, where the tests' servers skip the
// fsync; and its JVM gets the full JIT (zkserver's default flags stop at
// the C1 compiler for a fast start, and the last of two equal flags wins).
func serverOptions(cfg *config) zkserver.Options {
	flags := []string{"-XX:TieredStopAtLevel=4"}
	if cfg.keysPlanned {
		flags = append(flags, reaperFlags...)
	}
	return zkserver.Options{ForceSync: cfg.FSync, JVMFlags: flags}
}

func startCluster(ctx context.Context, cfg *config) (*cluster, error) {
	c := &cluster{}
	switch {
	case len(cfg.Servers) > 0:
		c.addrs = cfg.Servers
	case cfg.Ensemble > 1:
		ens, err := zkserver.StartEnsemble(ctx, cfg.Ensemble, serverOptions(cfg))
		if err != nil {
			return nil, fmt.Errorf("start an embedded ensemble of %d: %w", cfg.Ensemble, err)
		}
		c.ensemble = ens
		c.reaps = cfg.keysPlanned
		c.addrs = ens.Addrs()
	default:
		srv, err := zkserver.Start(ctx, serverOptions(cfg))
		if err != nil {
			return nil, fmt.Errorf("start an embedded ZooKeeper: %w", err)
		}
		c.server = srv
		c.reaps = cfg.keysPlanned
		c.addrs = []string{srv.Addr()}
	}
	for _, a := range c.addrs {
		if v, err := zkserver.Version(ctx, a); err == nil {
			c.version = v
			break
		}
	}
	for _, a := range c.addrs {
		if conf, err := zkserver.FourLetterWord(ctx, a, "conf"); err == nil {
			kv := parseKV(conf, "=")
			c.minSession = msField(kv, "minSessionTimeout")
			c.maxSession = msField(kv, "maxSessionTimeout")
			c.tick = msField(kv, "tickTime")
			break
		}
	}
	return c, nil
}

func (c *cluster) Close() {
	if c.server != nil {
		c.server.Close()
	}
	if c.ensemble != nil {
		c.ensemble.Close()
	}
}

// pids are the embedded servers' processes (none for -servers).
func (c *cluster) pids() []int {
	var servers []*zkserver.Server
	switch {
	case c.server != nil:
		servers = []*zkserver.Server{c.server}
	case c.ensemble != nil:
		servers = c.ensemble.Servers
	}
	var pids []int
	for _, s := range servers {
		if p := s.PID(); p != 0 {
			pids = append(pids, p)
		}
	}
	return pids
}

// negotiated is the session timeout a server grants for asked: asked
// clamped to the server's bounds, when they are known.
func (c *cluster) negotiated(asked time.Duration) time.Duration {
	if c.minSession > 0 && asked < c.minSession {
		asked = c.minSession
	}
	if c.maxSession > 0 && asked > c.maxSession {
		asked = c.maxSession
	}
	return asked
}

// mntrSum adds up one numeric mntr field over every member. ok is false
// when a member did not answer (an external server may forbid mntr).
func (c *cluster) mntrSum(ctx context.Context, key string) (sum int64, ok bool) {
	for _, a := range c.addrs {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		out, err := zkserver.FourLetterWord(ctx, a, "mntr")
		cancel()
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseInt(parseKV(out, "\t")[key], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += v
	}
	return sum, true
}

// packetsReceived is every request packet the members received so far:
// zk_packets_received summed over the ensemble.
func (c *cluster) packetsReceived(ctx context.Context) (int64, bool) {
	return c.mntrSum(ctx, "zk_packets_received")
}

func (c *cluster) watchCount(ctx context.Context) (int64, bool) {
	return c.mntrSum(ctx, "zk_watch_count")
}

// waitReady, after leader-kill faults, waits until every member serves.
func (c *cluster) waitReady(ctx context.Context) error {
	if c.ensemble == nil {
		return nil
	}
	return c.ensemble.WaitReady(ctx)
}

func parseKV(s, sep string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

func msField(kv map[string]string, key string) time.Duration {
	n, err := strconv.ParseInt(kv[key], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}
