package engine_test

import (
	"bytes"
	"flag"
	"log/slog"
)

var simLog = flag.Bool("sim.log", false, "put every engine's debug log in the trace (with -sim.trace to see it all)")

// engineLog is the logger of c's engine: with -sim.log, its debug log
// (each step of each contender, with its input and effects) as trace
// lines, among the moves that caused them; otherwise none. The loop's
// decisions are what a failing seed's trace most often lacks.
func (w *world) engineLog(c *client) *slog.Logger {
	if !*simLog {
		return nil
	}
	dropTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{} // the trace has the simulated time
		}
		return a
	}
	return slog.New(slog.NewTextHandler(traceWriter{w, c}, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: dropTime}))
}

// traceWriter writes log records as trace lines of one client.
type traceWriter struct {
	w *world
	c *client
}

func (t traceWriter) Write(b []byte) (int, error) {
	t.w.tracef("%s log: %s", t.c.name, bytes.TrimSpace(b))
	return len(b), nil
}
