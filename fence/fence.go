package fence

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/turnstile-go/turnstile/engine"
)

var (
	// ErrStale: a write with a greater token of the lock was admitted
	// before this one. The error is a *StaleError, which names that token.
	ErrStale = errors.New("fence: stale token")
	// ErrWrongLock: the token is of another lock path than the one the
	// resource is bound to.
	ErrWrongLock = errors.New("fence: token of another lock")
)

// StaleError is a refused write: its token is below one admitted before.
type StaleError struct {
	Path     string // the lock path the resource is bound to
	Token    int64  // the refused write's token
	Admitted int64  // the greatest token admitted so far, the one that won
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: token %d of lock %s is stale: token %d was admitted", e.Token, e.Path, e.Admitted)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Token is what a holder presents with a write: the lock path it holds
// and the fencing token of its grant.
type Token struct {
	Path  string // the lock path, as the lease names it (Lease.Path)
	Value int64  // Lease.Token
}

// TokenOf is the token of a lease. Its path is relative to the engine's
// Config.Root, as Lease.Path is: engines with different roots name
// different locks by the same path, so bind a resource to the path that
// its writers' engines use.
func TokenOf(l *engine.Lease) Token { return Token{Path: l.Path(), Value: l.Token()} }

// Store keeps, per lock path, the greatest token admitted, and runs
// writes under it. Admit runs write only if token is not below the
// greatest token admitted for path, and then records token as admitted
// (if it is greater) in the same atomic step as write's effects: both
// happen or neither does. It returns a *StaleError when it refuses, and
// write's error (having recorded nothing) when write fails.
//
// Two writes with the same token are both admitted: a holder may write
// any number of times under one grant.
type Store interface {
	Admit(ctx context.Context, path string, token int64, write func(ctx context.Context) error) error
}

// Verifier guards one resource with one lock: every write must present a
// token of that lock path, not below any admitted before.
type Verifier struct {
	path  string
	store Store
}

// NewVerifier binds a resource, kept in store, to the lock path.
func NewVerifier(path string, store Store) (*Verifier, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: fence: empty lock path", engine.ErrInvalidRequest)
	}
	if store == nil {
		return nil, fmt.Errorf("%w: fence: nil Store", engine.ErrInvalidRequest)
	}
	return &Verifier{path: path, store: store}, nil
}

// Path is the lock path the verifier is bound to.
func (v *Verifier) Path() string { return v.path }

// Do runs write as the write of tok's holder: only if tok is of the
// verifier's lock path (else an error wrapping ErrWrongLock) and not
// stale (else a *StaleError, errors.Is ErrStale), atomically with the
// record of tok, by the Store's Admit. write must touch only the store's
// data, through what the Store hands it in ctx (sqlfence.Tx): what it does
// elsewhere is not fenced.
func (v *Verifier) Do(ctx context.Context, tok Token, write func(ctx context.Context) error) error {
	if err := v.Valid(tok); err != nil {
		return err
	}
	if write == nil {
		return fmt.Errorf("%w: fence: nil write", engine.ErrInvalidRequest)
	}
	if ctx == nil {
		return fmt.Errorf("%w: fence: nil context.Context", engine.ErrInvalidRequest)
	}
	return v.store.Admit(ctx, v.path, tok.Value, write)
}

// Valid checks what Do checks before it asks the store: a positive token
// of the verifier's lock path.
func (v *Verifier) Valid(tok Token) error {
	if tok.Value <= 0 {
		return fmt.Errorf("%w: fence: token %d is not a grant's (tokens are positive)", engine.ErrInvalidRequest, tok.Value)
	}
	if tok.Path != v.path {
		return fmt.Errorf("%w: a token of %q presented to the resource of %q", ErrWrongLock, tok.Path, v.path)
	}
	return nil
}

// Memory is a Store in the memory of one process, for data that process
// owns (a service's state, a file it alone writes): each path's writes
// run one at a time, under that path's mutex, so that a write and its
// token's record are one step. It forgets everything when the process
// ends: data that outlives the process needs its fence to outlive it too,
// in the same store.
type Memory struct {
	mu    sync.Mutex
	paths map[string]*memPath
}

type memPath struct {
	mu   chan struct{} // a mutex that a waiting Admit can leave when ctx ends
	high int64
}

// Admit implements Store.
func (m *Memory) Admit(ctx context.Context, path string, token int64, write func(ctx context.Context) error) error {
	p := m.path(path)
	select {
	case p.mu <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-p.mu }()
	if token < p.high {
		return &StaleError{Path: path, Token: token, Admitted: p.high}
	}
	if err := write(ctx); err != nil {
		return err
	}
	p.high = token
	return nil
}

// Admitted is the greatest token admitted for path, 0 if none. It waits
// for a write of path in progress.
func (m *Memory) Admitted(ctx context.Context, path string) (int64, error) {
	p := m.path(path)
	select {
	case p.mu <- struct{}{}:
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
	defer func() { <-p.mu }()
	return p.high, nil
}

func (m *Memory) path(path string) *memPath {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.paths == nil {
		m.paths = map[string]*memPath{}
	}
	p := m.paths[path]
	if p == nil {
		p = &memPath{mu: make(chan struct{}, 1)}
		m.paths[path] = p
	}
	return p
}
