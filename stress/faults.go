package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	// Shopify's toxiproxy, used as a Go library (no toxiproxy server process,
	// no HTTP API): a well-kept TCP proxy that can drop every connection at
	// once and add latency with jitter, so the harness does not carry a proxy
	// of its own. Each proxy listens on 127.0.0.1 only.
	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// proxies are one in-process toxiproxy per ZooKeeper member, on loopback,
// between the client under test and the servers.
type proxies struct {
	mu   sync.Mutex
	list []*toxiproxy.Proxy
	up   bool
}

func newProxies(upstreams []string) (*proxies, error) {
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := &proxies{up: true}
	for i, u := range upstreams {
		px := toxiproxy.NewProxy(api, fmt.Sprintf("zk%d", i), "127.0.0.1:0", u)
		if err := px.Start(); err != nil {
			p.Close()
			return nil, fmt.Errorf("proxy to %s: %w", u, err)
		}
		p.list = append(p.list, px)
	}
	return p, nil
}

// Addrs are the proxies' listen addresses, in member order.
func (p *proxies) Addrs() []string {
	var a []string
	for _, px := range p.list {
		a = append(a, px.Listen)
	}
	return a
}

// down closes every proxied connection and stops accepting new ones, so a
// client's reconnects are refused until up.
func (p *proxies) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, px := range p.list {
		px.Stop()
	}
	p.up = false
}

// up listens again on the same addresses.
func (p *proxies) upAgain() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.up {
		return nil
	}
	var errs []string
	for _, px := range p.list {
		var err error
		// The port was ours a moment ago; a retry covers a slow close.
		for range 50 {
			if err = px.Start(); err == nil || errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", px.Listen, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("restart proxies: %s", strings.Join(errs, "; "))
	}
	p.up = true
	return nil
}

// addLatency delays every chunk in both directions by latency +/- jitter.
// The jitter is drawn by toxiproxy from its own random source, not -seed.
func (p *proxies) addLatency(latency, jitter time.Duration) error {
	for _, px := range p.list {
		for _, dir := range []string{"upstream", "downstream"} {
			body := fmt.Sprintf(`{"name":"latency_%s","type":"latency","stream":%q,"toxicity":1.0,"attributes":{"latency":%d,"jitter":%d}}`,
				dir, dir, latency.Milliseconds(), jitter.Milliseconds())
			if _, err := px.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
				return fmt.Errorf("latency toxic on %s: %w", px.Listen, err)
			}
		}
	}
	return nil
}

func (p *proxies) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, px := range p.list {
		px.Toxics.ResetToxics(context.Background())
		px.Stop()
	}
	p.up = false
}

// injector injects the faults of a run at random intervals until stopped.
// Latency is set once for the whole run by the caller; cancel is done by
// the workers.
type injector struct {
	cfg      *config
	cl       *cluster
	px       *proxies
	rng      *rand.Rand
	count    atomic.Int64
	logf     func(format string, a ...any)
	downTime time.Duration // expire: how long the client is kept away
	pause    *pauser       // pause: the holder it stalls
	tl       *timeline     // -report: where each fault is marked; nil without
}

func (in *injector) kinds() []string {
	var k []string
	for _, f := range in.cfg.Faults {
		switch f {
		case "conn-cut", "expire", "leader-kill", "pause":
			k = append(k, f)
		}
	}
	return k
}

// run injects until ctx ends, then leaves every proxy up and every member
// running, so the end of the run (release, close, orphan scan) is not
// disturbed.
func (in *injector) run(ctx context.Context) {
	kinds := in.kinds()
	if len(kinds) == 0 {
		return
	}
	for {
		if !sleepCtx(ctx, jittered(in.rng, in.cfg.FaultInterval)) {
			return
		}
		k := kinds[in.rng.IntN(len(kinds))]
		from := time.Now()
		switch k {
		case "conn-cut":
			// Drop every connection; keep refusing for up to 500 ms so some
			// reconnect attempts fail too.
			in.px.down()
			sleepCtx(ctx, time.Duration(in.rng.Int64N(int64(500*time.Millisecond))))
			if err := in.px.upAgain(); err != nil {
				in.logf("fault conn-cut: %v", err)
			}
		case "expire":
			// Keep the client away longer than its session lives, so the
			// server expires it; the wait is not cut short by ctx, or the
			// fault would not happen.
			in.px.down()
			time.Sleep(in.downTime)
			if err := in.px.upAgain(); err != nil {
				in.logf("fault expire: %v", err)
			}
		case "leader-kill":
			in.killLeader(ctx)
		case "pause":
			if err := in.pause.stall(); err != nil {
				in.pause.noteErr(err)
				in.logf("fault pause: %v", err)
			}
		}
		in.tl.fault(k, from, time.Now())
		in.count.Add(1)
	}
}

func (in *injector) killLeader(ctx context.Context) {
	ens := in.cl.ensemble
	lctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var idx int
	var err error
	for { // an election may be under way
		if idx, err = ens.Leader(lctx); err == nil || lctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		in.logf("fault leader-kill: no leader: %v", err)
		return
	}
	srv := ens.Servers[idx]
	if err := srv.Kill(); err != nil {
		in.logf("fault leader-kill: kill server %d: %v", srv.ID(), err)
		return
	}
	sleepCtx(ctx, time.Duration(500+in.rng.IntN(1000))*time.Millisecond)
	rctx, rcancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer rcancel()
	if err := srv.Restart(rctx); err != nil {
		in.logf("fault leader-kill: restart server %d: %v", srv.ID(), err)
	}
}

// jittered draws a wait from 0.5x to 1.5x of mean.
func jittered(rng *rand.Rand, mean time.Duration) time.Duration {
	return mean/2 + time.Duration(rng.Int64N(int64(mean)+1))
}

// sleepCtx sleeps for d or until ctx ends; it reports whether it slept the
// whole time.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
