// Package statusjson is the JSON that package status serves and that the
// command-line tool's process command reads: one definition for both ends.
package statusjson

import "time"

// Snapshot is the JSON a View serves: one process's engine, its session,
// the nodes it holds and the acquisitions it has queued.
type Snapshot struct {
	Session       *Session `json:"session,omitempty"`
	Held          []Held   `json:"held"`
	Queued        []Queued `json:"queued"`
	CohortWaiting int64    `json:"cohort_waiting"`
	InFlight      int      `json:"in_flight"`
}

// Session is the engine's session and its counts since Start.
type Session struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	Disconnects uint64 `json:"disconnects"`
	Reconnects  uint64 `json:"reconnects"`
	Untrusted   uint64 `json:"untrusted"`
	Expirations uint64 `json:"expirations"`
}

// Held is a node the engine holds.
type Held struct {
	ID          uint64    `json:"id"`
	Path        string    `json:"path"`
	Node        string    `json:"node"`
	Token       int64     `json:"token"`
	Since       time.Time `json:"since"`
	HeldSeconds float64   `json:"held_seconds"`
	Suspended   bool      `json:"suspended,omitempty"`
	Revoked     bool      `json:"revoked,omitempty"`
}

// Queued is an acquisition queued on ZooKeeper, not yet granted.
type Queued struct {
	ID            uint64    `json:"id"`
	Path          string    `json:"path"`
	Since         time.Time `json:"since"`
	WaitedSeconds float64   `json:"waited_seconds"`
}
