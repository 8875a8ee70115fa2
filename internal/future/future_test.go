package future

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestFutureResolvesOnce(t *testing.T) {
	f := Make[int]()
	var wg sync.WaitGroup
	var got []int
	var mu sync.Mutex
	for range 3 {
		wg.Add(1)
		f.Then(func(v int, err error) {
			mu.Lock()
			got = append(got, v)
			mu.Unlock()
			wg.Done()
		})
	}
	if _, ok, _ := f.Result(); ok {
		t.Fatal("resolved before resolve")
	}
	if !f.resolve(7, nil) {
		t.Fatal("first resolve lost")
	}
	if f.resolve(8, errors.New("late")) {
		t.Fatal("second resolve won")
	}
	wg.Add(1)
	f.Then(func(v int, err error) { // after resolution: runs at once
		mu.Lock()
		got = append(got, v)
		mu.Unlock()
		wg.Done()
	})
	wg.Wait()
	if len(got) != 4 {
		t.Fatalf("callbacks ran %d times, want 4", len(got))
	}
	for _, v := range got {
		if v != 7 {
			t.Fatalf("callback saw %d", v)
		}
	}
	v, err := f.Wait(context.Background())
	if v != 7 || err != nil {
		t.Fatalf("Wait = %d, %v", v, err)
	}
}

func TestFutureWaitHonoursContext(t *testing.T) {
	f := Make[int]()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v", err)
	}
}

func TestSlowCallbackDoesNotBlockResolver(t *testing.T) {
	f := Make[int]()
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	f.Then(func(int, error) { <-release; wg.Done() })
	f.resolve(1, nil) // returns although the callback blocks
	close(release)
	wg.Wait()
}

// Both resolves once both have, with no error of its own, and is the
// second future itself when the first is nil.
func TestBothWaitsForBoth(t *testing.T) {
	a, b := Make[struct{}](), Make[struct{}]()
	if Both(nil, b) != b {
		t.Fatal("Both(nil, b) is not b")
	}
	f := Both(a, b)
	Resolve(a, struct{}{}, errors.New("a's"))
	select {
	case <-f.Done():
		t.Fatal("resolved with one of two")
	case <-time.After(10 * time.Millisecond):
	}
	Resolve(b, struct{}{}, nil)
	if _, err := f.Wait(context.Background()); err != nil {
		t.Fatalf("Both: %v, want no error of its own", err)
	}
}
