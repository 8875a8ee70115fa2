package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/cohort"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/future"
	"github.com/turnstile-go/turnstile/queue"
)

// A local pass asks the watchdog what a grant asks: the carrier admitted in
// the trusted session, not lost, and the deadline not passed, by the clock
// read then. A deadline passed before the timer ran ends trust there, and
// loses the carrier, as admit does.
func TestCohortPassAsksTheWatchdog(t *testing.T) {
	var clock fakeClock
	var lapses []bool
	tr := newTestTrust(&clock, &lapses)
	defer tr.stop()
	tr.Handshake(0, 0x10, hourMs)
	carrier, stranger := &Lease{}, &Lease{}
	if !tr.admit(carrier, 0x10) {
		t.Fatal("carrier not admitted")
	}
	if ok, _ := tr.vouches(carrier); !ok {
		t.Fatal("no pass under a trusted carrier")
	}
	if ok, _ := tr.vouches(stranger); ok {
		t.Fatal("a pass under a lease the watchdog never admitted")
	}
	clock.set(48 * time.Minute) // the deadline; the timer has not run
	if ok, _ := tr.vouches(carrier); ok {
		t.Fatal("a pass at the deadline")
	}
	if !errors.Is(carrier.Err(), ErrLost) || !tr.lapsed {
		t.Fatalf("deadline passed unnoticed: carrier err %v, lapsed %v; want it lost and trust ended", carrier.Err(), tr.lapsed)
	}
}

// cohortEngine is an engine never started, whose loop the test plays: its
// commands stay in the inbox (see commands), its requests' goroutines
// never run, and its watchdog trusts session 0x10.
func cohortEngine(t testing.TB) *Engine {
	cfg, err := Config{Servers: []string{"127.0.0.1:1"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(cfg)
	e.rt.goroutine = func(func()) {} // the cohort's listing: the test answers it
	e.trust.Handshake(e.trust.clock(), 0x10, hourMs)
	t.Cleanup(func() { e.trust.stop() })
	return e
}

// commands takes the commands posted to the loop so far.
func commands(e *Engine) (acquires []*acquireCmd, releases []*releaseCmd) {
	for _, ev := range e.inbox.Drain(nil) {
		if cmd, ok := ev.(input.Command); ok {
			switch cmd := cmd.Payload.(type) {
			case *acquireCmd:
				acquires = append(acquires, cmd)
			case *releaseCmd:
				releases = append(releases, cmd)
			}
		}
	}
	return acquires, releases
}

// grantNode plays the loop granting cmd, a cohort's node, its node's
// name and token numbered id: the watchdog admits its lease, and the cohort hears of the grant.
func grantNode(t testing.TB, e *Engine, cmd *acquireCmd, id uint64) *Lease {
	t.Helper()
	if cmd.node == 0 {
		t.Fatalf("acquisition %v is not a cohort's node", cmd.req.Path)
	}
	l := &Lease{eng: e, id: carrierIDs | cmd.node, path: cmd.req.Path, node: fmt.Sprintf("%s/_c_x-lock-%010d", cmd.req.Path, id), token: int64(id) << cohort.PassBits}
	if !e.trust.admit(l, 0x10) {
		t.Fatal("the node's lease was not admitted")
	}
	e.acquired(cmd, l, nil)
	return l
}

// holding is a cohort of path with its node granted to a first holder
// (returned) and the listing with a watch answered with nobody else: the
// next waiter that joins may be passed the lease.
func holding(t testing.TB, e *Engine, path string, kind queue.Kind, id uint64) (carrier, holder *Lease, req Request) {
	t.Helper()
	req = Request{Path: path, Kind: kind, Cohort: true,
		Decide: func(*queue.Listing, string) queue.Decision { return queue.Decision{Holds: true} }}
	f := e.Acquire(context.Background(), req)
	acquires, _ := commands(e)
	if len(acquires) != 1 {
		t.Fatalf("%d acquisitions posted for a cohort's first waiter, want 1", len(acquires))
	}
	carrier = grantNode(t, e, acquires[0], id)
	holder = resolved(t, f)
	e.cohorts.stepNode(e, &cohort.Input{Kind: cohort.Watched, Attempt: acquires[0].node}, e.cohortNode(acquires[0].node), nil, nil)
	return carrier, holder, req
}

func resolved[T any](t testing.TB, f *Future[T]) T {
	t.Helper()
	v, ok, err := f.Result()
	if !ok || err != nil {
		t.Fatalf("future: resolved %v, err %v", ok, err)
	}
	return v
}

// A downgrade's read node takes the number of the node it comes from, so
// that node may not pass on: the Acquire of a borrowed number seals the
// cohorts of its path (the machine's seal.txt says what a seal does), and
// the holder's release gives the node back with the waiters still queued.
// On a real server the cohort's watch sees the read node too and yields
// (TestCohortDowngradeEndsThePasses); this is what holds where there is no
// watch to fire, as in the simulator's client.
func TestCohortBorrowedNumberSealsTheNode(t *testing.T) {
	e := cohortEngine(t)
	carrier, first, req := holding(t, e, "/p", queue.KindWrite, 1)
	second := e.Acquire(context.Background(), req)
	if err := first.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	held := resolved(t, second)
	if acquires, releases := commands(e); len(acquires)+len(releases) != 0 || held.Token() != carrier.Token()+1 {
		t.Fatalf("before the downgrade: token %d after %d, %d commands; want a pass, and nothing sent", held.Token(), carrier.Token(), len(acquires)+len(releases))
	}
	third := e.Acquire(context.Background(), req)
	read := Request{Path: "/p", Kind: queue.KindRead, Seq: "0000000001", Decide: req.Decide}
	e.Acquire(context.Background(), read)
	released := held.ReleaseAsync()
	acquires, releases := commands(e)
	if len(acquires) != 2 || acquires[0].node != 0 || acquires[1].node == 0 || len(releases) != 1 || releases[0].lease != carrier {
		t.Fatalf("after a downgrade's Acquire, the holder's release sent %d acquisitions and %d releases; want the read node, the next node and the node given back",
			len(acquires), len(releases))
	}
	if _, ok, _ := released.Result(); ok {
		t.Fatal("the release returned before the node's deletion")
	}
	e.released(releases[0], nil)
	if _, err := future.Await(released.impl()); err != nil || held.Context().Err() == nil {
		t.Fatalf("release %v, lease's context %v; want it ended with the deletion", err, held.Context().Err())
	}
	if _, ok, _ := third.Result(); ok {
		t.Fatal("the waiter behind was granted on the sealed node")
	}
}

// A holder that lets go while the node is being lost is told of the loss
// as a lease of the loop is: its Lost closes and Err reports it, as its
// release does. The loop forgets a lost lease in the watchdog (so the
// release finds it untrusted and gives the node back, with no pass) before
// it marks it lost; the carrier's loss then finds the node given back
// already, and only the release's outcome can tell the holder.
func TestCohortHolderReleasingDuringTheLossIsLost(t *testing.T) {
	e := cohortEngine(t)
	carrier, held, req := holding(t, e, "/p", queue.KindMutex, 1)
	e.Acquire(context.Background(), req)

	e.trust.forget(carrier) // the loop's step that loses the contender
	released := held.ReleaseAsync()
	carrier.markLost(ErrLost) // the loop carrying that step out
	_, releases := commands(e)
	if len(releases) != 1 {
		t.Fatalf("%d releases sent, want the node's", len(releases))
	}
	e.released(releases[0], releases[0].lease.Err()) // the loop refuses a lost lease's release with its loss
	if _, err := future.Await(released.impl()); !errors.Is(err, ErrLost) {
		t.Fatalf("release during the loss: %v, want ErrLost", err)
	}
	select {
	case <-held.Lost():
	default:
		t.Fatalf("the release reported the loss, but the lease's Lost is open (Err %v)", held.Err())
	}
	if !errors.Is(held.Err(), ErrLost) {
		t.Fatalf("lease's Err %v, want ErrLost", held.Err())
	}
}

// A lapse loses the held leases in the order of their ids, which is the
// order they were granted in. What a loss sets off runs in that order: a
// cohort's node lost loses its holder and sends its next waiter's
// acquisition to the loop, so an order taken from the map of held leases
// (random on each run) would queue those acquisitions in a different
// order each time, and the simulator's runs would not follow from their
// seeds.
func TestTrustLapseLosesLeasesInTheirOrder(t *testing.T) {
	e := cohortEngine(t)
	var want []string
	var holders []*Lease
	for id := uint64(1); id <= 32; id++ {
		path := fmt.Sprintf("/p%d", id)
		_, held, req := holding(t, e, path, queue.KindMutex, id)
		e.Acquire(context.Background(), req)
		holders = append(holders, held)
		want = append(want, path)
	}
	e.LapseTrust()
	acquires, _ := commands(e)
	var got []string
	for _, a := range acquires {
		got = append(got, a.req.Path)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("next nodes asked for in the order %v, want %v", got, want)
	}
	for _, h := range holders {
		if !errors.Is(h.Err(), ErrLost) {
			t.Fatalf("holder %s not lost with its node: %v", h.Path(), h.Err())
		}
	}
}

// A passed lease's id names its node's slot, which goes to the next node
// granted once its node is lost: a lease lost with the old node, released
// late, finds the new node there and the new holder in its place. It is
// released as no holder (it reports its loss), follows no suspension of
// the new node, and leaves the new holder's turn as it was.
func TestCohortLostLeaseFindsItsSlotReused(t *testing.T) {
	e := cohortEngine(t)
	carrier, stale, req := holding(t, e, "/p", queue.KindMutex, 1)
	next := e.Acquire(context.Background(), req)

	e.trust.forget(carrier) // the loop loses the node
	carrier.markLost(ErrLost)
	if !errors.Is(stale.Err(), ErrLost) {
		t.Fatalf("holder of the lost node: err %v, want ErrLost", stale.Err())
	}
	acquires, _ := commands(e)
	if len(acquires) != 1 {
		t.Fatalf("%d acquisitions after the loss, want the next waiter's node", len(acquires))
	}
	grantNode(t, e, acquires[0], 2)
	held := resolved(t, next)
	if held.id != stale.id || held.carrier() == nil {
		t.Fatalf("the next node's holder has id %#x (carrier %v), the lost one %#x: want the slot reused, so that this test tells",
			held.id, held.carrier(), stale.id)
	}
	if stale.carrier() != nil || stale.Suspended() == held.Suspended() {
		t.Fatal("the lost holder is taken for the new node's: it has its carrier, or follows its suspensions")
	}
	// No holder's release ends at once: taken for the new holder's, it
	// would wait for the node's deletion.
	if _, ok, err := stale.ReleaseAsync().Result(); !ok || !errors.Is(err, ErrLost) {
		t.Fatalf("the lost holder's release: resolved %v, err %v; want its loss (ErrLost) at once", ok, err)
	}
	if held.Err() != nil || held.carrier() == nil {
		t.Fatalf("the new holder after the lost one's release: err %v, carrier %v; want it holding still", held.Err(), held.carrier())
	}
	released := held.ReleaseAsync() // nobody waits: the node goes back
	_, releases := commands(e)
	if len(releases) != 1 || releases[0].passed != held {
		t.Fatalf("the new holder's release sent %d releases; want its node given back with it", len(releases))
	}
	e.released(releases[0], nil)
	if _, err := future.Await(released.impl()); err != nil {
		t.Fatalf("the new holder's release: %v", err)
	}
}
