// Package metrics exports a turnstile engine's figures as Prometheus
// metrics: how long acquisitions wait and leases are held, per recipe; how
// many leases are held and how many acquisitions wait; the ZooKeeper
// requests the engine sent, by operation and in multi requests; its
// session's disconnections, reconnections and expiries; and the leases
// lost.
//
// A Collector learns of acquisitions and leases as the engine's observer
// (engine.Config.Observer) and reads the engine's counters (Stats,
// Sessions, InFlight) when scraped. Both are safe while the engine runs:
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
// This package is a module of its own, so that a program that uses the
// library without it does not depend on the Prometheus client.
package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
)

const namespace = "turnstile"

// DefaultBuckets are the bounds, in seconds, of the acquire and hold
// histograms: 1ms to about 4.4 minutes, each four times the last. Locks are
// granted in a few round trips when free and held for as long as work
// takes, so the range is wide and coarse.
var DefaultBuckets = prometheus.ExponentialBuckets(0.001, 4, 10)

// Option configures a Collector.
type Option func(*config)

type config struct {
	acquireBuckets, holdBuckets []float64
}

// WithAcquireBuckets sets the bounds, in seconds, of the acquire-duration
// histogram (default DefaultBuckets).
func WithAcquireBuckets(b []float64) Option { return func(c *config) { c.acquireBuckets = b } }

// WithHoldBuckets sets the bounds, in seconds, of the hold-duration
// histogram (default DefaultBuckets).
func WithHoldBuckets(b []float64) Option { return func(c *config) { c.holdBuckets = b } }

// Collector is a prometheus.Collector of one engine's metrics. Its Observe
// method is the engine's observer; Attach gives it the engine's counters.
type Collector struct {
	eng atomic.Pointer[engine.Engine]

	// Fed by Observe, on the engine's loop goroutine.
	acquire      *prometheus.HistogramVec // recipe
	hold         *prometheus.HistogramVec // recipe
	acquisitions *prometheus.CounterVec   // outcome
	pending      prometheus.Gauge
	held         *prometheus.GaugeVec   // recipe
	suspended    prometheus.Gauge       // held leases whose connection is down
	ended        *prometheus.CounterVec // recipe, how: released or lost
	revocations  *prometheus.CounterVec // recipe

	mu sync.Mutex
	// started holds when each pending acquisition began, and leases each
	// held lease's recipe and grant; both are keyed by the contender's ID
	// and hold live contenders only.
	started map[uint64]time.Time
	leases  map[uint64]*leaseRecord

	// Read from the engine at each scrape.
	requests     *prometheus.Desc // op
	multis       *prometheus.Desc
	batched      *prometheus.Desc
	localWaits   *prometheus.Desc
	predicted    *prometheus.Desc
	inFlight     *prometheus.Desc
	disconnects  *prometheus.Desc
	reconnects   *prometheus.Desc
	untrusted    *prometheus.Desc
	expirations  *prometheus.Desc
	observerOnly []prometheus.Collector
}

// leaseRecord is what the collector remembers of a held lease.
type leaseRecord struct {
	recipe    string
	since     time.Time
	suspended bool
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector, not yet attached to an engine. Pass its Observe
// method as the engine's Config.Observer, and Attach it to the engine once
// started.
func New(opts ...Option) *Collector {
	cfg := config{acquireBuckets: DefaultBuckets, holdBuckets: DefaultBuckets}
	for _, o := range opts {
		o(&cfg)
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
			Help: "Acquisitions ended, by outcome: granted, failed (e.g. a try that would block), cancelled (context ended, engine closed).",
		}, []string{"outcome"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "acquisitions_pending",
			Help: "Acquisitions started and not yet granted, failed or cancelled: the waiters queued.",
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

		started: make(map[uint64]time.Time),
		leases:  make(map[uint64]*leaseRecord),

		requests: desc("requests_total",
			"ZooKeeper operations sent, by op; creates and deletes sent inside a multi request count here too (see multi_ops_total).", "op"),
		multis:     desc("multi_requests_total", "Multi requests sent, each carrying creates and deletes issued together."),
		batched:    desc("multi_ops_total", "Creates and deletes that were sent inside multi requests."),
		localWaits: desc("local_waits_total", "Waits on a node of the same engine, which cost no request."),
		predicted: desc("listings_predicted_total",
			"Listings a create's own sequence number made unnecessary, on a path the engine pins (the listing-free cycle); no request was sent."),
		inFlight: desc("requests_in_flight", "ZooKeeper requests sent and not yet answered (a multi counts once)."),
		disconnects: desc("session_disconnects_total",
			"Connections to ZooKeeper that dropped while the session was in use."),
		reconnects: desc("session_reconnects_total",
			"Connections made again after a disconnection, to the same session or a new one."),
		untrusted: desc("session_untrusted_total",
			"Disconnections that outlasted the session's trust: every lease held then was lost."),
		expirations: desc("sessions_expired_total",
			"Sessions the server expired under the engine; their leases were lost."),
	}
	c.observerOnly = []prometheus.Collector{c.acquire, c.hold, c.acquisitions, c.pending, c.held, c.suspended, c.ended, c.revocations}
	return c
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

// Attach gives the collector the engine whose counters it reads at each
// scrape. Until then, only what Observe was told is exported.
func (c *Collector) Attach(eng *engine.Engine) { c.eng.Store(eng) }

// Describe sends the descriptions of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.observerOnly {
		m.Describe(ch)
	}
	for _, d := range []*prometheus.Desc{c.requests, c.multis, c.batched, c.localWaits, c.predicted, c.inFlight,
		c.disconnects, c.reconnects, c.untrusted, c.expirations} {
		ch <- d
	}
}

// Collect sends the current value of every metric. It runs on the
// scraper's goroutine while the engine's loop goes on: the observer's
// metrics are safe for that, and the engine's counters are atomics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
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
	counter(c.multis, s.Multis)
	counter(c.batched, s.Batched)
	counter(c.localWaits, s.LocalWatches)
	counter(c.predicted, s.Predicted)
	ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(eng.InFlight()))
	ss := eng.Sessions()
	counter(c.disconnects, ss.Disconnects)
	counter(c.reconnects, ss.Reconnects)
	counter(c.untrusted, ss.Untrusted)
	counter(c.expirations, ss.Expirations)
}

// Observe is the engine's observer (engine.Config.Observer). It runs on the
// engine's loop goroutine and returns at once. To have several observers,
// call Observe from one of your own.
func (c *Collector) Observe(r events.Report) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r.Kind {
	case events.Acquiring:
		c.started[r.ID] = now
		c.pending.Inc()
	case events.Granted:
		recipe := recipeOf(r.Node)
		if since, ok := c.stopWaiting(r.ID); ok {
			c.acquire.WithLabelValues(recipe).Observe(now.Sub(since).Seconds())
		}
		c.acquisitions.WithLabelValues("granted").Inc()
		c.leases[r.ID] = &leaseRecord{recipe: recipe, since: now}
		c.held.WithLabelValues(recipe).Inc()
	case events.Failed, events.Cancelled:
		c.stopWaiting(r.ID)
		c.acquisitions.WithLabelValues(r.Kind.String()).Inc()
	case events.Released, events.Lost:
		l := c.leases[r.ID]
		if l == nil {
			return // granted before the collector was the observer
		}
		delete(c.leases, r.ID)
		if l.suspended {
			c.suspended.Dec()
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
		c.revocations.WithLabelValues(recipeOf(r.Node)).Inc()
	}
}

// stopWaiting forgets a pending acquisition and reports when it began.
func (c *Collector) stopWaiting(id uint64) (time.Time, bool) {
	since, ok := c.started[id]
	if ok {
		delete(c.started, id)
		c.pending.Dec()
	}
	return since, ok
}
