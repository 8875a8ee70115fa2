package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/internal/wait"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/status"
)

// An election is shown as one: its leader holding, its other candidates
// waiting in the order they will lead, its observer apart; holders names
// the leader.
func TestElectionShowsItsLeader(t *testing.T) {
	ctx := testCtx(t)
	path := lockPath(t)
	a, b := startEngine(t), startEngine(t)
	leader, err := election.New(a, path).Campaign(ctx, []byte("alpha")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Resign(ctx)
	for _, v := range []string{"beta", "gamma"} {
		cctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		election.New(b, path).Campaign(cctx, []byte(v))
	}
	octx, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	seen := election.New(b, path).Observe(octx)
	if l := <-seen; l.Node != leader.Node() {
		t.Fatalf("observed leader %s, want %s", l.Node, leader.Node())
	}

	var l lockView
	wait.Until(t, "two candidates waiting and one observer", func() bool {
		l, _ = lockAt(t, path)
		return len(l.Waiters) == 2 && len(l.Observers) == 1
	})
	if l.Recipe != recipeElection || len(l.Holders) != 1 || l.Holders[0].Node != leader.Node() || l.Holders[0].Data != "alpha" {
		t.Fatalf("election: %+v, want %s (alpha) leading", l, leader.Node())
	}
	if got := []string{l.Waiters[0].Data, l.Waiters[1].Data}; !slices.Equal(got, []string{"beta", "gamma"}) {
		t.Errorf("candidates waiting: %v, want beta then gamma", got)
	}
	if l.Observers[0].Kind != "observer" || l.Holders[0].Kind != "latch" {
		t.Errorf("kinds: leader %s, observer %s", l.Holders[0].Kind, l.Observers[0].Kind)
	}

	var holders []nodeView
	cliJSON(t, &holders, exitOK, "holders", path)
	if len(holders) != 1 || holders[0].Node != leader.Node() {
		t.Errorf("holders of the election: %+v, want its leader %s", holders, leader.Node())
	}
	r := cli(t, "locks", path)
	if header := strings.SplitN(r.stdout, "\n", 2)[0]; header != path+" (election): 1 leading, 2 waiting, 1 observing" {
		t.Errorf("locks text header %q\n%s", header, r.stdout)
	}
	for _, role := range []string{"  leader ", "  candidate ", "  observer "} {
		if !strings.Contains(r.stdout, role) {
			t.Errorf("locks text lacks %q:\n%s", role, r.stdout)
		}
	}
}

// elect runs its command while it leads, with its node and token in the
// environment, and elect -observe prints that leader.
func TestElectRunsWhileLeading(t *testing.T) {
	ctx := testCtx(t)
	path := lockPath(t)
	h := newHoldCmd(t, "leader")
	obs := startWatch(ctx, "-servers", shared.Addr(), "elect", "-observe", "-json", path)
	run := startWatch(ctx, append([]string{"-servers", shared.Addr(), "elect", "-id", "runner", path}, h.argv()...)...)
	p, node, token := h.env(t)
	if p != path || !strings.HasPrefix(node, path+"/") || !strings.Contains(node, "-latch-") || token <= 0 {
		t.Errorf("leader's environment: %s %s %d", p, node, token)
	}
	lines := obs.await(t, ctx, "the leader", func(lines []string) bool {
		for _, line := range lines {
			if strings.Contains(line, node) {
				return true
			}
		}
		return false
	})
	var ev leaderEvent
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); err != nil || ev.Node != node || ev.Value != "runner" {
		t.Errorf("elect -observe printed %q (%v); want %s with value runner", lines, err, node)
	}
	h.finish(t)
	if code := <-run.done; code != exitOK {
		t.Fatalf("elect exited %d: %s", code, run.errOut)
	}
	obs.end(t)
}

// A semaphore whose one process runs several acquirers: the leases it was
// granted show as held, and its acquirer still waiting for a lease shows
// as the one waiter, whatever order its mutex node and its granted
// leases' nodes were made in.
func TestSemaphoreOfOneProcess(t *testing.T) {
	ctx := testCtx(t)
	path := lockPath(t)
	e, other := startEngine(t), startEngine(t)
	sem := func(owner string) *lock.Semaphore {
		s, err := lock.NewSemaphore(e, path, 2, lock.WithOwner(owner))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first, err := sem("first").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release(ctx)
	// Another client holds the acquirers' mutex, so that both of e's next
	// acquirers queue their mutex nodes before either makes a lease node.
	guard, err := lock.NewMutex(other, path+"/locks").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := sem("second").Acquire(ctx)
	third := sem("third").Acquire(ctx)
	wait.Until(t, "both acquirers queued on the mutex", func() bool {
		l, _ := lockAt(t, path)
		return len(l.Waiters) == 3
	})
	if err := guard.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := second.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctx)
	var l lockView
	wait.Until(t, "the third acquirer waiting for a lease", func() bool {
		l, _ = lockAt(t, path)
		return len(l.Waiters) == 1 && l.Waiters[0].Kind == "lease"
	})
	if got := names(l.Holders); !slices.Equal(got, []string{"turnstile:first", "turnstile:second"}) {
		t.Errorf("held leases: %v, want first and second", got)
	}
	if got := names(l.Waiters); !slices.Equal(got, []string{"turnstile:third"}) {
		t.Errorf("waiting: %v, want third", got)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l3, err := third.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l3.Release(ctx)
}

// revoke writes the request only to a holder that opted in; -force
// writes it anyway and says what it overwrote.
func TestRevokeOnlyWhereOptedIn(t *testing.T) {
	ctx := testCtx(t)
	root := lockPath(t)
	e := startEngine(t)

	plain, err := lock.NewMutex(e, root+"/plain", lock.WithOwner("plain")).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Release(ctx)
	r := cli(t, "revoke", root+"/plain")
	if r.code != exitError || !strings.Contains(r.stderr, "did not opt in") || !strings.Contains(r.stderr, "-force") ||
		!strings.Contains(r.stderr, `owner="plain"`) || r.stdout != "" {
		t.Fatalf("revoke of a holder that did not opt in: %v", r)
	}
	if h := holdersOf(t, root+"/plain"); h.Owner == nil || h.Owner.Owner != "plain" {
		t.Fatalf("the refused revoke changed the node: %+v", h)
	}
	r = cli(t, "revoke", "-force", root+"/plain")
	if r.code != exitOK || !strings.Contains(r.stdout, "forced") || !strings.Contains(r.stdout, `owner="plain"`) {
		t.Fatalf("revoke -force: %v", r)
	}
	if h := holdersOf(t, root+"/plain"); h.Data != string(nodename.RevokeData) {
		t.Fatalf("after revoke -force the node says %+v, want %s", h, nodename.RevokeData)
	}

	revocable, err := lock.NewMutex(e, root+"/revocable", lock.WithRevocation()).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer revocable.Release(ctx)
	// The holder's watch on its node is set just after the grant: until
	// it is, the tool refuses, and writes nothing.
	wait.Until(t, "revoke of a revocable holder", func() bool {
		return cli(t, "revoke", root+"/revocable").code == exitOK
	})
	<-revocable.Revoked()
}

func holdersOf(t *testing.T, path string) nodeView {
	t.Helper()
	var holders []nodeView
	cliJSON(t, &holders, exitOK, "holders", path)
	if len(holders) != 1 {
		t.Fatalf("holders of %s: %+v", path, holders)
	}
	return holders[0]
}

// help COMMAND and COMMAND -h show that command's usage and its own
// flags; version says the release.
func TestHelpForEachCommand(t *testing.T) {
	own := map[string][]string{
		"locks": {"-json"}, "holders": {"-json"}, "revoke": {"-force"}, "watch": {"-json", "-for"},
		"lock": {"-try", "-grace", "-owner"}, "elect": {"-observe", "-id", "-grace"}, "process": {"-json"}, "version": nil, "help": nil,
	}
	for _, c := range commands {
		r := cli(t, "help", c.name)
		want := "usage: turnstile [flags] " + c.name + " "
		if r.code != exitOK || !strings.HasPrefix(r.stdout, want) {
			t.Errorf("help %s: %v", c.name, r)
		}
		for _, f := range own[c.name] {
			if !strings.Contains(r.stdout, "  "+f+" ") && !strings.Contains(r.stdout, "  "+f+"\n") {
				t.Errorf("help %s does not show its flag %s:\n%s", c.name, f, r.stdout)
			}
		}
		if c.name == "version" || c.name == "help" {
			continue
		}
		if h := cli(t, c.name, "-h"); h.code != exitOK || h.stdout != r.stdout {
			t.Errorf("%s -h differs from help %s:\n%v", c.name, c.name, h)
		}
	}
	if len(own) != len(commands) {
		t.Errorf("the test knows %d commands, the tool %d", len(own), len(commands))
	}
	if r := cli(t, "help", "nosuch"); r.code != exitUsage {
		t.Errorf("help nosuch: %v", r)
	}
	if r := cli(t, "help"); r.code != exitOK || !strings.Contains(r.stdout, "lock PATH") || !strings.Contains(r.stdout, "elect PATH") {
		t.Errorf("help: %v", r)
	}
	if r := cli(t, "version"); r.code != exitOK || !strings.HasPrefix(r.stdout, "turnstile "+version+" (") {
		t.Errorf("version: %v", r)
	}
}

// process reads a process's status handler: what it holds, what it queued
// on ZooKeeper, and what waits in its cohorts, which locks cannot see.
func TestProcessReadsStatusHandler(t *testing.T) {
	ctx := testCtx(t)
	path := lockPath(t)
	v := status.New()
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{shared.Addr()}, Observer: v.Observe})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	v.Attach(eng)
	web := httptest.NewServer(v)
	defer web.Close()

	held, err := lock.NewMutex(eng, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lock.NewMutex(eng, path).Acquire(wctx) // waits in the cohort: no node of its own

	if l, _ := lockAt(t, path); len(l.Holders) != 1 || len(l.Waiters) != 0 {
		t.Fatalf("ZooKeeper shows %+v: the cohort's waiter has no node", l)
	}
	var r result
	wait.Until(t, "process shows the cohort's waiter", func() bool {
		r = cli(t, "process", web.URL)
		return r.code == exitOK && strings.Contains(r.stdout, "1 held, 0 queued on ZooKeeper, 1 waiting in cohorts")
	})
	if !strings.Contains(r.stdout, "token "+strconv.FormatInt(held.Token(), 10)) || !strings.Contains(r.stdout, path) ||
		!strings.HasPrefix(r.stdout, fmt.Sprintf("session 0x%x connected", uint64(eng.SessionID()))) {
		t.Errorf("process:\n%s", r.stdout)
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello") }))
	defer other.Close()
	if r := cli(t, "process", other.URL, "-timeout", "5s"); r.code != exitError || !strings.Contains(r.stderr, "not turnstile's status") {
		t.Errorf("process of a URL serving something else: %v", r)
	}
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	if r := cli(t, "process", missing.URL); r.code != exitError || !strings.Contains(r.stderr, "404") {
		t.Errorf("process of a URL that is not found: %v", r)
	}
}

// Where the servers do not answer wchp (ZooKeeper's default whitelist),
// revoke cannot tell whether a holder opted in: it refuses, names the
// setting, and -force still writes.
func TestRevokeWithoutWchp(t *testing.T) {
	ctx := testCtx(t)
	srv := zkserver.StartT(t, zkserver.Options{ExtraConfig: map[string]string{"4lw.commands.whitelist": "srvr,ruok"}})
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	path := lockPath(t)
	l, err := lock.NewMutex(eng, path, lock.WithRevocation()).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	at := func(args ...string) result {
		var out, errb strings.Builder
		code := run(ctx, append([]string{"-servers", srv.Addr()}, args...), &out, &errb)
		return result{code: code, stdout: out.String(), stderr: errb.String()}
	}
	r := at("revoke", path)
	if r.code != exitError || !strings.Contains(r.stderr, "cannot tell") || !strings.Contains(r.stderr, "4lw.commands.whitelist") {
		t.Fatalf("revoke where wchp is not allowed: %v", r)
	}
	if r := at("revoke", "-force", path); r.code != exitOK {
		t.Fatalf("revoke -force: %v", r)
	}
	<-l.Revoked()
}
