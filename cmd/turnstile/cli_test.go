package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/wait"
	"github.com/turnstile-go/turnstile/lock"
)

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nosuch"},
		{"holders"},
		{"holders", "/a", "/b"},
		{"holders", "relative/path"},
		{"holders", "/trailing/"},
		{"locks", "/a", "/b"},
		{"revoke"},
		{"revoke", "-json", "/a"}, // -json is for the read commands
		{"holders", "-for", "1s", "/a"},
		{"watch", "-for", "-1s", "/a"},
		{"-auth", "digest", "holders", "/a"},
		{"-root", "relative", "holders", "/a"},
		{"-timeout", "0s", "holders", "/a"},
		{"-bogus", "locks"},
	} {
		r := cli(t, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "usage: turnstile") || r.stdout != "" {
			t.Errorf("turnstile %q: want exit %d with the usage on stderr only, got %v", args, exitUsage, r)
		}
	}
	r := cli(t, "-h")
	if r.code != exitOK || !strings.Contains(r.stdout, "usage: turnstile") {
		t.Errorf("turnstile -h: %v", r)
	}
}

func TestNoServerIsAnError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-servers", addr, "-timeout", "300ms", "holders", "/a"}, &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), "no ZooKeeper session") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and the reason on stderr", code, out.String(), errb.String(), exitError)
	}
}

// A mutex, a read-write lock and a semaphore of turnstile's, each with
// holders and waiters, as locks and holders show them, in JSON and text.
func TestLocksAndHoldersOfTurnstile(t *testing.T) {
	ctx := context.Background()
	root := lockPath(t)
	a, b := startEngine(t), startEngine(t)

	hold := func(acq lock.Acquirer) *lock.Lease {
		t.Helper()
		l, err := acq.Acquire(ctx).Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Release(ctx) })
		return l
	}
	queue := func(acq lock.Acquirer) {
		wctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		acq.Acquire(wctx)
	}

	hold(lock.NewMutex(a, root+"/mutex", lock.WithOwner("m-holder")))
	queue(lock.NewMutex(b, root+"/mutex", lock.WithOwner("m-waiter")))

	hold(lock.NewRWMutex(a, root+"/rw", lock.WithOwner("reader-1")).Reader())
	hold(lock.NewRWMutex(b, root+"/rw", lock.WithOwner("reader-2")).Reader())
	queue(lock.NewRWMutex(a, root+"/rw", lock.WithOwner("writer")).Writer())

	for _, owner := range []string{"lease-1", "lease-2"} {
		s, err := lock.NewSemaphore(a, root+"/sem", 2, lock.WithOwner(owner))
		if err != nil {
			t.Fatal(err)
		}
		hold(s)
	}
	third, _ := lock.NewSemaphore(b, root+"/sem", 2, lock.WithOwner("lease-3"))
	queue(third)

	want := []lockView{
		{Path: root + "/mutex", Recipe: recipeMutex},
		{Path: root + "/rw", Recipe: recipeRW},
		{Path: root + "/sem", Recipe: recipeSemaphore},
	}
	wantWho := map[string][2][]string{
		root + "/mutex": {{"turnstile:m-holder"}, {"turnstile:m-waiter"}},
		root + "/rw":    {{"turnstile:reader-1", "turnstile:reader-2"}, {"turnstile:writer"}},
		root + "/sem":   {{"turnstile:lease-1", "turnstile:lease-2"}, {"turnstile:lease-3"}},
	}
	var locks []lockView
	wait.Until(t, "every waiter queued", func() bool {
		cliJSON(t, &locks, exitOK, "locks", root)
		if len(locks) != len(want) {
			return false
		}
		for _, l := range locks {
			if len(l.Waiters) != len(wantWho[l.Path][1]) {
				return false
			}
		}
		return true
	})
	for i, l := range locks {
		if l.Path != want[i].Path || l.Recipe != want[i].Recipe {
			t.Errorf("lock %d: %s %s, want %s %s", i, l.Path, l.Recipe, want[i].Path, want[i].Recipe)
		}
		w := wantWho[l.Path]
		if got := names(l.Holders); !slices.Equal(got, w[0]) {
			t.Errorf("%s holders: %v, want %v", l.Path, got, w[0])
		}
		if got := names(l.Waiters); !slices.Equal(got, w[1]) {
			t.Errorf("%s waiters: %v, want %v", l.Path, got, w[1])
		}
		for _, n := range append(l.Holders, l.Waiters...) {
			if !strings.HasPrefix(n.Node, l.Path+"/") || n.Owner.PID <= 0 || n.Owner.Host == "" || n.Session == "0x0" || n.Czxid == 0 || n.Since.IsZero() {
				t.Errorf("%s: incomplete node %+v", l.Path, n)
			}
		}
	}
	if kinds := []string{locks[1].Holders[0].Kind, locks[1].Waiters[0].Kind}; !slices.Equal(kinds, []string{"read", "write"}) {
		t.Errorf("rw kinds: %v", kinds)
	}

	// Text: a header per lock, a line per contender, in the same order.
	r := cli(t, "locks", root)
	if r.code != exitOK {
		t.Fatal(r)
	}
	t.Logf("turnstile locks %s:\n%s", root, r.stdout)
	var roles []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "/"):
			roles = append(roles, strings.Join(f, " "))
		case f[0] == "holder" || f[0] == "waiter":
			// role, name, client, queued AGE ago, owner="…" host= pid=
			roles = append(roles, f[0]+" "+f[2]+" "+strings.TrimPrefix(f[6], "owner="))
		}
	}
	wantRoles := []string{
		root + "/mutex (mutex): 1 holding, 1 waiting", `holder turnstile "m-holder"`, `waiter turnstile "m-waiter"`,
		root + "/rw (rwlock): 2 holding, 1 waiting", `holder turnstile "reader-1"`, `holder turnstile "reader-2"`, `waiter turnstile "writer"`,
		root + "/sem (semaphore): 2 holding, 1 waiting", `holder turnstile "lease-1"`, `holder turnstile "lease-2"`, `waiter turnstile "lease-3"`,
	}
	if !slices.Equal(roles, wantRoles) {
		t.Errorf("locks text:\n%s\nread as %q\nwant %q", r.stdout, roles, wantRoles)
	}

	var holders []nodeView
	cliJSON(t, &holders, exitOK, "holders", root+"/rw")
	if got := names(holders); !slices.Equal(got, wantWho[root+"/rw"][0]) {
		t.Errorf("holders -json %s/rw: %v", root, got)
	}
	r = cli(t, "holders", root+"/mutex")
	if f := strings.Fields(r.stdout); r.code != exitOK || len(f) < 6 || f[0] != locks[0].Holders[0].Node || f[1] != "turnstile" || f[2] != "queued" || f[5] != `owner="m-holder"` {
		t.Errorf("holders text: %v", r)
	}
}

func TestNothingThereExitsThree(t *testing.T) {
	ctx := context.Background()
	root := lockPath(t)
	eng := startEngine(t)
	l, err := lock.NewMutex(eng, root+"/idle").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"holders", root + "/nosuch"},     // no such path
		{"holders", root + "/idle"},       // a lock path, empty
		{"locks", root + "/nosuch"},       // nothing under it
		{"revoke", root + "/idle"},        // nothing to revoke
		{"holders", "-json", root + "/x"}, // JSON: an empty list, and the code
	} {
		r := cli(t, args...)
		if r.code != exitNone || r.stderr == "" {
			t.Errorf("turnstile %q: want exit %d with the reason on stderr, got %v", args, exitNone, r)
		}
		if slices.Contains(args, "-json") && strings.TrimSpace(r.stdout) != "[]" {
			t.Errorf("turnstile %q: stdout %q, want []", args, r.stdout)
		}
	}

	held, err := lock.NewMutex(eng, root+"/busy").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	if r := cli(t, "revoke", root+"/busy", "_c_00000000-0000-0000-0000-000000000000-lock-0000000009"); r.code != exitNone {
		t.Errorf("revoke of a node that is not there: %v", r)
	}
}

// -root is a namespace: paths are given and shown relative to it.
func TestRootPrefix(t *testing.T) {
	ctx := context.Background()
	root := lockPath(t)
	eng := startEngine(t)
	l, err := lock.NewMutex(eng, root+"/app/jobs/42", lock.WithOwner("rooted")).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)

	var locks []lockView
	cliJSON(t, &locks, exitOK, "-root", root+"/app", "locks")
	if len(locks) != 1 || locks[0].Path != "/jobs/42" || len(locks[0].Holders) != 1 ||
		locks[0].Holders[0].Node != strings.TrimPrefix(l.Node(), root+"/app") {
		t.Fatalf("locks under -root: %+v", locks)
	}
	r := cli(t, "-root", root+"/app", "holders", "/jobs/42")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "/jobs/42/_c_") {
		t.Fatalf("holders under -root: %v", r)
	}
	if r := cli(t, "-root", root+"/elsewhere", "holders", "/jobs/42"); r.code != exitNone {
		t.Fatalf("holders under another root: %v", r)
	}
}

// A lock whose nodes only an authenticated session may read: without
// -auth the command fails, with it it names the holder.
func TestAuthReadsProtectedLock(t *testing.T) {
	root := lockPath(t)
	conn, events, err := zk.Connect([]string{shared.Addr()}, 10*time.Second, zk.WithLogger(discard{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		conn.Close()
		for range events {
		}
	}()
	if err := conn.AddAuth("digest", []byte("ops:secret")); err != nil {
		t.Fatal(err)
	}
	acl := zk.DigestACL(zk.PermAll, "ops", "secret")
	for _, p := range []string{"/cli", root} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(root+"/secure", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	node, err := conn.Create(root+"/secure/_c_6f1e7c0a-55e2-4b8e-9d51-0c8c2f6f3b11-lock-", []byte(`{"host":"h","pid":7,"owner":"vault"}`),
		zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		t.Fatal(err)
	}

	r := cli(t, "holders", root+"/secure")
	if r.code != exitError || !strings.Contains(r.stderr, "not authenticated") {
		t.Fatalf("without -auth: %v", r)
	}
	var holders []nodeView
	cliJSON(t, &holders, exitOK, "-auth", "digest:ops:secret", "holders", root+"/secure")
	if len(holders) != 1 || holders[0].Node != node || holders[0].Owner == nil || holders[0].Owner.Owner != "vault" {
		t.Fatalf("with -auth: %+v", holders)
	}
	if r := cli(t, "-auth", "digest:ops:wrong", "holders", root+"/secure"); r.code != exitError {
		t.Fatalf("with the wrong password: %v", r)
	}
}
