package fence_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/fence"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
)

var shared *zkserver.Server

func TestMain(m *testing.M) { goleak.VerifyTestMain(zkserver.Shared(m, &shared)) }

func startEngine(t *testing.T) *engine.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{shared.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// grant acquires path, releases it at once, and returns the grant's
// token: a real token, as a holder that stalled would still carry.
func grant(t *testing.T, eng *engine.Engine, path string) fence.Token {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := lock.NewMutex(eng, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok := fence.TokenOf(l)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestStaleTokenRefused(t *testing.T) {
	eng := startEngine(t)
	a, b := grant(t, eng, "/fence/stale"), grant(t, eng, "/fence/stale")
	if a.Value >= b.Value {
		t.Fatalf("tokens do not rise: %d then %d", a.Value, b.Value)
	}
	store := &fence.Memory{}
	v, err := fence.NewVerifier("/fence/stale", store)
	if err != nil {
		t.Fatal(err)
	}
	balance := 0
	ctx := context.Background()
	if err := v.Do(ctx, b, func(context.Context) error { balance = 2; return nil }); err != nil {
		t.Fatalf("fresh token refused: %v", err)
	}
	err = v.Do(ctx, a, func(context.Context) error { balance = 1; return nil })
	var stale *fence.StaleError
	if !errors.Is(err, fence.ErrStale) || !errors.As(err, &stale) {
		t.Fatalf("stale token: %v, want ErrStale", err)
	}
	if stale.Token != a.Value || stale.Admitted != b.Value {
		t.Fatalf("StaleError %+v, want token %d beaten by %d", stale, a.Value, b.Value)
	}
	if balance != 2 {
		t.Fatalf("the refused write ran: balance %d", balance)
	}
	// The winner may write again under its grant.
	if err := v.Do(ctx, b, func(context.Context) error { balance = 3; return nil }); err != nil {
		t.Fatalf("second write of the same grant: %v", err)
	}
	if got, _ := store.Admitted(ctx, "/fence/stale"); got != b.Value {
		t.Fatalf("Admitted %d, want %d", got, b.Value)
	}
}

// A token of another lock, granted after this lock's, is greater than
// every token of this lock so far: only the path can refuse it.
func TestOtherLockRefused(t *testing.T) {
	eng := startEngine(t)
	mine := grant(t, eng, "/fence/mine")
	other := grant(t, eng, "/fence/other")
	if other.Value <= mine.Value {
		t.Fatalf("the later grant's token %d is not above %d", other.Value, mine.Value)
	}
	v, err := fence.NewVerifier("/fence/mine", &fence.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	if err := v.Do(context.Background(), mine, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	err = v.Do(context.Background(), other, func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, fence.ErrWrongLock) || ran {
		t.Fatalf("token of another lock: %v (ran %v), want ErrWrongLock", err, ran)
	}
	// Nor does the number alone, presented under this lock's path, pass
	// as anything but what it is: a greater token, admitted. The path
	// check is what keeps it out, so the path must come from the lease.
	forged := fence.Token{Path: "/fence/mine", Value: other.Value}
	if err := v.Do(context.Background(), forged, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("forged token under the right path: %v (a fence does not authenticate)", err)
	}
}

func TestFailedWriteRecordsNothing(t *testing.T) {
	store := &fence.Memory{}
	v, _ := fence.NewVerifier("/p", store)
	boom := errors.New("boom")
	if err := v.Do(context.Background(), fence.Token{"/p", 9}, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("write error: %v", err)
	}
	if got, _ := store.Admitted(context.Background(), "/p"); got != 0 {
		t.Fatalf("a failed write recorded token %d", got)
	}
	if err := v.Do(context.Background(), fence.Token{"/p", 5}, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("token below a failed write's refused: %v", err)
	}
}

func TestInvalidInput(t *testing.T) {
	if _, err := fence.NewVerifier("", &fence.Memory{}); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("empty path: %v", err)
	}
	if _, err := fence.NewVerifier("/p", nil); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("nil store: %v", err)
	}
	v, _ := fence.NewVerifier("/p", &fence.Memory{})
	nop := func(context.Context) error { return nil }
	for _, c := range []struct {
		name  string
		ctx   context.Context
		tok   fence.Token
		write func(context.Context) error
	}{
		{"zero token", context.Background(), fence.Token{"/p", 0}, nop},
		{"negative token", context.Background(), fence.Token{"/p", -1}, nop},
		{"nil write", context.Background(), fence.Token{"/p", 1}, nil},
		{"nil ctx", nil, fence.Token{"/p", 1}, nop},
	} {
		if err := v.Do(c.ctx, c.tok, c.write); !errors.Is(err, engine.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", c.name, err)
		}
	}
}

func TestAdmitLeavesWithContext(t *testing.T) {
	v, _ := fence.NewVerifier("/p", &fence.Memory{})
	in, out := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- v.Do(context.Background(), fence.Token{"/p", 1}, func(context.Context) error {
			close(in)
			<-out
			return nil
		})
	}()
	<-in
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := v.Do(ctx, fence.Token{"/p", 2}, func(context.Context) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting Admit with its ctx ended: %v", err)
	}
	close(out)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Writers with interleaved tokens: the admitted ones are in token order,
// and each refused one was below a token admitted before it.
func TestMemoryConcurrent(t *testing.T) {
	store := &fence.Memory{}
	v, _ := fence.NewVerifier("/p", store)
	var (
		mu       sync.Mutex
		admitted []int64
		wg       sync.WaitGroup
	)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				tok := int64(1 + (i*16+w*7)%400)
				err := v.Do(context.Background(), fence.Token{"/p", tok}, func(context.Context) error {
					mu.Lock()
					admitted = append(admitted, tok)
					mu.Unlock()
					return nil
				})
				var stale *fence.StaleError
				if err != nil && (!errors.As(err, &stale) || stale.Admitted <= tok) {
					t.Errorf("token %d: %v", tok, err)
				}
			}
		}()
	}
	wg.Wait()
	for i := 1; i < len(admitted); i++ {
		if admitted[i] < admitted[i-1] {
			t.Fatalf("token %d admitted after %d", admitted[i], admitted[i-1])
		}
	}
	if len(admitted) == 0 {
		t.Fatal("nothing admitted")
	}
}

func ExampleVerifier_Do() {
	store := &fence.Memory{}
	accounts, _ := fence.NewVerifier("/locks/accounts", store)
	balance := 100
	ctx := context.Background()
	// A holder whose grant came later writes first...
	err := accounts.Do(ctx, fence.Token{Path: "/locks/accounts", Value: 2 << 12}, func(context.Context) error {
		balance += 10
		return nil
	})
	fmt.Println(balance, err)
	// ...and the holder before it, waking from a stall, is refused.
	err = accounts.Do(ctx, fence.Token{Path: "/locks/accounts", Value: 1 << 12}, func(context.Context) error {
		balance = 0
		return nil
	})
	fmt.Println(balance, errors.Is(err, fence.ErrStale))
	fmt.Println(err)
	// Output:
	// 110 <nil>
	// 110 true
	// fence: token 4096 of lock /locks/accounts is stale: token 8192 was admitted
}

func TestHolds(t *testing.T) {
	eng := startEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := lock.NewMutex(eng, "/fence/holds")
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan *engine.Lease, 1)
	go func() {
		w, err := lock.NewMutex(startEngine(t), "/fence/holds").Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		waiting <- w
	}()
	var waiter string
	for waiter == "" && ctx.Err() == nil {
		ps, err := lock.Participants(ctx, eng, "/fence/holds")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.Node != l.Node() {
				waiter = p.Node
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range []struct {
		node string
		want bool
	}{
		{l.Node(), true},
		{waiter, false},
		{"/fence/other/" + path.Base(l.Node()), false},
	} {
		got, err := fence.Holds(ctx, eng, "/fence/holds", c.node)
		if err != nil || got != c.want {
			t.Errorf("Holds(%s) = %v, %v; want %v", c.node, got, err, c.want)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	w := <-waiting
	if got, err := fence.Holds(ctx, eng, "/fence/holds", l.Node()); err != nil || got {
		t.Errorf("Holds of the released node = %v, %v", got, err)
	}
	if w != nil {
		if got, err := fence.Holds(ctx, eng, "/fence/holds", w.Node()); err != nil || !got {
			t.Errorf("Holds of the new holder = %v, %v", got, err)
		}
		_ = w.Release(ctx)
	}
}
