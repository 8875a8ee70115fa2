package zkserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Ensemble is n ZooKeeper servers on loopback forming one quorum. Servers[i]
// has myid i+1. Members can be stopped, killed and restarted one by one
// through their Server methods.
type Ensemble struct {
	Servers []*Server
}

// StartEnsemble starts n servers on 127.0.0.1, each with its own temp dir,
// myid and distinct client, quorum and election ports, and waits until every
// member answers imok, reports mode leader or follower, and one is leader.
func StartEnsemble(ctx context.Context, n int, opts Options) (*Ensemble, error) {
	if n < 1 {
		return nil, fmt.Errorf("zkserver: ensemble of %d servers", n)
	}
	opts = opts.withDefaults()
	inst, err := findInstall()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		e, bindErr, err := startEnsembleOnce(ctx, n, opts, inst)
		if err == nil {
			return e, nil
		}
		lastErr = err
		if !bindErr || ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func startEnsembleOnce(ctx context.Context, n int, opts Options, inst install) (*Ensemble, bool, error) {
	per := 2 + opts.portsPerServer()
	ports, err := freePorts(per * n)
	if err != nil {
		return nil, false, err
	}
	peers := make([]peer, n)
	for i := range peers {
		own := ports[per*i : per*(i+1)]
		peers[i] = peer{id: i + 1, quorumPort: own[0], electionPrt: own[1], clientPort: own[2]}
		if opts.TLS != nil {
			peers[i].securePort = own[3]
		}
	}
	e := &Ensemble{}
	for i := range peers {
		s, err := newServer(opts, inst, i+1, peers)
		if err != nil {
			_ = e.Close()
			return nil, false, err
		}
		e.Servers = append(e.Servers, s)
	}

	if err := e.startAll(ctx); err != nil {
		bindErr := false
		for _, s := range e.Servers {
			bindErr = bindErr || s.logHasBindError()
		}
		_ = e.Close()
		return nil, bindErr, fmt.Errorf("zkserver: ensemble of %d: %w", n, err)
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := e.WaitReady(wctx); err != nil {
		_ = e.Close()
		return nil, false, err
	}
	return e, false, nil
}

// Addrs are the members' client addresses, in member order.
func (e *Ensemble) Addrs() []string {
	addrs := make([]string, len(e.Servers))
	for i, s := range e.Servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// ConnectString is Addrs joined by commas.
func (e *Ensemble) ConnectString() string { return strings.Join(e.Addrs(), ",") }

// Leader returns the index in Servers of the member whose srvr says
// "Mode: leader" (under Options.LeaderServesNo: the one not serving while
// every other is a follower). It asks once; it fails when no running member is leader
// right now (e.g. during an election).
func (e *Ensemble) Leader(ctx context.Context) (int, error) {
	var errs []error
	for i, s := range e.Servers {
		if !s.Running() {
			continue
		}
		mode, err := s.role(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if mode == "leader" && (!s.opts.LeaderServesNo || e.readyOnce(ctx) == nil) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("zkserver: no leader among %d members: %w", len(e.Servers), errors.Join(append(errs, errors.New("none reports Mode: leader"))...))
}

// WaitReady waits until every running member answers imok and reports mode
// leader or follower, and one of them is leader. Members that were stopped
// or killed are skipped.
func (e *Ensemble) WaitReady(ctx context.Context) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		err := e.readyOnce(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zkserver: ensemble not ready: %w (last check: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

func (e *Ensemble) readyOnce(ctx context.Context) error {
	leaders := 0
	for _, s := range e.Servers {
		if !s.Running() {
			continue
		}
		if err := s.readyOnce(ctx); err != nil {
			return fmt.Errorf("member %d: %w", s.id, err)
		}
		if m, err := s.role(ctx); err != nil {
			return err
		} else if m == "leader" {
			leaders++
		}
	}
	if leaders != 1 {
		return fmt.Errorf("%d leaders", leaders)
	}
	return nil
}

// Close closes every member (stop, remove temp dirs). It is idempotent.
func (e *Ensemble) Close() error {
	var errs []error
	for _, s := range e.Servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// startAll starts every member at once and waits for each to be started:
// members only become ready together (a quorum must elect a leader).
func (e *Ensemble) startAll(ctx context.Context) error {
	errs := make([]error, len(e.Servers))
	var wg sync.WaitGroup
	for i, s := range e.Servers {
		wg.Go(func() { errs[i] = s.start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
