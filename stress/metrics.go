package main

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	// HdrHistogram: latency percentiles with bounded error and constant
	// memory however many samples a run records (p99 and max of tens of
	// thousands of acquisitions), instead of sorting every sample.
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// latencies records acquisition latencies in microseconds, 1 µs to 10 min,
// 3 significant digits.
type latencies struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func newLatencies() *latencies {
	return &latencies{h: hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)}
}

func (l *latencies) record(d time.Duration) {
	us := max(d.Microseconds(), 1)
	l.mu.Lock()
	_ = l.h.RecordValue(us) // values past the top are clamped by RecordValue's error: ignored
	l.mu.Unlock()
}

// reset forgets what was recorded: the measured window starts.
func (l *latencies) reset() {
	l.mu.Lock()
	l.h.Reset()
	l.mu.Unlock()
}

// recordCount records count acquisitions of us microseconds each (a
// peer's latency bucket).
func (l *latencies) recordCount(us, count int64) {
	l.mu.Lock()
	_ = l.h.RecordValues(max(us, 1), count)
	l.mu.Unlock()
}

// ms returns the quantile q (0..100) in milliseconds, and the max.
func (l *latencies) ms(q float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.h.TotalCount() == 0 {
		return 0
	}
	return float64(l.h.ValueAtQuantile(q)) / 1000
}

func (l *latencies) maxMs() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.h.TotalCount() == 0 {
		return 0
	}
	return float64(l.h.Max()) / 1000
}

// goroutineSampler keeps the peak of runtime.NumGoroutine, sampled every
// 20 ms, while it runs.
type goroutineSampler struct {
	peak atomic.Int64
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func startSampler() *goroutineSampler {
	s := &goroutineSampler{stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *goroutineSampler) sample() int {
	n := runtime.NumGoroutine()
	for {
		p := s.peak.Load()
		if int64(n) <= p || s.peak.CompareAndSwap(p, int64(n)) {
			return n
		}
	}
}

// Stop ends the sampling (it may be called more than once) and returns the
// peak.
func (s *goroutineSampler) Stop() int {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	s.sample()
	return int(s.peak.Load())
}

// memSnapshot is the process's memory after a full GC.
type memSnapshot struct {
	HeapInuse  uint64
	StackInuse uint64
	RSS        uint64
	Goroutines int
}

func takeMem() memSnapshot {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSnapshot{HeapInuse: ms.HeapInuse, StackInuse: ms.StackInuse, RSS: rssBytes(), Goroutines: runtime.NumGoroutine()}
}

// freeMemory returns what earlier runs left to the OS, so one run's RSS is
// not another's.
func freeMemory() { debug.FreeOSMemory() }

// rssBytes is VmRSS from /proc/self/status (0 where there is none).
func rssBytes() uint64 { return rssFrom("/proc/self/status") }

// rssFrom reads VmRSS from a /proc/<pid>/status file (0 where there is none).
func rssFrom(status string) uint64 {
	f, err := os.Open(status)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) >= 1 {
				kb, err := strconv.ParseUint(fields[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}
