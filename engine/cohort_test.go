package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/lock"
)

// Lock cohorting on a real server: acquisitions of one engine queued on
// one lock pass it among themselves, without a request, in FIFO order,
// until a bound sends the node back (or, under YieldToOthers, another
// client's wait).

// paced is a cohort configuration for tests that take their time between
// grants and releases (waiting for state to settle): no time bound.
var paced = engine.Config{Cohort: engine.CohortConfig{MaxHold: time.Hour}}

// yielding is paced with YieldToOthers: another client seen waiting ends
// the passing.
var yielding = engine.Config{Cohort: engine.CohortConfig{MaxHold: time.Hour, YieldToOthers: true}}

// queueLocal starts n acquisitions of m behind a held lease and waits
// until the engine is idle and the cohort knows whether another client
// waits: nothing of the setup is still in flight when a test measures.
func queueLocal(t *testing.T, eng *engine.Engine, m *lock.Mutex, n int) []*engine.Future[*lock.Lease] {
	t.Helper()
	futs := make([]*engine.Future[*lock.Lease], n)
	for i := range futs {
		futs[i] = m.Acquire(context.Background())
	}
	eventually(t, "the queue settled", func() bool { return eng.InFlight() == 0 && eng.CohortListed(m.Path()) })
	return futs
}

// queueBehindOtherClient holds a mutex of an engine of cfg, queues
// another engine's acquisition behind it, then n local ones once that
// one's node is made.
func queueBehindOtherClient(t *testing.T, cfg engine.Config, n int) (a *engine.Engine, held *lock.Lease, futs []*engine.Future[*lock.Lease], other *engine.Future[*lock.Lease]) {
	t.Helper()
	a = startEngine(t, cfg)
	b := startEngine(t, engine.Config{})
	raw := rawConn(t)
	p := testRoot(t) + "/hot"
	m := lock.NewMutex(a, p)
	held = mustGet(t, m.Acquire(context.Background()))
	other = lock.NewMutex(b, p).Acquire(context.Background())
	eventually(t, "the other client queued", func() bool { return len(ephemerals(t, raw, p)) == 2 })
	return a, held, queueLocal(t, a, m, n), other
}

// queueLaterClient holds a mutex of an engine of cfg with two local
// acquisitions queued behind and the cohort's listing answered, then
// queues another engine's acquisition, and returns once the cohort's
// watch told of it.
func queueLaterClient(t *testing.T, cfg engine.Config) (a *engine.Engine, held *lock.Lease, futs []*engine.Future[*lock.Lease], other *engine.Future[*lock.Lease]) {
	t.Helper()
	a = startEngine(t, cfg)
	b := startEngine(t, engine.Config{})
	p := testRoot(t) + "/hot"
	m := lock.NewMutex(a, p)
	held = mustGet(t, m.Acquire(context.Background()))
	futs = queueLocal(t, a, m, 2)
	if a.CohortSeesOthers(p) {
		t.Fatal("another client seen before any queued")
	}
	other = lock.NewMutex(b, p).Acquire(context.Background())
	eventually(t, "the cohort's watch told of the other client", func() bool { return a.CohortSeesOthers(p) })
	return a, held, futs, other
}

func resolved[T any](f *engine.Future[T]) bool {
	_, ok, _ := f.Result()
	return ok
}

func mustGet(t *testing.T, f *engine.Future[*lock.Lease]) *lock.Lease {
	t.Helper()
	l, err := f.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// firstOf waits until one of a and b is granted, and returns it: which
// comes first is what the order tests assert, and the other may wait for
// ever behind a holder the test has not released yet.
func firstOf(t *testing.T, a, b *engine.Future[*lock.Lease]) *engine.Future[*lock.Lease] {
	t.Helper()
	select {
	case <-a.Done():
		return a
	case <-b.Done():
		return b
	}
}

func release(t *testing.T, l *lock.Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Every handoff among local waiters is a pass: no request from the first
// holder's grant to the last holder's, each release passes to the next
// waiter in the order they asked, and the node goes when the last leaves.
func TestCohortPassesInOrderWithoutRequests(t *testing.T) {
	eng := startEngine(t, paced)
	raw := rawConn(t)
	m := lock.NewMutex(eng, testRoot(t)+"/hot")
	held := mustGet(t, m.Acquire(context.Background()))
	futs := queueLocal(t, eng, m, 8)

	if w := eng.CohortStats().Waiting; w != int64(len(futs)) {
		t.Fatalf("%d acquisitions waiting in the cohort, want %d", w, len(futs))
	}
	before, passes := eng.Stats(), eng.CohortStats().Passes
	for i, f := range futs {
		release(t, held)
		// The pass resolves f in the loop turn that resolved the release,
		// just after it: the release is told first, so that no one ever
		// sees two holders. So wait for f, then hold the others to FIFO.
		next := mustGet(t, f)
		for j, g := range futs {
			if got, want := resolved(g), j <= i; got != want {
				t.Fatalf("after release %d: waiter %d resolved=%v, want %v (FIFO)", i, j, got, want)
			}
		}
		held = next
	}
	after := eng.Stats()
	if after.Requests() != before.Requests() {
		t.Errorf("%d requests for %d handoffs among local waiters (before %+v, after %+v), want 0",
			after.Requests()-before.Requests(), len(futs), before, after)
	}
	if s := eng.CohortStats(); s.Passes-passes != uint64(len(futs)) || s.Waiting != 0 {
		t.Errorf("%d passes, %d still waiting; want %d and none", s.Passes-passes, s.Waiting, len(futs))
	}
	if n := len(ephemerals(t, raw, m.Path())); n != 1 {
		t.Errorf("%d lock nodes while the last waiter holds, want the one node passed", n)
	}
	release(t, held)
	if n := len(ephemerals(t, raw, m.Path())); n != 0 {
		t.Errorf("%d lock nodes after the last release returned, want 0", n)
	}
}

// A lock taken and released with nobody else waiting costs what it did
// before cohorting: the listing that tells whether another client waits is
// asked only once a second acquisition makes a pass possible.
func TestCohortUncontendedAsksNothingMore(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	m := lock.NewMutex(eng, testRoot(t)+"/cold")
	mkdirs(t, rawConn(t), m.Path()) // made before: a path the engine makes holds its first node without a listing
	release(t, mustGet(t, m.Acquire(context.Background())))
	before := eng.Stats()
	release(t, mustGet(t, m.Acquire(context.Background())))
	d := eng.Stats()
	if d.Creates-before.Creates != 1 || d.Lists-before.Lists != 1 || d.Deletes-before.Deletes != 1 || d.Watches != before.Watches {
		t.Fatalf("one uncontended cycle: %+v → %+v, want one create, one listing, one delete and no watch", before, d)
	}
}

// A waiter whose context ends leaves the queue: it fails with the cause,
// is never granted, and the others are served in order around it.
func TestCohortCancelledWaiterLeavesTheQueue(t *testing.T) {
	eng := startEngine(t, paced)
	m := lock.NewMutex(eng, testRoot(t)+"/hot")
	held := mustGet(t, m.Acquire(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	futs := []*engine.Future[*lock.Lease]{m.Acquire(context.Background()), m.Acquire(ctx), m.Acquire(context.Background())}
	cancel()
	eventually(t, "the cancelled waiter resolved", func() bool { return resolved(futs[1]) })
	if _, _, err := futs[1].Result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v, want context.Canceled", err)
	}
	release(t, held)
	held = mustGet(t, futs[0])
	if resolved(futs[2]) {
		t.Fatal("the waiter behind was granted beside the one ahead")
	}
	release(t, held)
	release(t, mustGet(t, futs[2]))
}

// Tokens: every pass is above the holder before it, keeps the node's zxid
// with the next pass number, and the next grant to another client is
// above them all.
func TestCohortTokensIncreaseAcrossPassesAndClients(t *testing.T) {
	a := startEngine(t, paced)
	b := startEngine(t, engine.Config{})
	p := testRoot(t) + "/hot"
	m := lock.NewMutex(a, p)
	held := mustGet(t, m.Acquire(context.Background()))
	futs := queueLocal(t, a, m, 4)
	tokens := []int64{held.Token()}
	for _, f := range futs {
		release(t, held)
		held = mustGet(t, f)
		tokens = append(tokens, held.Token())
	}
	other := lock.NewMutex(b, p).Acquire(context.Background())
	release(t, held)
	lb := mustGet(t, other)
	tokens = append(tokens, lb.Token())
	again := m.Acquire(context.Background())
	release(t, lb)
	tokens = append(tokens, mustGet(t, again).Token())
	release(t, mustGet(t, again))

	zxid := tokens[0] >> engine.TokenPassBits
	for i, tok := range tokens {
		if i > 0 && tok <= tokens[i-1] {
			t.Fatalf("tokens %v: %d at %d not above %d", tokens, tok, i, tokens[i-1])
		}
		if i <= len(futs) && (tok>>engine.TokenPassBits != zxid || tok&engine.MaxCohortPasses != int64(i)) {
			t.Fatalf("tokens %v: pass %d is %#x, want zxid %#x and pass number %d", tokens, i, tok, zxid, i)
		}
	}
}

// With nobody else waiting, the node still goes back at MaxPasses: the
// next local waiter queues a node of its own, and the passes start again
// from it.
//
// Without a pin: the second grant of a node pins the path, and the pin's
// creation fires the cohort's watch, which gives that node back after its
// first holder (as for any change), when the pin is made after the
// cohort's listing; the count of passes would then depend on the timing.
func TestCohortBoundHandsTheNodeBack(t *testing.T) {
	const maxPasses = 2
	eng := startEngine(t, engine.Config{NoPin: true, Cohort: engine.CohortConfig{MaxPasses: maxPasses, MaxHold: time.Hour}})
	m := lock.NewMutex(eng, testRoot(t)+"/hot")
	held := mustGet(t, m.Acquire(context.Background()))
	futs := queueLocal(t, eng, m, 5)
	before := eng.CohortStats()
	zxids := []int64{held.Token() >> engine.TokenPassBits}
	for _, f := range futs {
		release(t, held)
		held = mustGet(t, f)
		zxids = append(zxids, held.Token()>>engine.TokenPassBits)
	}
	release(t, held)
	for i := range zxids {
		sameNode := i%(maxPasses+1) != 0
		if i > 0 && (zxids[i] == zxids[i-1]) != sameNode {
			t.Fatalf("grant zxids %v: holder %d on the node before: %v, want %v (a node passes %d times)",
				zxids, i, !sameNode, sameNode, maxPasses)
		}
	}
	s := eng.CohortStats()
	if s.Bounded-before.Bounded != 1 || s.Passes-before.Passes != 4 {
		t.Fatalf("cohort stats %+v → %+v: want one node given back at the bound and 4 passes", before, s)
	}
}

// Past MaxHold from the node's grant a pass starts only while nobody else
// is known to wait: with no other client on the lock, the node passes on
// (the grant renewed, counted once), with no request for it.
func TestCohortPassesPastMaxHoldWhileNobodyElseWaits(t *testing.T) {
	eng := startEngine(t, engine.Config{Cohort: engine.CohortConfig{MaxHold: time.Nanosecond}})
	m := lock.NewMutex(eng, testRoot(t)+"/hot")
	held := mustGet(t, m.Acquire(context.Background()))
	futs := queueLocal(t, eng, m, 2) // longer than MaxHold
	before := eng.CohortStats()
	for _, f := range futs {
		release(t, held)
		next := mustGet(t, f)
		if next.Token()>>engine.TokenPassBits != held.Token()>>engine.TokenPassBits {
			t.Fatalf("token %#x on a node of its own after %#x, though nobody else waits", next.Token(), held.Token())
		}
		held = next
	}
	release(t, held)
	if s := eng.CohortStats(); s.Passes-before.Passes != uint64(len(futs)) || s.Renewed-before.Renewed != 1 || s.Bounded != before.Bounded {
		t.Fatalf("cohort stats %+v → %+v, want every waiter passed, the grant renewed once, none given back at a bound", before, s)
	}
}

// Past MaxHold, another client known to wait (its node in the listing
// that tells) ends the passing: the holder's release gives the node back,
// the other client has it next, and the local waiter queues a node of its
// own behind it.
func TestCohortTimeBoundHandsTheNodeBackWhenAnotherClientWaits(t *testing.T) {
	a, held, futs, other := queueBehindOtherClient(t, engine.Config{Cohort: engine.CohortConfig{MaxHold: time.Nanosecond}}, 1)
	before := a.CohortStats()
	release(t, held)
	if got := firstOf(t, other, futs[0]); got != other {
		t.Fatal("the local waiter was granted before the other client, past MaxHold")
	}
	release(t, mustGet(t, other))
	next := mustGet(t, futs[0])
	if next.Token()>>engine.TokenPassBits == held.Token()>>engine.TokenPassBits {
		t.Fatalf("token %#x passed on the node of %#x past MaxHold while another client waited", next.Token(), held.Token())
	}
	release(t, next)
	if s := a.CohortStats(); s.Passes != before.Passes || s.Bounded-before.Bounded != 1 {
		t.Fatalf("cohort stats %+v → %+v, want no pass and the node given back at the bound", before, s)
	}
}

// A client that queues after the listing is heard of by its watch: past
// MaxHold, the next release gives the node back to it.
func TestCohortTimeBoundHearsOfALaterClient(t *testing.T) {
	_, held, futs, other := queueLaterClient(t, engine.Config{Cohort: engine.CohortConfig{MaxHold: time.Nanosecond}})
	release(t, held)
	if got := firstOf(t, other, futs[0]); got != other {
		t.Fatal("a local waiter was granted before the other client the watch told of, past MaxHold")
	}
	release(t, mustGet(t, other))
	for _, f := range futs {
		release(t, mustGet(t, f))
	}
}

// Another engine waiting on the lock gets it within the bound, and only
// then: the node passes MaxPasses times after the other client queued,
// though it is seen waiting, and goes back at the bound.
func TestCohortOtherClientGetsInWithinTheBound(t *testing.T) {
	const maxPasses = 2
	_, held, futs, other := queueBehindOtherClient(t, engine.Config{Cohort: engine.CohortConfig{MaxPasses: maxPasses, MaxHold: time.Hour}}, 5)
	localBefore := 0
	for _, f := range futs {
		release(t, held)
		select {
		case <-other.Done():
		case <-f.Done():
			localBefore++
			held = mustGet(t, f)
			continue
		}
		break
	}
	if localBefore != maxPasses {
		t.Fatalf("%d local grants after the other client queued, want MaxPasses (%d): passing goes on to the bound", localBefore, maxPasses)
	}
	lb := mustGet(t, other)
	if lb.Token() <= held.Token() {
		t.Fatalf("other client's token %d not above the last local holder's %d", lb.Token(), held.Token())
	}
	release(t, lb)
	for _, f := range futs[localBefore:] {
		release(t, mustGet(t, f))
	}
}

// Under YieldToOthers, a client seen waiting while the node passes gets
// it after the current holder: the local waiters queue behind it.
func TestCohortYieldsToAClientSeenWaiting(t *testing.T) {
	a, held, futs, other := queueLaterClient(t, yielding)
	before := a.CohortStats()
	release(t, held)
	if firstOf(t, other, futs[0]) != other {
		t.Fatal("a local waiter was granted before the client seen waiting")
	}
	lb := mustGet(t, other)
	if s := a.CohortStats(); s.Yielded-before.Yielded != 1 {
		t.Fatalf("cohort stats %+v → %+v, want one node given back to a waiting client", before, s)
	}
	release(t, lb)
	first := mustGet(t, futs[0])
	if first.Token() <= lb.Token() {
		t.Fatalf("local token %d after the other client's %d", first.Token(), lb.Token())
	}
	release(t, first)
	release(t, mustGet(t, futs[1]))
}

// The listing that grants the node tells whether another client waits
// behind it: when one does, under YieldToOthers, the node goes back after
// its first holder, with no request asked to learn it and no wait for one.
func TestCohortGrantingListingShowsAWaitingClient(t *testing.T) {
	a := startEngine(t, yielding)
	b := startEngine(t, engine.Config{})
	c := startEngine(t, engine.Config{})
	raw := rawConn(t)
	p := testRoot(t) + "/hot"
	m := lock.NewMutex(a, p)
	lb := mustGet(t, lock.NewMutex(b, p).Acquire(context.Background()))
	first := m.Acquire(context.Background())
	eventually(t, "a's node queued", func() bool { return len(ephemerals(t, raw, p)) == 2 })
	other := lock.NewMutex(c, p).Acquire(context.Background())
	eventually(t, "c's node queued behind a's", func() bool { return len(ephemerals(t, raw, p)) == 3 })
	second := m.Acquire(context.Background()) // waits in a's cohort
	eventually(t, "a idle", func() bool { return a.InFlight() == 0 })
	before := a.Stats()
	release(t, lb)
	la := mustGet(t, first)
	if d := a.Stats(); d.Watches != before.Watches {
		t.Fatalf("a asked %d watches after its grant, want none: the granting listing showed c waiting", d.Watches-before.Watches)
	}
	release(t, la)
	if firstOf(t, other, second) != other {
		t.Fatal("a's second acquisition was passed the node while c waited behind it")
	}
	release(t, mustGet(t, other))
	release(t, mustGet(t, second))
}

// Under YieldToOthers, a client queued before a local waiter joins is
// seen in the listing the join asks for; until it is answered no pass
// happens, so the local waiter never overtakes it however soon the holder
// lets go.
func TestCohortNeverOvertakesAClientQueuedFirst(t *testing.T) {
	a := startEngine(t, yielding)
	b := startEngine(t, engine.Config{})
	raw := rawConn(t)
	p := testRoot(t) + "/hot"
	m := lock.NewMutex(a, p)
	for round := range 5 {
		held := mustGet(t, m.Acquire(context.Background()))
		other := lock.NewMutex(b, p).Acquire(context.Background())
		eventually(t, "the other client queued", func() bool { return len(ephemerals(t, raw, p)) == 2 })
		local := m.Acquire(context.Background())
		release(t, held) // at once: the listing is most likely in flight
		if firstOf(t, other, local) != other {
			t.Fatalf("round %d: the local waiter was granted before the client queued ahead of it", round)
		}
		lb := mustGet(t, other)
		release(t, lb)
		release(t, mustGet(t, local))
	}
}

// With strict FIFO, for the engine or for one recipe, every acquisition
// queues a node of its own and nothing passes.
func TestCohortStrictFIFOQueuesEveryAcquisition(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  engine.Config
		opts []lock.Option
	}{
		{"engine", engine.Config{Cohort: engine.CohortConfig{StrictFIFO: true}}, nil},
		{"recipe", engine.Config{}, []lock.Option{lock.WithStrictFIFO()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := startEngine(t, c.cfg)
			raw := rawConn(t)
			p := testRoot(t) + "/fifo"
			m := lock.NewMutex(eng, p, c.opts...)
			held := mustGet(t, m.Acquire(context.Background()))
			futs := make([]*engine.Future[*lock.Lease], 3)
			for i := range futs {
				futs[i] = m.Acquire(context.Background())
			}
			eventually(t, "every acquisition queued", func() bool { return len(ephemerals(t, raw, p)) == len(futs)+1 })
			for _, f := range futs {
				release(t, held)
				held = mustGet(t, f)
			}
			release(t, held)
			if s := eng.CohortStats(); s.Passes != 0 || s.Carriers != 0 {
				t.Fatalf("cohort stats %+v under strict FIFO, want nothing", s)
			}
		})
	}
}

// The holder's lease is lost with the node's: when the engine's session
// can no longer be trusted, Lost closes for the current holder before
// another client is granted, its release reports the loss, and no local
// waiter is passed the lock; they queue again and get it once the session
// is back.
func TestCohortLossReachesTheHolder(t *testing.T) {
	ctx := context.Background()
	var part netfault.Partition
	a := startEngine(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: part.Dial, Cohort: paced.Cohort})
	b := startEngine(t, engine.Config{})
	p := testRoot(t) + "/hot"
	m := lock.NewMutex(a, p)
	first := mustGet(t, m.Acquire(ctx))
	second := m.Acquire(ctx)
	eventually(t, "the queue settled", func() bool { return a.InFlight() == 0 && a.CohortListed(p) })
	release(t, first)
	held := mustGet(t, second) // a pass
	waiting := m.Acquire(ctx)

	part.Cut()
	lb := mustGet(t, lock.NewMutex(b, p).Acquire(ctx)) // once a's session expires
	select {
	case <-held.Lost():
	default:
		t.Fatal("another client was granted while the passed lease's Lost was open")
	}
	if !errors.Is(held.Err(), engine.ErrLost) {
		t.Fatalf("passed lease's Err %v, want ErrLost", held.Err())
	}
	if err := held.Release(ctx); !errors.Is(err, engine.ErrLost) {
		t.Fatalf("release of the lost passed lease: %v, want ErrLost", err)
	}
	if resolved(waiting) {
		t.Fatal("a local waiter was passed a lost lock")
	}
	part.Heal()
	release(t, lb)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	la, err := waiting.Wait(wctx)
	if err != nil {
		t.Fatalf("local waiter after the loss: %v", err)
	}
	if la.Token() <= lb.Token() {
		t.Fatalf("token %d after the other client's %d", la.Token(), lb.Token())
	}
	release(t, la)
}

// Close fails every local waiter with ErrClosed and loses the holder's
// lease.
func TestCohortCloseResolvesLocalWaiters(t *testing.T) {
	eng := startEngine(t, paced)
	m := lock.NewMutex(eng, testRoot(t)+"/hot")
	held := mustGet(t, m.Acquire(context.Background()))
	futs := queueLocal(t, eng, m, 3)
	eng.Close()
	for i, f := range futs {
		if _, ok, err := f.Result(); !ok || !errors.Is(err, engine.ErrClosed) {
			t.Fatalf("waiter %d once Close returned: resolved %v, %v; want ErrClosed", i, ok, err)
		}
	}
	select {
	case <-held.Lost():
	default:
		t.Fatal("the holder's Lost is open after Close")
	}
	if !errors.Is(held.Err(), engine.ErrClosed) {
		t.Fatalf("holder's Err %v, want ErrClosed", held.Err())
	}
	if _, err := m.Acquire(context.Background()).Wait(context.Background()); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("acquisition after Close: %v, want ErrClosed", err)
	}
}

// A downgrade's read node takes the writer's place, number and all: the
// write lease it came from may not pass on to another local writer, which
// would hold beside the read lease.
func TestCohortDowngradeEndsThePasses(t *testing.T) {
	ctx := context.Background()
	eng := startEngine(t, paced)
	raw := rawConn(t)
	p := testRoot(t) + "/rw"
	rw := lock.NewRWMutex(eng, p)
	w := mustGet(t, rw.Writer().Acquire(ctx))
	next := rw.Owner().Writer().Acquire(ctx)
	eventually(t, "the queue settled", func() bool { return eng.InFlight() == 0 && eng.CohortListed(p) })
	r, err := rw.Downgrade(ctx, w).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release(t, w)
	eventually(t, "the next writer queued behind the read lease", func() bool { return len(ephemerals(t, raw, p)) == 2 })
	if resolved(next) {
		t.Fatal("a writer was granted beside the downgraded read lease")
	}
	release(t, r)
	release(t, mustGet(t, next))
}
