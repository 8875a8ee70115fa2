package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/internal/wait"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/metrics"
)

var shared *zkserver.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(zkserver.Shared(m, &shared))
}

// strictFIFO is an engine without lock cohorting: every acquisition is
// the loop's, and the observer's.
var strictFIFO = engine.Config{Cohort: engine.CohortConfig{StrictFIFO: true}}

// monitored starts an engine observed by a new collector, registered in a
// registry of its own.
func monitored(t *testing.T, cfg engine.Config) (*engine.Engine, *metrics.Collector, *prometheus.Registry) {
	t.Helper()
	c := metrics.New()
	cfg.Observer = c.Observe
	eng := startEngine(t, cfg)
	c.Attach(eng)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return eng, c, reg
}

func startEngine(t *testing.T, cfg engine.Config) *engine.Engine {
	t.Helper()
	if cfg.Servers == nil {
		cfg.Servers = []string{shared.Addr()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := engine.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// testCtx bounds what a test waits for, so that a hang fails the test
// with its reason instead of stalling the run.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func lockPath(t *testing.T) string {
	return "/metrics/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + fmt.Sprintf("-%d", time.Now().UnixNano())
}

// scrape gathers reg and returns every sample by name and labels, e.g.
// `turnstile_leases_held{recipe="mutex"}`; a histogram gives its count as
// `<name>_count{...}`.
func scrape(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[strings.Replace(key, f.GetName(), f.GetName()+"_count", 1)] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// expect demands that each named sample comes to have its value (a
// missing one reads 0). The engine tells its observer of an outcome just
// after it resolves the future, so a figure may lag the caller by a moment.
func expect(t *testing.T, reg prometheus.Gatherer, want map[string]float64) {
	t.Helper()
	var last string
	wait.Until(t, "the metrics read as expected", func() bool {
		got := scrape(t, reg)
		var wrong []string
		for k, v := range want {
			if got[k] != v {
				wrong = append(wrong, fmt.Sprintf("%s = %v, want %v", k, got[k], v))
			}
		}
		sort.Strings(wrong)
		if s := strings.Join(wrong, "\n  "); s != last && s != "" {
			t.Logf("not yet:\n  %s", s) // said once, not at every look
			last = s
		}
		return len(wrong) == 0
	})
}

// expectRequests demands that the request metrics come to read what the
// engine's Stats say, both read while no request changed them.
func expectRequests(t *testing.T, reg prometheus.Gatherer, eng *engine.Engine) {
	t.Helper()
	wait.Until(t, "the request metrics read the engine's Stats", func() bool {
		before := eng.Stats()
		got := scrape(t, reg)
		if eng.Stats() != before {
			return false // a request went out meanwhile: look again
		}
		for k, v := range requestsOf(before) {
			if got[k] != v {
				return false
			}
		}
		return true
	})
}

// requestsOf is what the request metrics must read for s.
func requestsOf(s engine.Stats) map[string]float64 {
	return map[string]float64{
		`turnstile_requests_total{op="create"}`:         float64(s.Creates),
		`turnstile_requests_total{op="create_parents"}`: float64(s.ParentCreates),
		`turnstile_requests_total{op="list"}`:           float64(s.Lists),
		`turnstile_requests_total{op="watch"}`:          float64(s.Watches),
		`turnstile_requests_total{op="revoke_watch"}`:   float64(s.RevokeWatches),
		`turnstile_requests_total{op="delete"}`:         float64(s.Deletes),
		`turnstile_multi_requests_total`:                float64(s.Multis),
		`turnstile_multi_ops_total`:                     float64(s.Batched),
		`turnstile_local_waits_total`:                   float64(s.LocalWatches),
		`turnstile_requests_total{op="pin"}`:            float64(s.Pins),
		`turnstile_requests_total{op="mark"}`:           float64(s.Marks),
		`turnstile_listings_predicted_total`:            float64(s.Predicted),
	}
}

// Ten acquisitions and ten releases read ten; a try that would block and a
// cancelled waiter read one each; nothing is left held or pending.
func TestKnownWorkload(t *testing.T) {
	ctx := testCtx(t)
	p := lockPath(t)
	eng, _, reg := monitored(t, engine.Config{})
	m := lock.NewMutex(eng, p)
	const n = 10
	for range n {
		l, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, reg, map[string]float64{
		`turnstile_acquisitions_total{outcome="granted",recipe="mutex"}`: n,
		`turnstile_acquire_duration_seconds_count{recipe="mutex"}`:       n,
		`turnstile_hold_duration_seconds_count{recipe="mutex"}`:          n,
		`turnstile_leases_ended_total{how="released",recipe="mutex"}`:    n,
		`turnstile_leases_held{recipe="mutex"}`:                          0,
		`turnstile_acquisitions_pending{recipe="mutex"}`:                 0,
		`turnstile_requests_total{op="delete"}`:                          n,
	})
	// Each acquisition lists its path, or (once the engine pinned the path,
	// at the second grant) decides without listing on its create's number.
	wait.Until(t, "every acquisition listed or predicted", func() bool {
		m := scrape(t, reg)
		return m[`turnstile_requests_total{op="list"}`]+m[`turnstile_listings_predicted_total`] == n &&
			m[`turnstile_listings_predicted_total`] > 0 && m[`turnstile_requests_total{op="pin"}`] == 1
	})

	held, err := lock.NewMutex(startEngine(t, engine.Config{}), p).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	if _, err := m.TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("TryAcquire: %v", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	waiting := m.Acquire(wctx)
	wait.Until(t, "one waiter pending", func() bool { return scrape(t, reg)[`turnstile_acquisitions_pending{recipe="mutex"}`] == 1 })
	cancel()
	if _, err := waiting.Wait(ctx); err == nil {
		t.Fatal("the cancelled waiter was granted")
	}
	expect(t, reg, map[string]float64{
		`turnstile_acquisitions_total{outcome="granted",recipe="mutex"}`:     n,
		`turnstile_acquisitions_total{outcome="would_block",recipe="mutex"}`: 1,
		`turnstile_acquisitions_total{outcome="cancelled",recipe="mutex"}`:   1,
		`turnstile_acquisitions_pending{recipe="mutex"}`:                     0,
		`turnstile_leases_held{recipe="mutex"}`:                              0,
	})
	expectRequests(t, reg, eng)
}

// Each recipe is labelled by its node's name; a semaphore's grant also
// counts its own mutex.
func TestRecipes(t *testing.T) {
	ctx := testCtx(t)
	p := lockPath(t)
	eng, _, reg := monitored(t, engine.Config{})
	rw := lock.NewRWMutex(eng, p+"/rw")
	sem, _ := lock.NewSemaphore(eng, p+"/sem", 2)
	for _, acq := range []lock.Acquirer{rw.Reader(), rw.Writer(), sem} {
		l, err := acq.Acquire(ctx).Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]float64{}
	for recipe, n := range map[string]float64{"read": 1, "write": 1, "semaphore": 1, "mutex": 1} {
		want[`turnstile_acquire_duration_seconds_count{recipe="`+recipe+`"}`] = n
		want[`turnstile_hold_duration_seconds_count{recipe="`+recipe+`"}`] = n
		want[`turnstile_leases_ended_total{how="released",recipe="`+recipe+`"}`] = n
	}
	expect(t, reg, want)
}

// While one lease is held and three acquisitions wait, the gauges say so;
// once all are done, they read zero. (Each acquisition queues a node of its
// own: with lock cohorting the observer sees one node for all four; see
// TestCohortMetrics.)
func TestGaugesWhileContended(t *testing.T) {
	ctx := testCtx(t)
	p := lockPath(t)
	eng, _, reg := monitored(t, strictFIFO)
	m := lock.NewMutex(eng, p)
	first, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var waiting []*engine.Future[*lock.Lease]
	for range 3 {
		waiting = append(waiting, m.Acquire(ctx))
	}
	wait.Until(t, "three waiters pending", func() bool {
		got := scrape(t, reg)
		return got[`turnstile_acquisitions_pending{recipe="mutex"}`] == 3 && got[`turnstile_leases_held{recipe="mutex"}`] == 1
	})
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range waiting {
		l, err := f.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, reg, map[string]float64{
		`turnstile_acquisitions_pending{recipe="mutex"}`:                 0,
		`turnstile_leases_held{recipe="mutex"}`:                          0,
		`turnstile_acquisitions_total{outcome="granted",recipe="mutex"}`: 4,
		`turnstile_leases_ended_total{how="released",recipe="mutex"}`:    4,
	})
	wait.Until(t, "no request in flight", func() bool { return scrape(t, reg)[`turnstile_requests_in_flight`] == 0 })
}

// A partition that outlasts the session: the lease is lost (its Lost()
// closes), the engine stops trusting the session, the server expires it,
// and the engine reconnects under a new one.
func TestLossAndSessions(t *testing.T) {
	ctx := testCtx(t)
	var p netfault.Partition
	eng, _, reg := monitored(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial})
	l, err := lock.NewMutex(eng, lockPath(t)).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	select {
	case <-l.Lost():
	case <-ctx.Done():
		t.Fatal("the lease was never lost")
	}
	expect(t, reg, map[string]float64{
		`turnstile_leases_ended_total{how="lost",recipe="mutex"}`: 1,
		`turnstile_hold_duration_seconds_count{recipe="mutex"}`:   1,
		`turnstile_leases_held{recipe="mutex"}`:                   0,
		`turnstile_leases_suspended`:                              0,
		`turnstile_session_disconnects_total`:                     1,
		`turnstile_session_untrusted_total`:                       1,
	})
	// The server expires the session while the engine cannot reach it.
	wait.Until(t, "the server expired the session", func() bool {
		conn := plainSession(t)
		defer conn.close()
		return !conn.nodeExists(l.Node())
	})
	p.Heal()
	wait.Until(t, "reconnected under a new session", func() bool {
		got := scrape(t, reg)
		return got[`turnstile_session_reconnects_total`] == 1 && got[`turnstile_session_expirations_total`] == 1
	})
}

// Scraping while the loop grants and releases is safe (run with -race),
// and the figures add up once the work is done. (Every acquisition on a
// node of its own, so that the observer sees each.)
func TestScrapeWhileLoopRuns(t *testing.T) {
	ctx := testCtx(t)
	p := lockPath(t)
	eng, _, reg := monitored(t, strictFIFO)
	stop := make(chan struct{})
	var scrapes sync.WaitGroup
	scrapes.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	const paths, perPath = 20, 10
	var work sync.WaitGroup
	for i := range paths {
		m := lock.NewMutex(eng, fmt.Sprintf("%s/%d", p, i))
		for range perPath {
			work.Go(func() {
				l, err := m.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			})
		}
	}
	work.Wait()
	close(stop)
	scrapes.Wait()
	expect(t, reg, map[string]float64{
		`turnstile_acquisitions_total{outcome="granted",recipe="mutex"}`: paths * perPath,
		`turnstile_leases_ended_total{how="released",recipe="mutex"}`:    paths * perPath,
		`turnstile_acquire_duration_seconds_count{recipe="mutex"}`:       paths * perPath,
		`turnstile_acquisitions_pending{recipe="mutex"}`:                 0,
		`turnstile_leases_held{recipe="mutex"}`:                          0,
	})
	expectRequests(t, reg, eng)
}

// The exported metrics follow Prometheus' naming rules, and a collector
// not yet attached exports what its observer saw, without failing.
func TestLintAndUnattached(t *testing.T) {
	_, c, _ := monitored(t, engine.Config{})
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(metrics.New()); err != nil {
		t.Fatal(err)
	}
	if got := scrape(t, reg); got[`turnstile_leases_suspended`] != 0 || len(got) != 3 {
		t.Fatalf("unattached collector: %v, want the three unlabelled gauges (leases_suspended, election_candidates, elections_led) at 0", got)
	}
}

// Lock cohorting: the engine's acquisitions of one lock pass it among
// themselves. Every caller's acquisition is counted, its wait and its
// hold measured, whether the node was acquired for it or passed to it;
// the cohort metrics count the node's grant, the passes and the waiters
// queued behind the node.
func TestCohortMetrics(t *testing.T) {
	eng, _, reg := monitored(t, engine.Config{Cohort: engine.CohortConfig{MaxHold: time.Hour}})
	ctx := context.Background()
	m := lock.NewMutex(eng, fmt.Sprintf("/metrics/%s-%d", t.Name(), time.Now().UnixNano()))
	held, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	futs := []*engine.Future[*lock.Lease]{m.Acquire(ctx), m.Acquire(ctx)}
	// The loop queues them in the cohort once it takes them in.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		got := scrape(t, reg)["turnstile_cohort_waiting"]
		if got == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cohort_waiting %v with two acquisitions queued behind the holder, want 2", got)
		}
	}
	for _, f := range futs {
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if held, err = f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expect(t, reg, map[string]float64{
		"turnstile_cohort_grants_total":                                  1,
		"turnstile_cohort_passes_total":                                  2,
		"turnstile_cohort_renewals_total":                                0,
		"turnstile_cohort_waiting":                                       0,
		`turnstile_cohort_given_back_total{why="another_client"}`:        0,
		`turnstile_acquisitions_total{outcome="granted",recipe="mutex"}`: 3,
		`turnstile_acquire_duration_seconds_count{recipe="mutex"}`:       3,
		`turnstile_hold_duration_seconds_count{recipe="mutex"}`:          3,
		`turnstile_leases_ended_total{how="released",recipe="mutex"}`:    3,
		`turnstile_leases_held{recipe="mutex"}`:                          0,
		`turnstile_acquisitions_pending{recipe="mutex"}`:                 0,
	})
}

// 200 goroutines taking one mutex of one engine, most served by passes:
// 200 acquisitions granted, 200 waits measured.
func TestCohortMetricsCountEveryCaller(t *testing.T) {
	eng, _, reg := monitored(t, engine.Config{})
	ctx := context.Background()
	m := lock.NewMutex(eng, fmt.Sprintf("/metrics/%s-%d", t.Name(), time.Now().UnixNano()))
	const callers = 200
	var work sync.WaitGroup
	for range callers {
		work.Go(func() {
			l, err := m.Lock(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			if err := l.Release(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	work.Wait()
	expect(t, reg, map[string]float64{
		`turnstile_acquisitions_total{outcome="granted",recipe="mutex"}`: callers,
		`turnstile_acquire_duration_seconds_count{recipe="mutex"}`:       callers,
		`turnstile_leases_ended_total{how="released",recipe="mutex"}`:    callers,
		`turnstile_leases_held{recipe="mutex"}`:                          0,
		`turnstile_acquisitions_pending{recipe="mutex"}`:                 0,
	})
	if passes := eng.CohortStats().Passes; passes == 0 {
		t.Fatalf("no pass among %d callers of one mutex: the test shows nothing of cohorting", callers)
	}
}
