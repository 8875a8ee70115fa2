package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// console owns stderr: log lines and the live progress line, which is
// shown only when stderr is a terminal or -progress is set.
type console struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	showing bool // a progress line is on screen (tty only)
}

func newConsole(w io.Writer) *console {
	c := &console{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			c.tty = true
		}
	}
	return c
}

func (c *console) clearLocked() {
	if c.showing {
		fmt.Fprint(c.w, "\r\033[K")
		c.showing = false
	}
}

// logf prints one line, above the progress line.
func (c *console) logf(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearLocked()
	fmt.Fprintf(c.w, "stress: "+format+"\n", a...)
}

// progress shows line: rewritten in place on a terminal, else one line each.
func (c *console) progress(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty {
		fmt.Fprint(c.w, "\r\033[K"+line)
		c.showing = true
		return
	}
	fmt.Fprintln(c.w, line)
}

func (c *console) endProgress() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearLocked()
}

// startProgress prints, every second until stop is called, the elapsed
// time, cycles, cycles/s and violations of the run.
func (c *console) startProgress(enabled bool, label string, r *runState) (stop func()) {
	if !enabled {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				el := time.Since(start)
				n := r.cycles.Load()
				var b strings.Builder
				fmt.Fprintf(&b, "%s %6.1fs  cycles %d  %.0f/s  violations %d  lost %d",
					label, el.Seconds(), n, float64(n)/el.Seconds(), r.check.violations(), r.lost.Load())
				if r.cfg.Duration > 0 && r.cfg.Workload != "waiters" {
					fmt.Fprintf(&b, "  [%3.0f%%]", min(100, 100*el.Seconds()/r.cfg.Duration.Seconds()))
				}
				c.progress(b.String())
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		c.endProgress()
	}
}
