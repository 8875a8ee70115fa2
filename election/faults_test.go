package election_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// expiring returns an engine whose session the test can cut off (and let
// expire, after its 2 s timeout), with the partition that does it.
func expiring(t *testing.T, opts ...func(*engine.Config)) (*engine.Engine, *netfault.Partition) {
	p := &netfault.Partition{}
	cfg := engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial}
	for _, o := range opts {
		o(&cfg)
	}
	return startEngine(t, cfg), p
}

// When the leader's session expires, its Lost() has closed by the time the
// next candidate is elected.
func TestLostBeforeTheNextLeaderOnExpiry(t *testing.T) {
	ctx := bounded(t)
	a, p := expiring(t)
	b := startEngine(t, engine.Config{})
	path := electionPath(t)

	la, err := election.New(a, path).Campaign(ctx, []byte("a")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := election.New(b, path).Campaign(ctx, []byte("b"))
	eventually(t, "b waits", func() bool { return b.Stats().Watches > 0 })
	p.Cut()
	lb, err := next.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !isClosed(la.Lost()) {
		t.Fatal("the next leader was elected before the old one saw Lost()")
	}
	if !errors.Is(la.Err(), engine.ErrLost) || la.Held() {
		t.Fatalf("the expired leader: Err() = %v, Leading() = %v", la.Err(), la.Held())
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("token %d after the expiry, not above the lost leader's %d", lb.Token(), la.Token())
	}
	p.Heal()
	if err := la.Resign(ctx); !errors.Is(err, engine.ErrLost) {
		t.Fatalf("resign of a lost leadership: %v, want ErrLost", err)
	}
	if err := lb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// A connection loss the session survives keeps every candidacy: a leader
// is suspended, not lost, and a waiting candidate keeps its node and place.
func TestConnectionLossKeepsTheCandidacy(t *testing.T) {
	ctx := bounded(t)
	var p netfault.Partition
	a := startEngine(t, engine.Config{SessionTimeout: 20 * time.Second, Dialer: p.Dial})
	b := startEngine(t, engine.Config{})
	conn := inspect(t)
	path := electionPath(t)
	ea, eb := election.New(a, path), election.New(b, path)

	leader, err := ea.Campaign(ctx, []byte("a-leader")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := ea.Campaign(ctx, []byte("a-waiting"))
	eventually(t, "a's second candidate queued", func() bool { return len(children(t, conn, path)) == 2 })
	behind := eb.Campaign(ctx, []byte("b"))
	eventually(t, "b's candidate queued", func() bool { return len(children(t, conn, path)) == 3 })
	before := children(t, conn, path)
	session := a.SessionID()

	p.Cut()
	select {
	case <-leader.Suspended():
	case <-ctx.Done():
		t.Fatal("the leader was never suspended")
	}
	p.Heal()
	eventually(t, "a reconnected", func() bool { return !isClosed(leader.Suspended()) })
	if a.SessionID() != session || isClosed(leader.Lost()) || !leader.Held() {
		t.Fatalf("after a short cut: session %x (was %x), lost %v", a.SessionID(), session, isClosed(leader.Lost()))
	}
	if after := children(t, conn, path); !slices.Equal(sorted(after), sorted(before)) {
		t.Fatalf("candidates changed across the cut: %v, then %v", before, after)
	}
	if err := leader.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := waiting.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !pending(behind) {
		t.Fatal("b was elected beside a's second candidate")
	}
	if err := second.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	third, err := behind.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	third.Resign(ctx)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// A candidate whose session expires before it is elected joins again at
// the back under the new session; with WithFailOnExpiry it fails instead,
// leaving no node.
func TestExpiryRejoinsAtTheBackOrFails(t *testing.T) {
	ctx := bounded(t)
	a, p := expiring(t)
	b := startEngine(t, engine.Config{})
	conn := inspect(t)
	path := electionPath(t)
	eb := election.New(b, path)

	leader, err := eb.Campaign(ctx, []byte("b-leader")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rejoining := election.New(a, path).Campaign(ctx, []byte("a-rejoins"))
	failing := election.New(a, path, election.WithFailOnExpiry()).Campaign(ctx, []byte("a-fails"))
	eventually(t, "a's candidates queued", func() bool { return len(children(t, conn, path)) == 3 })
	overtaking := eb.Campaign(ctx, []byte("b-overtakes"))
	eventually(t, "b's second candidate queued", func() bool { return len(children(t, conn, path)) == 4 })

	p.Cut()
	eventually(t, "a's nodes removed by the expiry", func() bool { return len(children(t, conn, path)) == 2 })
	p.Heal()
	if _, err := failing.Wait(ctx); !errors.Is(err, engine.ErrSessionExpired) {
		t.Fatalf("candidate WithFailOnExpiry: %v, want ErrSessionExpired", err)
	}
	eventually(t, "a's candidate joined again", func() bool { return len(children(t, conn, path)) == 3 })

	if err := leader.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := overtaking.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !pending(rejoining) {
		t.Fatal("the rejoined candidate kept its place ahead of b's second candidate")
	}
	if err := second.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	third, err := rejoining.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := third.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no node left", func() bool { return len(children(t, conn, path)) == 0 })
}

// terms checks, across every candidate of a test, that no two lead at
// once: a leader that is elected while an earlier one has not stepped down
// is a violation, unless the earlier one was told (its Lost() closed) and
// is on its way out. It also checks that tokens only grow.
type terms struct {
	mu         sync.Mutex
	current    *election.Leadership
	lastToken  int64
	count      int
	violations []string
}

func (ts *terms) elected(l *election.Leadership) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if c := ts.current; c != nil && !isClosed(c.Lost()) {
		ts.violations = append(ts.violations, fmt.Sprintf("%s elected while %s leads", l.Node(), c.Node()))
	}
	if l.Token() <= ts.lastToken {
		ts.violations = append(ts.violations, fmt.Sprintf("token %d after %d", l.Token(), ts.lastToken))
	}
	ts.current, ts.lastToken = l, l.Token()
	ts.count++
}

func (ts *terms) steppedDown(l *election.Leadership) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.current == l {
		ts.current = nil
	}
}

// campaignLoop campaigns, leads for hold (or until Lost), steps down and
// resigns, until ctx ends.
func campaignLoop(ctx context.Context, t *testing.T, el *election.Election, value string, hold time.Duration, ts *terms) {
	for ctx.Err() == nil {
		l, err := el.Campaign(ctx, []byte(value)).Wait(ctx)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("%s: campaign: %v", value, err)
			}
			return
		}
		ts.elected(l)
		select {
		case <-time.After(hold):
		case <-l.Lost():
		}
		ts.steppedDown(l)
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := l.Resign(rctx); err != nil && !errors.Is(err, engine.ErrLost) {
			t.Errorf("%s: resign: %v", value, err)
		}
		cancel()
	}
}

// One leader at a time while the candidates' connections are cut, briefly
// (the sessions survive) and for longer than a session (they expire).
func TestOneLeaderAtATimeUnderConnectionCutsAndExpiry(t *testing.T) {
	path := electionPath(t)
	ts := &terms{}
	var parts []*netfault.Partition
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	for e := range 3 {
		eng, p := expiring(t)
		parts = append(parts, p)
		for c := range 2 {
			el := election.New(eng, path)
			wg.Go(func() { campaignLoop(ctx, t, el, fmt.Sprintf("engine-%d-candidate-%d", e, c), 10*time.Millisecond, ts) })
		}
	}
	rng := rand.New(rand.NewPCG(7, 9))
	var cuts, expiries atomic.Int64
	for i := range 8 {
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		p := parts[rng.IntN(len(parts))]
		p.Cut()
		away := time.Duration(100+rng.IntN(400)) * time.Millisecond
		if i%3 == 2 {
			away = 3 * time.Second // past the 2 s session: the server expires it
			expiries.Add(1)
		} else {
			cuts.Add(1)
		}
		time.Sleep(away)
		p.Heal()
	}
	time.Sleep(500 * time.Millisecond)
	stop()
	wg.Wait()

	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.Logf("%d terms under %d short cuts and %d expiries", ts.count, cuts.Load(), expiries.Load())
	if len(ts.violations) > 0 {
		t.Fatalf("%d violations, e.g. %s", len(ts.violations), ts.violations[0])
	}
	if ts.count < 6 {
		t.Fatalf("only %d terms: the election made no progress", ts.count)
	}
}

// One leader at a time while the ZooKeeper leader of a three-server
// ensemble is killed and restarted, twice.
func TestOneLeaderAtATimeWhenTheZooKeeperLeaderIsKilled(t *testing.T) {
	ens := zkserver.StartEnsembleT(t, 3, zkserver.Options{})
	path := electionPath(t)
	ts := &terms{}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	for e := range 2 {
		eng := startEngine(t, engine.Config{Servers: ens.Addrs(), SessionTimeout: 6 * time.Second})
		for c := range 2 {
			el := election.New(eng, path)
			wg.Go(func() { campaignLoop(ctx, t, el, fmt.Sprintf("engine-%d-candidate-%d", e, c), 10*time.Millisecond, ts) })
		}
	}
	step, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for range 2 {
		time.Sleep(time.Second)
		var leader int
		for {
			var err error
			if leader, err = ens.Leader(step); err == nil {
				break
			}
			if step.Err() != nil {
				t.Fatalf("no ZooKeeper leader: %v", err)
			}
			time.Sleep(100 * time.Millisecond) // an election of the ensemble may be under way
		}
		srv := ens.Servers[leader]
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if err := srv.Restart(step); err != nil {
			t.Fatal(err)
		}
		if err := ens.WaitReady(step); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	stop()
	wg.Wait()

	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.Logf("%d terms across two kills of the ZooKeeper leader", ts.count)
	if len(ts.violations) > 0 {
		t.Fatalf("%d violations, e.g. %s", len(ts.violations), ts.violations[0])
	}
	if ts.count < 4 {
		t.Fatalf("only %d terms: the election made no progress", ts.count)
	}
}
