package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// fuzzOptions are the options bits of an input choose: owner data, the two
// flags, and a nil option, which sets nothing.
func fuzzOptions(bits uint8, owner string) []lock.Option {
	var opts []lock.Option
	if bits&1 != 0 {
		opts = append(opts, lock.WithOwner(owner))
	}
	if bits&2 != 0 {
		opts = append(opts, lock.WithRevocation())
	}
	if bits&4 != 0 {
		opts = append(opts, lock.WithStrictFIFO())
	}
	if bits&8 != 0 {
		opts = append(opts, nil)
	}
	return opts
}

// checkOutcome holds an acquisition of user input to its promises: a
// lease that is held on the path asked for and releases cleanly, or a
// refusal the caller can tell apart (a bad path or request, or a lock
// held); never another error, a panic or a hang. (The fuzzer's bound on
// one input is 10s: every wait here is bounded well below it.)
func checkOutcome(t *testing.T, path, leasePath string, l interface {
	Path() string
	Release(context.Context) error
}, err error) {
	t.Helper()
	if err != nil {
		if engine.ValidatePath(path) != nil && !errors.Is(err, engine.ErrInvalidPath) {
			t.Fatalf("%q: %v, want ErrInvalidPath", path, err)
		}
		if !errors.Is(err, engine.ErrInvalidPath) && !errors.Is(err, engine.ErrInvalidRequest) && !errors.Is(err, engine.ErrWouldBlock) {
			t.Fatalf("%q: %v, neither a refusal of the input nor ErrWouldBlock", path, err)
		}
		return
	}
	if engine.ValidatePath(path) != nil {
		t.Fatalf("%q: granted an invalid path", path)
	}
	if l.Path() != leasePath {
		t.Errorf("lease on %q, asked for %q (want %q)", l.Path(), path, leasePath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release %q: %v", path, err)
	}
}

// FuzzLock takes a lock of every recipe with a path, owner data, options
// and a semaphore size from the input, on a real ZooKeeper, under an
// engine root of the target's own.
func FuzzLock(f *testing.F) {
	f.Add("/a", "", uint8(0), 1)
	f.Add("/a/b", "owner", uint8(1|2|4), 2)
	f.Add("a", "x", uint8(16), 1)
	f.Add("/a/", "", uint8(32), 0)
	f.Add("/zookeeper", "", uint8(48), 1)
	f.Add("/sem", "", uint8(3<<4), -1)
	f.Add("/sem", "", uint8(3<<4), 1<<40)
	f.Add("/n", strings.Repeat("o", engine.MaxDataLen), uint8(1), 1)
	f.Add("/\u00e9/\u4e16", "\x00\xff", uint8(1|8), 3)
	f.Add("/re", "", uint8(4<<4), 1)
	f.Add("/multi", "", uint8(5<<4), 2)
	f.Add("", "", uint8(3<<4), 2) // a semaphore's nodes on "" were "/locks" and "/leases"
	f.Add("", "", uint8(5<<4), 2)
	eng := startEngine(f, engine.Config{Root: lockRoot(f)})
	f.Fuzz(func(t *testing.T, path, owner string, bits uint8, n int) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		opts := fuzzOptions(bits, owner)
		switch bits >> 4 % 6 {
		case 0:
			l, err := lock.NewMutex(eng, path, opts...).TryAcquire(ctx)
			checkOutcome(t, path, path, l, err)
		case 1:
			l, err := lock.NewRWMutex(eng, path, opts...).Reader().TryAcquire(ctx)
			checkOutcome(t, path, path, l, err)
		case 2:
			l, err := lock.NewRWMutex(eng, path, opts...).Writer().TryAcquire(ctx)
			checkOutcome(t, path, path, l, err)
		case 3:
			s, err := lock.NewSemaphore(eng, path, n, opts...)
			if n < 1 {
				if !errors.Is(err, lock.ErrInvalidLeases) || !errors.Is(err, engine.ErrInvalidRequest) {
					t.Fatalf("NewSemaphore(%d): %v", n, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewSemaphore(%d): %v", n, err)
			}
			l, err := s.TryAcquire(ctx)
			checkOutcome(t, path, path+"/leases", l, err) // Curator's semaphore layout
		case 4:
			r := lock.NewReentrantMutex(eng, path, opts...)
			l, err := r.TryAcquire(ctx, owner)
			if err == nil {
				if _, err := r.TryAcquire(ctx, owner); err != nil || r.Count(owner) != 2 {
					t.Fatalf("again: %v, count %d", err, r.Count(owner))
				}
				if err := r.Release(ctx, owner); err != nil || !l.Held() {
					t.Fatalf("first release: %v, held %v", err, l.Held())
				}
			}
			checkOutcome(t, path, path, l, err)
		case 5:
			s, err := lock.NewSemaphore(eng, path, max(n, 1), opts...)
			if err != nil {
				t.Fatal(err)
			}
			ml, err := s.AcquireN(ctx, n).Wait(ctx)
			if n < 1 || n > max(n, 1) {
				if !errors.Is(err, engine.ErrInvalidRequest) {
					t.Fatalf("AcquireN(%d): %v", n, err)
				}
				return
			}
			if err != nil {
				checkOutcome(t, path, path, nil, err)
				return
			}
			if len(ml.Leases()) != n {
				t.Fatalf("AcquireN(%d): %d leases", n, len(ml.Leases()))
			}
			if err := ml.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzMultiLock combines mutexes on the paths of the input (one a line,
// at most eight): a set with a duplicate, an empty set or a bad path is
// refused with ErrInvalidRequest or ErrInvalidPath; any other is taken
// whole and released whole.
func FuzzMultiLock(f *testing.F) {
	for _, s := range []string{"", "/a", "/a\n/b", "/a\n/a", "/b\n/a\n/c", "/a\nrel", "/a\n/a/b", "/x/\n/y", "\n"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	eng := startEngine(f, engine.Config{Root: lockRoot(f)})
	f.Fuzz(func(t *testing.T, lines string, try bool) {
		paths := strings.Split(lines, "\n")
		if len(paths) > 8 {
			paths = paths[:8]
		}
		if lines == "" {
			paths = nil
		}
		var parts []lock.Acquirer
		for _, p := range paths {
			parts = append(parts, lock.NewMutex(eng, p))
		}
		ml, err := lock.NewMultiLock(parts...)
		if err != nil {
			if !errors.Is(err, lock.ErrMultiLock) || !errors.Is(err, engine.ErrInvalidRequest) {
				t.Fatalf("NewMultiLock(%q): %v", paths, err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var held *lock.MultiLease
		if try {
			held, err = ml.TryAcquire(ctx)
		} else {
			held, err = ml.Lock(ctx)
		}
		if err != nil {
			bad := false
			for _, p := range paths {
				bad = bad || engine.ValidatePath(p) != nil
			}
			if !bad || !errors.Is(err, engine.ErrInvalidPath) {
				t.Fatalf("%q: %v", paths, err)
			}
			return
		}
		if len(held.Leases()) != len(paths) {
			t.Fatalf("%q: %d leases", paths, len(held.Leases()))
		}
		if err := held.Release(ctx); err != nil {
			t.Fatalf("%q: release: %v", paths, err)
		}
	})
}
