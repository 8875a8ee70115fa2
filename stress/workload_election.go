package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/turnstile-go/turnstile/election"
)

// The election workload: -workers candidates of one leader election on
// -lock-path. Each campaigns, leads for -hold (or until its Lost() closes),
// steps down, resigns, and campaigns again at the back. A leader is checked
// as a mutex holder is: by the in-process overlap detector, by the witness
// file (created with O_CREATE|O_EXCL when elected, removed before the
// resign) and by its fencing token, which must exceed every earlier
// leader's. A cycle is a term. The acquisition latency this workload
// reports is the handover: from a leader's resign to the next election.

// elector is one candidate's way into an election.
type elector interface {
	// Campaign blocks until this candidate leads, ctx ends, or it fails;
	// releasing what it returns resigns.
	Campaign(ctx context.Context) (held, error)
}

// electionClient is a client that has leader elections.
type electionClient interface {
	Election(path string) (elector, error)
}

// startElection starts the election workload's candidates, with
// startWorkers' contract.
func (r *runState) startElection() (*workerSet, error) {
	ec, ok := r.cl.(electionClient)
	if !ok {
		return nil, unsupported(r.impl.Name(), "-workload election", "it has no leader election")
	}
	path := r.cfg.LockPath
	ho := &handover{lat: r.lat, tl: r.tl}
	candidates := make([]elector, r.cfg.Workers)
	for i := range candidates {
		var err error
		if candidates[i], err = ec.Election(path); err != nil {
			return nil, err
		}
	}
	return startAll(len(candidates), func(i int) { r.candidate(i, path, candidates[i], ho) }), nil
}

// candidate is one worker: campaign, lead, resign, until the run stops.
func (r *runState) candidate(id int, path string, el elector, ho *handover) {
	rng := rand.New(rand.NewPCG(r.seed, uint64(id)+1))
	cancelFault := r.cfg.Faults.has("cancel")
	for r.stop.Err() == nil && r.takeTicket() {
		ctx, cancel := r.stop, context.CancelFunc(func() {})
		planned := cancelFault && rng.Float64() < r.cfg.CancelRatio
		if planned {
			ctx, cancel = context.WithTimeout(r.stop, time.Duration(rng.Int64N(int64(r.cfg.CancelMax)+1)))
		}
		h, err := el.Campaign(ctx)
		cancel()
		switch {
		case err == nil:
		case r.stop.Err() != nil:
			return
		case planned && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
			r.cancelled.Add(1)
			continue
		default:
			r.noteErr("campaign "+path, err)
			sleepCtx(r.stop, time.Duration(5+rng.IntN(20))*time.Millisecond)
			continue
		}
		ho.elected()
		r.holdAndRelease(id, path, r.cfg.WitnessFile, kMutex, resigning{h, ho})
	}
}

// handover measures, into the run's latencies, how long each election
// took from the resign that made way for it.
type handover struct {
	lat *latencies
	tl  *timeline // -report; nil without

	mu       sync.Mutex
	resigned time.Time // a resign not yet followed by an election; zero if none
}

// resign is called as a leader that still leads starts to resign. A leader
// that lost its term made way for the next one at some moment before, so
// it starts no measurement.
func (ho *handover) resign() {
	ho.mu.Lock()
	defer ho.mu.Unlock()
	ho.resigned = time.Now()
}

func (ho *handover) elected() {
	ho.mu.Lock()
	defer ho.mu.Unlock()
	if !ho.resigned.IsZero() {
		d := time.Since(ho.resigned)
		ho.lat.record(d)
		ho.tl.grant(time.Now(), d)
		ho.resigned = time.Time{}
	}
}

// resigning is a leader whose Release resigns, stamping the handover's
// start first.
type resigning struct {
	held
	ho *handover
}

func (l resigning) Release(ctx context.Context) error {
	if !closedChan(l.Lost()) {
		l.ho.resign()
	}
	return l.held.Release(ctx)
}

// Election is turnstile's leader election, candidates carrying the run's
// marker as their value so that orphans are recognised.
func (c *turnstileClient) Election(path string) (elector, error) {
	return turnstileElector{el: election.New(c.eng, path), value: []byte(c.owner)}, nil
}

type turnstileElector struct {
	el    *election.Election
	value []byte
}

func (e turnstileElector) Campaign(ctx context.Context) (held, error) {
	f := e.el.Campaign(ctx, e.value)
	// The future resolves when ctx ends, so waiting on Done alone never
	// drops a leadership granted at that moment.
	<-f.Done()
	l, _, err := f.Result()
	if err != nil {
		return nil, err
	}
	return turnstileLeader{l}, nil
}

type turnstileLeader struct{ l *election.Leadership }

func (h turnstileLeader) Token() (int64, bool)              { return h.l.Token(), true }
func (h turnstileLeader) Lost() <-chan struct{}             { return h.l.Lost() }
func (h turnstileLeader) Release(ctx context.Context) error { return h.l.Resign(ctx) }

// Election of the none impl elects every candidate at once, so that the
// checkers can be seen to catch two leaders.
func (noneClient) Election(string) (elector, error) { return noneElector{}, nil }

type noneElector struct{}

func (noneElector) Campaign(ctx context.Context) (held, error) { return noneLocker{}.Acquire(ctx) }
