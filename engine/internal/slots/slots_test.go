package slots

import (
	"sync"
	"testing"
)

// A slot freed is given again, and names its new record from then on;
// records never seated have no slot, and a taken record is found no more.
func TestSlotsAreReusedAndNameTheirNewRecord(t *testing.T) {
	var tb Table[string]
	a, b, c := "a", "b", "c"
	tb.Add(1, &a)
	tb.Add(2, &b)
	tb.Add(3, &c)
	sa, sb := tb.Seat(1), tb.Seat(2)
	if sa == 0 || sb == 0 || sa == sb {
		t.Fatalf("slots %d and %d: want two distinct, non-zero", sa, sb)
	}
	if got := tb.Seated(sa); got != &a {
		t.Fatalf("slot %d holds %v, want a", sa, got)
	}
	if got := tb.Take(1); got != &a {
		t.Fatalf("Take(1) = %v, want a", got)
	}
	if tb.Get(1) != nil || tb.Seated(sa) != nil {
		t.Fatal("a taken record is still found")
	}
	if sc := tb.Seat(3); sc != sa {
		t.Fatalf("the freed slot %d was not reused: got %d", sa, sc)
	}
	if got := tb.Seated(sa); got != &c {
		t.Fatalf("the reused slot holds %v, want c", got)
	}
	if tb.Seated(0) != nil || tb.Seated(1<<40) != nil {
		t.Fatal("a slot never given names a record")
	}
	if tb.Take(99) != nil {
		t.Fatal("Take of an unknown id returned a record")
	}
}

// Readers without the owner's lock see either nil or a record that was
// seated in that slot, while the owner seats and takes (and the table
// grows) under its lock; run under -race.
func TestSeatedIsSafeWithoutTheOwnersLock(t *testing.T) {
	var (
		mu   sync.Mutex
		tb   Table[uint64]
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	recs := make([]uint64, 200)
	for i := range recs {
		recs[i] = uint64(i + 1)
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for i := uint64(0); i < 64; i++ {
					if r := tb.Seated(i); r != nil && (*r == 0 || *r > 200) {
						t.Errorf("slot %d holds %d, never a record", i, *r)
					}
				}
			}
		}()
	}
	for round := range 20 {
		for i := range recs {
			mu.Lock()
			tb.Add(recs[i], &recs[i])
			tb.Seat(recs[i])
			mu.Unlock()
		}
		for i := range recs {
			if (i+round)%3 != 0 {
				mu.Lock()
				tb.Take(recs[i])
				mu.Unlock()
			}
		}
		for i := range recs {
			mu.Lock()
			tb.Take(recs[i])
			mu.Unlock()
		}
	}
	close(done)
	wg.Wait()
}
