"""The stress harness's kazoo driver: kazoo's Lock on the keys workload and
in open-loop runs, which internal/interop's peer does not run.

It speaks internal/interop's bench protocol (BENCH-START, BENCH-END, BENCH,
LAT, then RESULT), and adds one line for open-loop runs:

    OPEN unfinished=<n>    acquisitions scheduled in the window and not
                           granted when the driver gave up on them

Lock paths: --keys: worker w's cycle n on <path>-<w>/<n> (the parents
exist); --paths N: worker w on <path>/<w mod N>; else every worker on <path>.

Closed loop (--rate 0): each worker times acquire from its call. Open loop:
acquisition i is meant to start at start + i/rate; the next free worker
takes the next i, waits for its time if it is early, and its latency counts
from that time, however late the worker came to it.
"""

import argparse
import math
import os
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock

DRAIN_S = 5.0  # how long workers go on after the window for its backlog


def bucket(us):
    scale = 1
    while us // scale >= 1000:
        scale *= 10
    return us // scale * scale


class Run(object):
    def __init__(self, o):
        self.o = o
        self.mu = threading.Lock()
        self.start = time.monotonic_ns()
        if o.epoch_unix_ns:
            # An interleaved run: the schedule starts at the epoch every
            # impl's process shares, on the wall clock.
            self.start += o.epoch_unix_ns - time.time_ns()
        # (from, length, tickets) in ns after the start: the only spans in
        # which tickets fall when set, each at the rate from its start.
        self.slices = []
        for span in filter(None, o.slices.split(",")):
            f, n = (int(x) for x in span.split(":"))
            self.slices.append((f, n, int(math.ceil(n * o.rate / 1e9))))
        self.win_from = None  # ns; set when the window opens
        self.win_to = None
        self.stop = False  # no further acquisition starts
        self.next_ticket = 0
        self.completed = 0  # inside the window
        self.errors = 0
        self.lat = {}
        self.inflight = {}  # open loop: intended time -> acquisitions under way
        self.closed = False  # the result is being written: record nothing more

    def intended(self, i):
        """Ticket i's intended time, or None past the last slice's."""
        if not self.slices:
            return self.start + int(i * 1e9 / self.o.rate)
        for f, _, k in self.slices:
            if i < k:
                return self.start + f + int(i * 1e9 / self.o.rate)
            i -= k
        return None

    def take(self):
        """The next open-loop ticket's intended time, or None when done."""
        with self.mu:
            if self.stop:
                return None
            at = self.intended(self.next_ticket)
            if at is None:
                return None
            if self.win_to is not None and at >= self.win_to:
                return None  # the schedule ended with the window
            self.next_ticket += 1
            return at

    def begin(self, at):
        with self.mu:
            self.inflight[at] = self.inflight.get(at, 0) + 1

    def end(self, at):
        with self.mu:
            self.inflight[at] -= 1
            if not self.inflight[at]:
                del self.inflight[at]

    def record(self, started, granted):
        with self.mu:
            if self.closed:
                return
            if self.win_from is not None and (self.win_to is None or granted < self.win_to) and granted >= self.win_from:
                self.completed += 1
            counts = self.win_from is not None and started >= self.win_from
            if self.o.rate <= 0:
                counts = self.win_from is not None and self.win_to is None
            if counts:
                b = bucket((granted - started) // 1000)
                self.lat[b] = self.lat.get(b, 0) + 1


def lock_path(o, w, n):
    if o.keys:
        return "%s-%d/%d" % (o.path, w, n)
    if o.paths:
        return "%s/%d" % (o.path, w % o.paths)
    return o.path


def worker(run, client, w):
    o = run.o
    ident = "kazoo_driver pid=%d worker=%d" % (os.getpid(), w)
    fixed = None if o.keys else Lock(client, lock_path(o, w, 0), ident)
    n = 0
    while True:
        if o.rate > 0:
            at = run.take()
            if at is None:
                return
            wait = (at - time.monotonic_ns()) / 1e9
            if wait > 0:
                time.sleep(wait)
        else:
            if run.stop:
                return
            at = time.monotonic_ns()
        lk = fixed or Lock(client, lock_path(o, w, n), ident)
        n += 1
        run.begin(at)
        try:
            lk.acquire()
            granted = time.monotonic_ns()
            lk.release()
        except Exception as exc:  # noqa: BLE001 - counted and reported
            with run.mu:
                run.errors += 1
            sys.stderr.write("ERROR worker=%d: %r\n" % (w, exc))
            time.sleep(0.005)
            continue
        finally:
            run.end(at)
        run.record(at, granted)


def main(argv):
    p = argparse.ArgumentParser(prog="kazoo_driver.py")
    p.add_argument("--connect", required=True)
    p.add_argument("--path", required=True)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--keys", action="store_true")
    p.add_argument("--paths", type=int, default=0)
    p.add_argument("--duration-ms", type=int, required=True)
    p.add_argument("--warmup-ms", type=int, default=0)
    p.add_argument("--rate", type=float, default=0)
    p.add_argument("--session-ms", type=int, default=15000)
    p.add_argument("--timeout-s", type=float, default=120)
    p.add_argument("--epoch-unix-ns", type=int, default=0)
    p.add_argument("--slices", default="")
    o = p.parse_args(argv)

    watchdog = threading.Timer(o.timeout_s, lambda: (sys.stderr.write("TIMEOUT\n"), sys.stderr.flush(), os._exit(3)))
    watchdog.daemon = True
    watchdog.start()

    client = KazooClient(hosts=o.connect, timeout=o.session_ms / 1000.0)
    client.start(timeout=15)
    run = Run(o)
    threads = [threading.Thread(target=worker, args=(run, client, w), daemon=True) for w in range(o.workers)]
    for t in threads:
        t.start()
    if o.epoch_unix_ns:
        # The window opens and closes at fixed times after the epoch.
        win_from = run.start + o.warmup_ms * 1000000
        time.sleep(max(0.0, (win_from - time.monotonic_ns()) / 1e9))
    else:
        time.sleep(o.warmup_ms / 1000.0)
        win_from = time.monotonic_ns()
    with run.mu:
        run.win_from = win_from
    sys.stdout.write("BENCH-START\n")
    sys.stdout.flush()
    if o.epoch_unix_ns:
        win_to = win_from + o.duration_ms * 1000000
        time.sleep(max(0.0, (win_to - time.monotonic_ns()) / 1e9))
    else:
        time.sleep(o.duration_ms / 1000.0)
        win_to = time.monotonic_ns()
    with run.mu:
        run.win_to = win_to
        if o.rate <= 0:
            run.stop = True
    sys.stdout.write("BENCH-END\n")
    sys.stdout.flush()
    give_up = time.monotonic() + (DRAIN_S if o.rate > 0 else o.timeout_s)
    for t in threads:
        t.join(max(0.0, give_up - time.monotonic()))
    unfinished = 0
    with run.mu:
        run.stop = True
        run.closed = True
        if o.rate > 0:
            # Scheduled in the window and not granted, under way or never
            # started: their wait so far.
            now = time.monotonic_ns()
            for at, k in run.inflight.items():
                if at >= run.win_from:
                    unfinished += k
                    b = bucket((now - at) // 1000)
                    run.lat[b] = run.lat.get(b, 0) + k
            while True:
                at = run.intended(run.next_ticket)
                if at is None or at >= run.win_to:
                    break
                run.next_ticket += 1
                if at >= run.win_from:
                    unfinished += 1
                    b = bucket((now - at) // 1000)
                    run.lat[b] = run.lat.get(b, 0) + 1
        lat = dict(run.lat)
        completed, errors = run.completed, run.errors
    window = run.win_to - run.win_from
    sys.stdout.write("BENCH cycles=%d errors=%d window_ns=%d\n" % (completed, errors, window))
    sys.stdout.write("LAT" + "".join(" %d:%d" % (b, lat[b]) for b in sorted(lat)) + "\n")
    if o.rate > 0:
        sys.stdout.write("OPEN unfinished=%d\n" % unfinished)
    sys.stdout.write("RESULT acquisitions=%d violations=0\n" % completed)
    sys.stdout.flush()
    try:
        client.stop()
        client.close()
    except Exception:  # noqa: BLE001 - the result is out
        pass
    os._exit(1 if errors else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
