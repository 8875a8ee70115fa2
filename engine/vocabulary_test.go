package engine

import (
	"log/slog"
	"testing"

	"github.com/turnstile-go/turnstile/engine/internal/core"
)

// The core's log levels and states are the runtime's: its records are
// logged at slog.Level(Level), and its states are the engine's, by name.
func TestCoreVocabularyIsTheRuntimes(t *testing.T) {
	levels := []struct {
		core core.Level
		slog slog.Level
	}{{core.LevelDebug, slog.LevelDebug}, {core.LevelInfo, slog.LevelInfo}, {core.LevelWarn, slog.LevelWarn}, {core.LevelError, slog.LevelError}}
	for _, l := range levels {
		if slog.Level(l.core) != l.slog {
			t.Errorf("core level %d logs as %v, want %v", l.core, slog.Level(l.core), l.slog)
		}
	}
	states := []struct {
		core core.State
		want State
	}{{core.StateConnected, StateConnected}, {core.StateSuspended, StateSuspended}, {core.StateExpired, StateExpired}, {core.StateClosed, StateClosed}, {core.StateLapsed, StateLapsed}}
	for _, s := range states {
		if got := stateOf(s.core); got != s.want || s.core.String() != s.want.String() {
			t.Errorf("core state %v is the engine's %v, want %v", s.core, got, s.want)
		}
	}
}

// The MaxHold the engine documents for a zero CohortConfig is the one the
// core takes.
func TestDefaultCohortHoldIsTheCores(t *testing.T) {
	if DefaultCohortHold != core.DefaultCohortHold {
		t.Fatalf("DefaultCohortHold is %v, the core takes %v", DefaultCohortHold, core.DefaultCohortHold)
	}
}
