package main

import (
	"context"
	"testing"
	"time"
)

// TestDueBy: ticket 0 is due at once, ticket i once i/rate has passed,
// never more than the total.
func TestDueBy(t *testing.T) {
	for _, c := range []struct {
		elapsed time.Duration
		rate    float64
		total   int64
		want    int64
	}{
		{-time.Millisecond, 100, 0, 0},
		{0, 100, 0, 1},
		{9 * time.Millisecond, 100, 0, 1},
		{10 * time.Millisecond, 100, 0, 2},
		{time.Second, 100, 0, 101},
		{time.Second, 100, 50, 50},
		{time.Second - time.Nanosecond, 3, 0, 3},
		{time.Second, 3, 0, 4},
		{2500 * time.Millisecond, 0.5, 0, 2},
		{time.Second, 1e6, 0, 1e6 + 1},
	} {
		if got := dueBy(c.elapsed, c.rate, c.total); got != c.want {
			t.Errorf("dueBy(%v, %v, %d) = %d, want %d", c.elapsed, c.rate, c.total, got, c.want)
		}
	}
	// Every ticket's own offset makes it due, and the one before it is not
	// yet the last due.
	for _, rate := range []float64{3, 7, 1000, 33333} {
		for i := int64(0); i < 200; i++ {
			if got := dueBy(offsetOf(i, rate), rate, 0); got != i+1 {
				t.Fatalf("rate %v: at ticket %d's offset %v, %d due, want %d", rate, i, offsetOf(i, rate), got, i+1)
			}
		}
	}
}

// TestScheduleTickets: workers take released tickets oldest first, each
// with its own intended time however late it is taken; nothing is taken
// before its release; finish ends the takers once the backlog is out.
func TestScheduleTickets(t *testing.T) {
	s := newSchedule(10, 0)
	s.start = time.Unix(1000, 0)
	if _, ok := s.take(); ok {
		t.Fatal("a ticket before any release")
	}
	s.release(3)
	s.release(2) // a late timer never takes tickets back
	if s.backlog() != 3 {
		t.Fatalf("backlog %d, want 3", s.backlog())
	}
	for i := range int64(3) {
		at, ok := s.take()
		if !ok || !at.Equal(s.start.Add(time.Duration(i)*100*time.Millisecond)) {
			t.Fatalf("ticket %d: %v %v, want %v", i, at, ok, s.start.Add(time.Duration(i)*100*time.Millisecond))
		}
	}
	if _, ok := s.take(); ok {
		t.Fatal("a fourth ticket from three released")
	}
	s.release(5)
	s.finish()
	s.release(9) // after finish: nothing more
	ctx := context.Background()
	for i := 3; i < 5; i++ {
		if _, ok := s.next(ctx); !ok {
			t.Fatalf("ticket %d released before finish not handed out", i)
		}
	}
	if _, ok := s.next(ctx); ok {
		t.Fatal("a ticket after finish and an empty backlog")
	}
}

// TestScheduleWakes: a worker waiting in next is woken by a release, and
// by the end of its context.
func TestScheduleWakes(t *testing.T) {
	s := newSchedule(1, 0)
	s.start = time.Unix(0, 0)
	got := make(chan bool)
	go func() {
		_, ok := s.next(context.Background())
		got <- ok
	}()
	s.release(1)
	if !<-got {
		t.Fatal("the waiting worker got no ticket")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, ok := s.next(ctx)
		got <- ok
	}()
	cancel()
	if <-got {
		t.Fatal("a ticket for a cancelled worker with none released")
	}
}

// TestScheduleRunTotal: run releases exactly total tickets and finishes.
func TestScheduleRunTotal(t *testing.T) {
	s := newSchedule(1e6, 25)
	s.start = time.Now().Add(-time.Hour) // every ticket is long due
	s.run(context.Background())
	n := 0
	for {
		if _, ok := s.next(context.Background()); !ok {
			break
		}
		n++
	}
	if n != 25 {
		t.Fatalf("%d tickets, want 25", n)
	}
}

// TestScheduleRunFinish: run, asleep until a ticket far ahead, returns
// once the schedule is finished.
func TestScheduleRunFinish(t *testing.T) {
	s := newSchedule(1.0/3600, 0) // one ticket an hour
	s.start = time.Now()
	done := make(chan struct{})
	go func() { defer close(done); s.run(context.Background()) }()
	if _, ok := s.next(context.Background()); !ok { // ticket 0, due at once
		t.Fatal("no first ticket")
	}
	s.finish()
	<-done
}

// TestScheduleOneTokenPerTicket: a release rings one token per new ticket,
// not one per waiting worker, never blocks when wake is full, and every
// ticket of a burst past wake's room is still handed out.
func TestScheduleOneTokenPerTicket(t *testing.T) {
	s := newSchedule(10, 0)
	s.start = time.Unix(1000, 0)
	s.release(3)
	if len(s.wake) != 3 {
		t.Fatalf("%d tokens after 3 tickets, want 3", len(s.wake))
	}
	s.release(3)
	if len(s.wake) != 3 {
		t.Fatalf("%d tokens after releasing nothing new, want 3", len(s.wake))
	}
	total := int64(wakeRoom + 100)
	s.release(total) // must not block on a full wake
	if len(s.wake) != wakeRoom {
		t.Fatalf("%d tokens, want wake's room %d", len(s.wake), wakeRoom)
	}
	got := make(chan int, 4)
	for range 4 {
		go func() {
			n := 0
			for {
				if _, ok := s.next(context.Background()); !ok {
					got <- n
					return
				}
				n++
			}
		}()
	}
	s.finish()
	n := 0
	for range 4 {
		n += <-got
	}
	if int64(n) != total {
		t.Fatalf("%d tickets handed out, want %d", n, total)
	}
}
