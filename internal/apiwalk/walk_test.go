package apiwalk_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/apicheck"
	"github.com/turnstile-go/turnstile/internal/apiwalk"
	"github.com/turnstile-go/turnstile/internal/zktest"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
	"github.com/turnstile-go/turnstile/status"
	"github.com/turnstile-go/turnstile/turnstiletest"
)

// TestWalk calls every exported function and method of the library's
// packages (metrics, a module of its own, walks itself) with nil and zero
// arguments, and with usable ones but one nil: no call panics or hangs,
// and every nil required argument is an error wrapping
// engine.ErrInvalidRequest. (Failing first: before the fixes that came
// with it, it reported nil dereferences in every package it walks, a
// Future.Then(nil) that took the test binary down, a zero Lease whose
// Release panicked, and refusals that did not wrap ErrInvalidRequest.)
func TestWalk(t *testing.T) {
	api, err := apicheck.List("../..")
	if err != nil {
		t.Fatal(err)
	}
	eng := zktest.StartEngine(t, shared.Addr(), engine.Config{})
	t.Cleanup(func() { eng.Close() }) // after the parallel subtests
	root := zktest.Root(t)
	var seq atomic.Int64
	path := func() string { return fmt.Sprintf("%s/p%d", root, seq.Add(1)) }
	mutexLease := func(t *testing.T, ctx context.Context) *engine.Lease {
		l, err := lock.NewMutex(eng, path()).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	decide := func(l *queue.Listing, self string) queue.Decision { return l.Mutex(self) }
	one := func(name string, make func(t *testing.T, ctx context.Context) any) []apiwalk.Receiver {
		return []apiwalk.Receiver{{Name: name, Make: make}}
	}
	w := &apiwalk.Walk{
		Packages: []string{"engine", "lock", "election", "events", "queue", "status", "turnstiletest"},
		API:      api,
		Timeout:  time.Second,
		Funcs: map[string]any{
			"engine.Start":              engine.Start,
			"engine.ValidatePath":       engine.ValidatePath,
			"election.New":              election.New,
			"election.WithFailOnExpiry": election.WithFailOnExpiry,
			"lock.NewMultiLock":         lock.NewMultiLock,
			"lock.NewMutex":             lock.NewMutex,
			"lock.NewRWMutex":           lock.NewRWMutex,
			"lock.NewReentrantMutex":    lock.NewReentrantMutex,
			"lock.NewSemaphore":         lock.NewSemaphore,
			"lock.NewSemaphoreMutex":    lock.NewSemaphoreMutex,
			"lock.Participants":         lock.Participants,
			"lock.Revoke":               lock.Revoke,
			"lock.WithOwner":            lock.WithOwner,
			"lock.WithRevocation":       lock.WithRevocation,
			"lock.WithStrictFIFO":       lock.WithStrictFIFO,
			"queue.NewListing":          queue.NewListing,
			"queue.Parse":               queue.Parse,
			"status.New":                status.New,
			"turnstiletest.New":         turnstiletest.New,
			"turnstiletest.Start":       turnstiletest.Start,
		},
		NoLive: map[string]string{
			"turnstiletest.New":   "it starts a ZooKeeper server: turnstiletest's own tests call it",
			"turnstiletest.Start": "it starts a ZooKeeper server: turnstiletest's own tests call it",
		},
		Types: map[string][]apiwalk.Receiver{
			"engine.Engine": one("started", func(t *testing.T, ctx context.Context) any {
				return zktest.StartEngine(t, shared.Addr(), engine.Config{})
			}),
			"engine.Lease": one("held", func(t *testing.T, ctx context.Context) any { return mutexLease(t, ctx) }),
			"engine.Future": {
				{Name: "acquire", Make: func(t *testing.T, ctx context.Context) any {
					return eng.Acquire(ctx, engine.Request{Path: path(), Kind: queue.KindMutex, Decide: decide})
				}},
				{Name: "release", Make: func(t *testing.T, ctx context.Context) any { return mutexLease(t, ctx).ReleaseAsync() }},
				{Name: "multi", Make: func(t *testing.T, ctx context.Context) any {
					ml, err := lock.NewMultiLock(lock.NewMutex(eng, path()), lock.NewMutex(eng, path()))
					if err != nil {
						t.Fatal(err)
					}
					return ml.Acquire(ctx)
				}},
				{Name: "campaign", Make: func(t *testing.T, ctx context.Context) any { return election.New(eng, path()).Campaign(ctx, nil) }},
			},
			"lock.Mutex": {
				{Name: "live", Make: func(*testing.T, context.Context) any { return lock.NewMutex(eng, path()) }},
				{Name: "strict", Make: func(*testing.T, context.Context) any { return lock.NewMutex(eng, path(), lock.WithStrictFIFO()) }},
				{Name: "nil engine", Make: func(*testing.T, context.Context) any { return lock.NewMutex(nil, path()) }, Invalid: true},
			},
			"lock.RWMutex": {
				{Name: "live", Make: func(*testing.T, context.Context) any { return lock.NewRWMutex(eng, path()) }},
				{Name: "nil engine", Make: func(*testing.T, context.Context) any { return lock.NewRWMutex(nil, path()) }, Invalid: true},
			},
			"lock.ReadLock": {
				{Name: "live", Make: func(*testing.T, context.Context) any { return lock.NewRWMutex(eng, path()).Reader() }},
				{Name: "nil engine", Make: func(*testing.T, context.Context) any { return lock.NewRWMutex(nil, path()).Reader() }, Invalid: true},
			},
			"lock.WriteLock": {
				{Name: "live", Make: func(*testing.T, context.Context) any { return lock.NewRWMutex(eng, path()).Writer() }},
				{Name: "nil engine", Make: func(*testing.T, context.Context) any { return lock.NewRWMutex(nil, path()).Writer() }, Invalid: true},
			},
			"lock.ReentrantMutex": {
				{Name: "live", Make: func(*testing.T, context.Context) any { return lock.NewReentrantMutex(eng, path()) }},
				{Name: "nil engine", Make: func(*testing.T, context.Context) any { return lock.NewReentrantMutex(nil, path()) }, Invalid: true},
			},
			"lock.Semaphore": {
				{Name: "live", Make: func(t *testing.T, ctx context.Context) any {
					s, err := lock.NewSemaphore(eng, path(), 2)
					if err != nil {
						t.Fatal(err)
					}
					return s
				}},
				{Name: "mutex", Make: func(*testing.T, context.Context) any { return lock.NewSemaphoreMutex(eng, path()) }},
				{Name: "nil engine", Make: func(*testing.T, context.Context) any { return lock.NewSemaphoreMutex(nil, path()) }, Invalid: true},
			},
			"lock.MultiLock": one("live", func(t *testing.T, ctx context.Context) any {
				ml, err := lock.NewMultiLock(lock.NewMutex(eng, path()), lock.NewRWMutex(eng, path()).Reader())
				if err != nil {
					t.Fatal(err)
				}
				return ml
			}),
			"lock.MultiLease": one("held", func(t *testing.T, ctx context.Context) any {
				ml, err := lock.NewMultiLock(lock.NewMutex(eng, path()), lock.NewMutex(eng, path()))
				if err != nil {
					t.Fatal(err)
				}
				held, err := ml.Lock(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return held
			}),
			"election.Election": {
				{Name: "live", Make: func(*testing.T, context.Context) any { return election.New(eng, path()) }},
				{Name: "nil engine", Make: func(*testing.T, context.Context) any { return election.New(nil, path()) }, Invalid: true},
			},
			"election.Leadership": one("leading", func(t *testing.T, ctx context.Context) any {
				l, err := election.New(eng, path()).Campaign(ctx, []byte("v")).Wait(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}),
			"queue.Listing": {
				{Name: "empty", Make: func(*testing.T, context.Context) any { return queue.NewListing(nil) }},
				{Name: "odd", Make: func(*testing.T, context.Context) any {
					return queue.NewListing([]string{"", "x", "_c_0000000001", "lock-", "-lock-0000000009", "member_9999999999"})
				}},
			},
			"status.View": one("new", func(*testing.T, context.Context) any { return status.New() }),
			"turnstiletest.Cluster": {
				// A live cluster is a ZooKeeper server of its own, and its
				// methods stop it: turnstiletest's tests call them.
				{Name: "nil", Make: func(*testing.T, context.Context) any { return (*turnstiletest.Cluster)(nil) }, Invalid: true},
			},
			"turnstiletest.Partition": {
				{Name: "of a nil cluster", Make: func(*testing.T, context.Context) any {
					return (*turnstiletest.Cluster)(nil).NewPartition()
				}, Invalid: true},
			},
		},
		Values: map[string]reflect.Type{
			"engine.State":      reflect.TypeFor[engine.State](),
			"engine.Stats":      reflect.TypeFor[engine.Stats](),
			"events.ReportKind": reflect.TypeFor[events.ReportKind](),
			"queue.Kind":        reflect.TypeFor[queue.Kind](),
			"queue.Client":      reflect.TypeFor[queue.Client](),
		},
		Live: func(t *testing.T, ctx context.Context, typ reflect.Type) (reflect.Value, bool) {
			var v any
			switch typ {
			case reflect.TypeFor[context.Context]():
				v = ctx
			case reflect.TypeFor[*engine.Engine]():
				v = eng
			case reflect.TypeFor[*engine.Lease]():
				v = mutexLease(t, ctx)
			case reflect.TypeFor[string]():
				v = path()
			case reflect.TypeFor[[]byte]():
				v = []byte("v")
			case reflect.TypeFor[engine.Config]():
				v = engine.Config{Servers: []string{shared.Addr()}}
			case reflect.TypeFor[engine.Request]():
				v = engine.Request{Path: path(), Kind: queue.KindMutex, Decide: decide}
			case reflect.TypeFor[lock.Acquirer]():
				v = lock.NewMutex(eng, path())
			case reflect.TypeFor[http.ResponseWriter]():
				v = httptest.NewRecorder()
			case reflect.TypeFor[*http.Request]():
				v = httptest.NewRequest(http.MethodGet, "/", nil)
			case reflect.TypeFor[any]():
				v = 1
			case reflect.TypeFor[time.Duration]():
				v = time.Second
			}
			switch {
			case v != nil:
				rv := reflect.New(typ).Elem()
				rv.Set(reflect.ValueOf(v))
				return rv, true
			case typ.Kind() == reflect.Int || typ.Kind() == reflect.Int64:
				return reflect.ValueOf(1).Convert(typ), true
			case typ.Kind() == reflect.Func:
				return reflect.MakeFunc(typ, func([]reflect.Value) []reflect.Value {
					out := make([]reflect.Value, typ.NumOut())
					for i := range out {
						out[i] = reflect.Zero(typ.Out(i))
					}
					return out
				}), true
			}
			return reflect.Value{}, false
		},
		Release: func(v any) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			switch v := v.(type) {
			case *engine.Engine:
				if v != nil && v != eng {
					v.Close()
				}
			case *election.Leadership:
				if v != nil {
					v.Resign(ctx)
				}
			case *engine.Lease:
				if v != nil {
					v.Release(ctx)
				}
			case *lock.MultiLease:
				if v != nil {
					v.Release(ctx)
				}
			}
		},
	}
	w.Run(t)
}
