package main

import (
	"fmt"
	"hash/fnv"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/turnstile-go/turnstile/internal/interop"
)

// wordWitness is the witness's shared-memory mode, for two processes that
// are both this binary (the twoproc workload: the harness and its plain
// turnstile program). The file protocol costs a create and a remove in
// tmpfs per hold, tens of µs of CPU that bounded twoproc's measured rate;
// here a hold costs two compare-and-swaps on a word both processes map.
//
// The file is a table of shmSlots 64-bit words, one per lock path (hashed
// by path: two paths in one slot would read as one lock, so only the
// one-path twoproc workload uses it). A holder enters with CAS 0 → its
// id (pid<<16 | worker, never 0) and leaves with CAS id → 0; either CAS
// failing is a violation, reported with the id found in the word.
//
// Lost leases, as the file protocol's excused: a holder of this process
// that was told it lost its lease is on its way out, so the next local
// holder that finds its id in the word takes the word over (CAS its id →
// the new one) instead of counting a violation, and the lost holder's
// leave, finding the word no longer its own, is not counted either. A
// word held by the other process is always a violation: that process's
// leases are not known here.
type wordWitness struct {
	file  string
	mem   []byte
	words *[shmSlots]atomic.Uint64
	pid   int
	// local is the holding of this process whose id is in each slot's word,
	// to tell a lost holder's word (taken over) from a live one.
	local [shmSlots]atomic.Pointer[holding]
}

// shmSlots is the table's size: one page of words.
const shmSlots = 512

// openShmWitness maps file, made if missing, with every process that
// opens it. Every opener grows it to the table's size: zeros, which is
// every word free.
func openShmWitness(file string) (*wordWitness, error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("shm witness: %w", err)
	}
	defer f.Close() // the mapping outlives the descriptor
	const size = shmSlots * 8
	if st, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("shm witness: %w", err)
	} else if st.Size() < size {
		if err := f.Truncate(size); err != nil {
			return nil, fmt.Errorf("shm witness: %w", err)
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm witness: mmap %s: %w", file, err)
	}
	// The mapping is page-aligned, so every word is 8-byte aligned as
	// atomic.Uint64 needs.
	return &wordWitness{file: file, mem: mem, words: (*[shmSlots]atomic.Uint64)(unsafe.Pointer(&mem[0])), pid: os.Getpid()}, nil
}

// close unmaps the table; nothing may use w after.
func (w *wordWitness) close() error {
	w.words = nil
	return syscall.Munmap(w.mem)
}

// slot is path's word.
func (w *wordWitness) slot(path string) int {
	h := fnv.New32a()
	h.Write([]byte(path))
	return int(h.Sum32() % shmSlots)
}

// holderID is the word's value while pid's worker holds: never 0 (no
// process has pid 0), workers numbered below 1<<16.
func holderID(pid, worker int) uint64 { return uint64(pid)<<16 | uint64(worker)&0xffff }

// holderName decodes a word as "pid.worker", or "nobody" for 0.
func holderName(id uint64) string {
	if id == 0 {
		return "nobody"
	}
	return fmt.Sprintf("%d.%d", id>>16, id&0xffff)
}

func shmViolation(format string, a ...any) error {
	return fmt.Errorf("shm witness: %w: %s", interop.ErrViolation, fmt.Sprintf(format, a...))
}

// take enters id into slot: CAS 0 → id; a word held is a violation.
func (w *wordWitness) take(slot int, id uint64) error {
	if w.words[slot].CompareAndSwap(0, id) {
		return nil
	}
	return shmViolation("slot %d: %s entered while %s holds", slot, holderName(id), holderName(w.words[slot].Load()))
}

// give leaves slot: CAS id → 0; a word that is not id's any more is a
// violation.
func (w *wordWitness) give(slot int, id uint64) error {
	if w.words[slot].CompareAndSwap(id, 0) {
		return nil
	}
	return shmViolation("slot %d: %s left while the word says %s", slot, holderName(id), holderName(w.words[slot].Load()))
}

// enter is the harness's holder's entry (mutex holds only), taking over
// the word of a local holder that lost its lease.
func (w *wordWitness) enter(h *holding, _ int) error {
	if h.kind != kMutex {
		return fmt.Errorf("shm witness: %s holds are checked by the file protocol only", h.kind)
	}
	slot, id := w.slot(h.path), holderID(w.pid, h.worker)
	err := w.take(slot, id)
	if err != nil {
		old := w.words[slot].Load()
		if prev := w.local[slot].Load(); prev != nil && prev.wid == old && closedChan(prev.lost) &&
			w.words[slot].CompareAndSwap(old, id) {
			err = nil // a lost holder's word, taken over
		}
	}
	if err != nil {
		return err // not entered: its leave leaves nothing, as a failed create's
	}
	h.wslot, h.wid = slot, id
	w.local[slot].Store(h)
	return nil
}

// leave is the harness's holder's exit; a lost holder whose word was
// taken over is not counted.
func (w *wordWitness) leave(h *holding) error {
	if h.wid == 0 {
		return nil
	}
	w.local[h.wslot].CompareAndSwap(h, nil)
	err := w.give(h.wslot, h.wid)
	if err != nil && closedChan(h.lost) {
		return nil
	}
	return err
}
