package main

import "context"

// noneImpl takes no lock and talks to no server: every acquisition is
// granted at once. It is hidden from -help; it exists to prove that the
// checkers see overlaps when there are some (a run with it under a
// contended workload must report violations and exit non-zero).
type noneImpl struct{}

func (noneImpl) Name() string         { return "none" }
func (noneImpl) Excludes() bool       { return true } // it claims to, falsely: that is the point
func (noneImpl) Backend() backendKind { return noBackend }

func (noneImpl) Supports(workload string, faults faultSet) error {
	switch workload {
	case "waiters":
		return unsupported("none", "-workload waiters", "nothing ever waits without a lock")
	case "twoproc":
		return unsupported("none", "-workload twoproc", "its second process is a turnstile program")
	}
	if faults.has("pause") {
		return unsupported("none", "-faults pause", "it has no server, so no lease to outlive")
	}
	return nil
}

func (noneImpl) Open(context.Context, openOptions) (client, error) { return noneClient{}, nil }

type noneClient struct{}

func (noneClient) Mutex(string) (locker, error)          { return noneLocker{}, nil }
func (noneClient) RWMutex(string) (rwLocker, error)      { return noneRW{}, nil }
func (noneClient) Semaphore(string, int) (locker, error) { return noneLocker{}, nil }
func (noneClient) Requests() int64                       { return 0 }
func (noneClient) Close() error                          { return nil }

type noneLocker struct{}

func (noneLocker) Acquire(ctx context.Context) (held, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return noneHeld{}, nil
}

type noneRW struct{}

func (noneRW) Reader() locker { return noneLocker{} }
func (noneRW) Writer() locker { return noneLocker{} }

type noneHeld struct{}

func (noneHeld) Token() (int64, bool)          { return 0, false }
func (noneHeld) Lost() <-chan struct{}         { return nil }
func (noneHeld) Release(context.Context) error { return nil }
