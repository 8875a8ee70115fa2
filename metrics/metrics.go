// Package metrics exports a turnstile engine's figures as Prometheus
// metrics: how long acquisitions wait and leases are held, per recipe; how
// many leases are held, how many acquisitions wait, how many election
// candidates stand and how many elections the engine leads; the ZooKeeper
// requests the engine sent, by operation and in multi requests; its
// session's state, disconnections, reconnections and expiries; and the
// leases lost.
//
// A Collector learns of acquisitions and leases as the engine's observer
// (engine.Config.Observer) and reads the engine's counters (Stats,
// Sessions, InFlight, State) when scraped. Both are safe while the engine
// runs:
//
//	m := metrics.New()
//	eng, err := engine.Start(ctx, engine.Config{Servers: servers, Observer: m.Observe})
//	if err != nil {
//		return err
//	}
//	m.Attach(eng)
//	prometheus.MustRegister(m)
//
// One Collector serves one engine. To export several engines from one
// registry, tell them apart with prometheus.WrapRegistererWith and a label.
//
// # Metrics
//
// Every name starts with "turnstile_". The recipe label is mutex (Mutex,
// ReentrantMutex, and the mutex a Semaphore takes while it acquires a
// lease), read and write (RWMutex), semaphore (a Semaphore's lease),
// election (an election candidate) or other (a Request of one's own).
//
// Fed by the observer, for every caller's acquisition: one a lock cohort
// served (events.Report.Member) counts as any other, whether the node was
// acquired for it or passed to it, and the cohort's node itself
// (Carrier) only while suspended, in leases_suspended:
//
//	acquire_duration_seconds{recipe}        histogram: start to grant
//	hold_duration_seconds{recipe}           histogram: grant to release or loss
//	acquisitions_total{recipe,outcome}      counter: ended, by outcome granted,
//	                                        would_block (a try found the lock
//	                                        taken), cancelled (context ended,
//	                                        engine closed) or failed (any other
//	                                        error)
//	acquisitions_pending{recipe}            gauge: started, not yet ended
//	election_candidates                     gauge: candidates standing, not elected
//	elections_led                           gauge: terms held now
//	leases_held{recipe}                     gauge: granted, not yet ended
//	leases_suspended                        gauge: held, connection down
//	leases_ended_total{recipe,how}          counter: how is released or lost
//	revocations_total{recipe}               counter: revocation requests seen
//
// Read from the engine at each scrape (after Attach):
//
//	requests_total{op}                      counter: ZooKeeper operations sent
//	multi_requests_total, multi_ops_total   counters: multi requests, ops in them
//	local_waits_total                       counter: waits that cost no request
//	listings_predicted_total                counter: listings made unnecessary
//	requests_in_flight                      gauge: sent, not yet answered
//	session_state{state}                    gauge: 1 for the engine's state
//	                                        (connected, suspended, lapsed,
//	                                        expired, closed), 0 for the others
//	session_disconnects_total               counter
//	session_reconnects_total                counter
//	session_untrusted_total                 counter: lapses of trust, that lost
//	                                        every lease (the session may live)
//	session_expirations_total               counter: expiries the server said
//	cohort_grants_total, cohort_passes_total, cohort_given_back_total{why}
//	cohort_waiting                          gauge
//
// An election's observer (Election.Observe) is a contender of the engine
// that is never granted: it is in none of these figures. A standby
// candidate waits as long as it stands, which may be for good: it counts
// in election_candidates, not in acquisitions_pending, so that an alert on
// waiters that pile up is not set off by a healthy election.
//
// This package is a module of its own, so that a program that uses the
// library without it does not depend on the Prometheus client.
package metrics

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/queue"
)

const namespace = "turnstile"

// defaultBuckets are the bounds, in seconds, of the acquire and hold
// histograms: 1ms to about 4.4 minutes, each four times the last. Locks are
// granted in a few round trips when free and held for as long as work
// takes, so the range is wide and coarse.
var defaultBuckets = prometheus.ExponentialBuckets(0.001, 4, 10)

// Option configures a Collector.
type Option func(*config)

type config struct {
	acquireBuckets, holdBuckets []float64
}

// WithBuckets sets the bounds, in seconds, of the acquire-duration and the
// hold-duration histograms; a nil slice keeps that histogram's default,
// 1ms to about 4.4 minutes, each bound four times the last
// (prometheus.ExponentialBuckets(0.001, 4, 10)).
func WithBuckets(acquire, hold []float64) Option {
	return func(c *config) {
		if acquire != nil {
			c.acquireBuckets = acquire
		}
		if hold != nil {
			c.holdBuckets = hold
		}
	}
}

// Collector is a prometheus.Collector of one engine's metrics. Its Observe
// method is the engine's observer; Attach gives it the engine's counters.
type Collector struct {
	eng atomic.Pointer[engine.Engine]

	// Fed by Observe, on the engine's loop goroutine.
	acquire      *prometheus.HistogramVec // recipe
	hold         *prometheus.HistogramVec // recipe
	acquisitions *prometheus.CounterVec   // recipe, outcome
	pending      *prometheus.GaugeVec     // recipe
	candidates   prometheus.Gauge         // election candidates standing
	led          prometheus.Gauge         // election terms held
	held         *prometheus.GaugeVec     // recipe
	suspended    prometheus.Gauge         // held leases whose connection is down
	ended        *prometheus.CounterVec   // recipe, how: released or lost
	revocations  *prometheus.CounterVec   // recipe

	mu sync.Mutex
	// started holds each pending acquisition, leases each held lease, and
	// observers the election observers, which are counted nowhere; all are
	// keyed by the contender's ID and hold live contenders only. carriers
	// are the held nodes of cohorts (events.Report.Carrier), by whether
	// they are suspended: the callers they serve are counted as members,
	// and a carrier only in the suspended gauge.
	started   map[uint64]pendingRecord
	leases    map[uint64]*leaseRecord
	observers map[uint64]struct{}
	carriers  map[uint64]bool

	// Read from the engine at each scrape.
	requests    *prometheus.Desc // op
	multis      *prometheus.Desc
	batched     *prometheus.Desc
	localWaits  *prometheus.Desc
	predicted   *prometheus.Desc
	inFlight    *prometheus.Desc
	state       *prometheus.Desc // state
	disconnects *prometheus.Desc
	reconnects  *prometheus.Desc
	untrusted   *prometheus.Desc
	expirations *prometheus.Desc
	// Lock cohorting (engine.CohortStats): the observer sees a cohort's
	// node granted and given back, never the passes between.
	cohortGrants  *prometheus.Desc
	cohortPasses  *prometheus.Desc
	cohortRenew   *prometheus.Desc
	cohortBack    *prometheus.Desc // why
	cohortWaiting *prometheus.Desc
	observerOnly  []prometheus.Collector
}

// pendingRecord is what the collector remembers of a pending acquisition.
type pendingRecord struct {
	recipe    string
	since     time.Time
	candidate bool // an election candidate: standing, not pending
}

// leaseRecord is what the collector remembers of a held lease.
type leaseRecord struct {
	recipe    string
	since     time.Time
	suspended bool
	leads     bool // an election's term
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector, not yet attached to an engine. Pass its Observe
// method as the engine's Config.Observer, and Attach it to the engine once
// started.
func New(opts ...Option) *Collector {
	cfg := config{acquireBuckets: defaultBuckets, holdBuckets: defaultBuckets}
	for _, o := range opts {
		if o != nil { // a nil option sets nothing
			o(&cfg)
		}
	}
	c := &Collector{
		acquire: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "acquire_duration_seconds",
			Help:    "Time from an acquisition's start to its grant, by recipe.",
			Buckets: cfg.acquireBuckets,
		}, []string{"recipe"}),
		hold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "hold_duration_seconds",
			Help:    "Time from a lease's grant to its release or loss, by recipe.",
			Buckets: cfg.holdBuckets,
		}, []string{"recipe"}),
		acquisitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "acquisitions_total",
			Help: "Acquisitions ended, by recipe and outcome: granted, would_block (a try found the lock taken), cancelled (context ended, engine closed), failed (any other error).",
		}, []string{"recipe", "outcome"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "acquisitions_pending",
			Help: "Acquisitions started and not yet granted, failed or cancelled: the waiters queued, by recipe. Election candidates are counted in election_candidates instead.",
		}, []string{"recipe"}),
		candidates: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "election_candidates",
			Help: "Election candidates campaigning and not elected: standbys, which wait as long as they stand.",
		}),
		led: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "elections_led",
			Help: "Election terms held: elections a candidate of this engine leads now.",
		}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "leases_held",
			Help: "Leases granted and not yet released or lost, by recipe.",
		}, []string{"recipe"}),
		suspended: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "leases_suspended",
			Help: "Held leases whose connection to ZooKeeper is down: not lost yet, but Suspended() is closed.",
		}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "leases_ended_total",
			Help: "Leases ended, by recipe and how: released, or lost (each lost one closed its Lost() channel).",
		}, []string{"recipe", "how"}),
		revocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "revocations_total",
			Help: "Revocation requests seen by revocable holders, by recipe.",
		}, []string{"recipe"}),

		started:   make(map[uint64]pendingRecord),
		leases:    make(map[uint64]*leaseRecord),
		observers: make(map[uint64]struct{}),
		carriers:  make(map[uint64]bool),

		requests: desc("requests_total",
			"ZooKeeper operations sent, by op; creates and deletes sent inside a multi request count here too (see multi_ops_total).", "op"),
		multis:     desc("multi_requests_total", "Multi requests sent, each carrying creates and deletes issued together."),
		batched:    desc("multi_ops_total", "Creates and deletes that were sent inside multi requests."),
		localWaits: desc("local_waits_total", "Waits on a node of the same engine, which cost no request."),
		predicted: desc("listings_predicted_total",
			"Listings a create's own sequence number made unnecessary, on a path the engine pins (the listing-free cycle); no request was sent."),
		inFlight: desc("requests_in_flight", "ZooKeeper requests sent and not yet answered (a multi counts once)."),
		state: desc("session_state",
			"The engine's standing with ZooKeeper: 1 for its state now (connected, suspended, lapsed, expired, closed), 0 for the others.", "state"),
		disconnects: desc("session_disconnects_total",
			"Connections to ZooKeeper that dropped while the session was in use."),
		reconnects: desc("session_reconnects_total",
			"Connections made again after a disconnection, to the same session or a new one."),
		untrusted: desc("session_untrusted_total",
			"Lapses of the session's trust (no answer for so long that the server may have expired it; it may live on): every lease held then was lost. Not expiries."),
		expirations: desc("session_expirations_total",
			"Sessions the server expired under the engine; their leases were lost."),
		cohortGrants: desc("cohort_grants_total",
			"Lock nodes granted to a cohort: acquisitions of one engine that pass the lock among themselves."),
		cohortPasses: desc("cohort_passes_total",
			"Leases passed from one holder to the next in a cohort, without a request; each is in acquisitions_total too."),
		cohortRenew: desc("cohort_renewals_total",
			"Cohort nodes passed on past MaxHold after a listing showed no other client waiting, rather than given back."),
		cohortBack: desc("cohort_given_back_total",
			"Cohort nodes given back with local waiters still queued, by why: another_client seen waiting, or a bound.", "why"),
		cohortWaiting: desc("cohort_waiting",
			"Acquisitions queued in cohorts behind a node of the engine, without one of their own."),
	}
	c.observerOnly = []prometheus.Collector{c.acquire, c.hold, c.acquisitions, c.pending, c.candidates, c.led,
		c.held, c.suspended, c.ended, c.revocations}
	return c
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

// Attach gives the collector the engine whose counters it reads at each
// scrape. Until then, only what Observe was told is exported.
//
// A nil Collector, or one New did not make, exports nothing: Attach,
// Observe, Describe and Collect do nothing on it, as Describe and Collect
// do with a nil channel (a send on it would block the scrape forever).
func (c *Collector) Attach(eng *engine.Engine) {
	if c.unmade() {
		return
	}
	c.eng.Store(eng)
}

// unmade reports a Collector New did not return: nil, or a zero one.
func (c *Collector) unmade() bool { return c == nil || c.observerOnly == nil }

// Describe sends the descriptions of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	if c.unmade() || ch == nil {
		return
	}
	for _, m := range c.observerOnly {
		m.Describe(ch)
	}
	for _, d := range []*prometheus.Desc{c.requests, c.multis, c.batched, c.localWaits, c.predicted, c.inFlight,
		c.state, c.disconnects, c.reconnects, c.untrusted, c.expirations,
		c.cohortGrants, c.cohortPasses, c.cohortRenew, c.cohortBack, c.cohortWaiting} {
		ch <- d
	}
}

// Collect sends the current value of every metric. It runs on the
// scraper's goroutine while the engine's loop goes on: the observer's
// metrics are safe for that, and the engine's counters are atomics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.unmade() || ch == nil {
		return
	}
	for _, m := range c.observerOnly {
		m.Collect(ch)
	}
	eng := c.eng.Load()
	if eng == nil {
		return
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	s := eng.Stats()
	counter(c.requests, s.Creates, "create")
	counter(c.requests, s.ParentCreates, "create_parents")
	counter(c.requests, s.Lists, "list")
	counter(c.requests, s.Watches, "watch")
	counter(c.requests, s.RevokeWatches, "revoke_watch")
	counter(c.requests, s.Deletes, "delete")
	counter(c.requests, s.Pins, "pin")
	counter(c.requests, s.Marks, "mark")
	counter(c.multis, s.Multis)
	counter(c.batched, s.Batched)
	counter(c.localWaits, s.LocalWatches)
	counter(c.predicted, s.Predicted)
	ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(eng.InFlight()))
	now := eng.State()
	for _, st := range sessionStates {
		v := 0.0
		if st == now {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, st.String())
	}
	ss := eng.Sessions()
	counter(c.disconnects, ss.Disconnects)
	counter(c.reconnects, ss.Reconnects)
	counter(c.untrusted, ss.Untrusted)
	counter(c.expirations, ss.Expirations)
	cs := eng.CohortStats()
	counter(c.cohortGrants, cs.Carriers)
	counter(c.cohortPasses, cs.Passes)
	counter(c.cohortRenew, cs.Renewed)
	counter(c.cohortBack, cs.Yielded, "another_client")
	counter(c.cohortBack, cs.Bounded, "bound")
	ch <- prometheus.MustNewConstMetric(c.cohortWaiting, prometheus.GaugeValue, float64(cs.Waiting))
}

// sessionStates are the states session_state exports, each every time, so
// that a query for one state finds a 0 rather than no series.
var sessionStates = []engine.State{engine.StateConnected, engine.StateSuspended, engine.StateLapsed, engine.StateExpired, engine.StateClosed}

// Observe is the engine's observer (engine.Config.Observer). It runs on the
// engine's loop goroutine and returns at once. To have several observers,
// call Observe from one of your own.
func (c *Collector) Observe(r events.Report) {
	if c.unmade() {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Carrier {
		c.observeCarrier(r)
		return
	}
	if _, ok := c.observers[r.ID]; ok {
		// An election's observer: a contender that only watches, never
		// granted (should it be, its recipe gives the lease straight back).
		if r.Kind == events.Failed || r.Kind == events.Cancelled || r.Kind == events.Released || r.Kind == events.Lost {
			delete(c.observers, r.ID)
		}
		return
	}
	switch r.Kind {
	case events.Acquiring:
		if r.NodeKind == queue.KindObserver {
			c.observers[r.ID] = struct{}{}
			return
		}
		p := pendingRecord{recipe: recipeOfKind(r.NodeKind), since: now, candidate: r.NodeKind == queue.KindLatch}
		c.started[r.ID] = p
		if p.candidate {
			c.candidates.Inc()
		} else {
			c.pending.WithLabelValues(p.recipe).Inc()
		}
	case events.Granted:
		p, ok := c.stopWaiting(r.ID)
		if !ok {
			// Acquiring came before the collector was the observer.
			p = pendingRecord{recipe: recipeOf(r.Node)}
			p.candidate = p.recipe == recipeElection
		} else {
			c.acquire.WithLabelValues(p.recipe).Observe(now.Sub(p.since).Seconds())
		}
		c.acquisitions.WithLabelValues(p.recipe, "granted").Inc()
		c.leases[r.ID] = &leaseRecord{recipe: p.recipe, since: now, leads: p.candidate}
		c.held.WithLabelValues(p.recipe).Inc()
		if p.candidate {
			c.led.Inc()
		}
	case events.Failed, events.Cancelled:
		p, ok := c.stopWaiting(r.ID)
		if !ok {
			return
		}
		c.acquisitions.WithLabelValues(p.recipe, outcome(r)).Inc()
	case events.Released, events.Lost:
		l := c.leases[r.ID]
		if l == nil {
			return // granted before the collector was the observer
		}
		delete(c.leases, r.ID)
		if l.suspended {
			c.suspended.Dec()
		}
		if l.leads {
			c.led.Dec()
		}
		c.held.WithLabelValues(l.recipe).Dec()
		c.hold.WithLabelValues(l.recipe).Observe(now.Sub(l.since).Seconds())
		c.ended.WithLabelValues(l.recipe, r.Kind.String()).Inc()
	case events.Suspended, events.Resumed:
		l := c.leases[r.ID]
		if on := r.Kind == events.Suspended; l != nil && l.suspended != on {
			l.suspended = on
			if on {
				c.suspended.Inc()
			} else {
				c.suspended.Dec()
			}
		}
	case events.Revoked:
		recipe := recipeOf(r.Node)
		if l := c.leases[r.ID]; l != nil {
			recipe = l.recipe
		}
		c.revocations.WithLabelValues(recipe).Inc()
	}
}

// observeCarrier follows a cohort's node (mu held): its callers, the
// cohort's members, are reported and counted as acquisitions of their
// own, so it counts only while suspended.
func (c *Collector) observeCarrier(r events.Report) {
	suspended, held := c.carriers[r.ID]
	switch r.Kind {
	case events.Granted:
		c.carriers[r.ID] = false
	case events.Suspended, events.Resumed:
		if on := r.Kind == events.Suspended; held && suspended != on {
			c.carriers[r.ID] = on
			c.suspended.Add(map[bool]float64{true: 1, false: -1}[on])
		}
	case events.Released, events.Lost:
		if suspended {
			c.suspended.Dec()
		}
		delete(c.carriers, r.ID)
	}
}

// outcome is the acquisitions_total outcome of a Failed or Cancelled report.
func outcome(r events.Report) string {
	switch {
	case r.Kind == events.Cancelled:
		return "cancelled"
	case errors.Is(r.Err, engine.ErrWouldBlock):
		return "would_block"
	}
	return "failed"
}

// stopWaiting forgets a pending acquisition (or a standing candidate) and
// returns what was remembered of it.
func (c *Collector) stopWaiting(id uint64) (pendingRecord, bool) {
	p, ok := c.started[id]
	if !ok {
		return p, false
	}
	delete(c.started, id)
	if p.candidate {
		c.candidates.Dec()
	} else {
		c.pending.WithLabelValues(p.recipe).Dec()
	}
	return p, true
}
