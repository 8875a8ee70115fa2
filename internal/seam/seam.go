// Package seam is what turnstile's packages reach of each other beyond
// their public API: the engine's one-off reads and writes on its session,
// which the recipes use, and what the engine's deterministic simulator
// puts in place of the world inside a package it does not own (an
// election's goroutines, its context callbacks and its one-off reads).
//
// The simulator (engine/sim*_test.go) runs every goroutine as a coroutine
// it resumes one step at a time and answers every read itself, so that a
// run follows from its seed. A program never sets a seam: it is internal
// so that no user can, and so that the public API says nothing of it.
package seam

import (
	"context"
	"sync"
)

// ElectionRuntime is what an election does off the engine's loop: the
// goroutine that reads an observed leader's value, the end of an observer
// with its context, and the one-off reads of Leader and of observers. A
// nil field is the default: a goroutine, context.AfterFunc, the engine's
// Children and Data.
type ElectionRuntime struct {
	Go        func(f func())
	AfterFunc func(ctx context.Context, f func()) (stop func() bool)
	Children  func(ctx context.Context, path string) ([]string, error)
	Data      func(ctx context.Context, path string) ([]byte, error)
}

// electionRuntimes maps an engine (its *engine.Engine, as any: this
// package sits below engine) to the runtime its elections use.
var electionRuntimes sync.Map

// SetElectionRuntime makes the elections made on eng from now on use rt,
// until ForgetElectionRuntime(eng).
func SetElectionRuntime(eng any, rt ElectionRuntime) { electionRuntimes.Store(eng, rt) }

// ForgetElectionRuntime puts eng's elections back on the defaults.
func ForgetElectionRuntime(eng any) { electionRuntimes.Delete(eng) }

// ElectionRuntimeOf is the runtime set for eng, or the zero one (every
// field the default).
func ElectionRuntimeOf(eng any) ElectionRuntime {
	rt, _ := electionRuntimes.Load(eng)
	r, _ := rt.(ElectionRuntime)
	return r
}

// The engine's one-off reads and writes on its session, for the recipes
// (lock.Participants and lock.Revoke, an election's Leader and observers)
// and the tools: a lock library's users hold locks, and read or write
// other nodes with a client of their own, so these are no public API. The
// engine sets them when its package is initialised; eng is an
// *engine.Engine, and path is under its Config.Root.
var (
	Children func(eng any, ctx context.Context, path string) ([]string, error)
	Data     func(eng any, ctx context.Context, path string) ([]byte, error)
	SetData  func(eng any, ctx context.Context, path string, data []byte) error
	// FailsOnExpiry reports the engine's Config.FailOnExpiry: whether
	// acquisitions not yet granted fail when the session expires, rather
	// than queue again. A recipe made of several acquisitions (a
	// semaphore's guard, then its lease) reads it to do the same as a
	// whole.
	FailsOnExpiry func(eng any) bool
)
