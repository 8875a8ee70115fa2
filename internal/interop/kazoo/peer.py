"""A lock contender built on kazoo's lock recipes, for turnstile's interop tests.

Runs kazoo contenders on a lock path that turnstile (and, for the recipes that
can, Curator) contenders may share, and checks mutual exclusion with the
witness-file protocol described in internal/interop/witness.go.

Run with /usr/bin/python3 (Debian's python3-kazoo, kazoo 2.8); --help for the
flags. Output on stdout:

    HELD <znode>      (--hold-revocable, once the lock is held)
    REVOKED           (--hold-revocable, once revocation was asked for)
    BENCH-START, BENCH-END, BENCH ..., LAT ...   (--bench, see internal/interop/bench.go)
    RESULT acquisitions=<n> violations=<v>

Exit status: 0 all well, 1 a witness violation, 2 a usage or lock error,
3 the overall timeout passed.

Node names kazoo 2.8 writes (observed on a server during runs):
  Lock, WriteLock  <32 hex uuid>__lock__<10-digit seq>   ephemeral sequential
  ReadLock         <32 hex uuid>__rlock__<10-digit seq>  ephemeral sequential
                   (kazoo < 2.9 deadlocks mixed readers and writers; the peer
                   then uses EarlierOnlyReadLock, see there)
  Semaphore        PATH/<32 hex uuid> (plain ephemeral, one per lease) with
                   max_leases as PATH's data, serialized by a kazoo Lock on the
                   SIBLING node PATH + "-__lock__".
A kazoo lock treats a child as a contender when its name ends in one of its
patterns followed by a 10-digit sequence; extra_lock_patterns adds patterns.

Revocation follows Curator's convention, so turnstile and Curator can revoke a
kazoo holder: the holder watches its own node's data and gives the lock up
when the data becomes b"__REVOKE__"; --revoke writes that data.
"""

import argparse
import os
import random
import re
import sys
import threading
import time

try:
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError
    from kazoo.recipe.lock import Lock, ReadLock, Semaphore, WriteLock
    from kazoo.retry import ForceRetryError
    from kazoo.version import __version__ as KAZOO_VERSION
except ImportError as exc:  # pragma: no cover - depends on the machine
    sys.stderr.write(
        "ERROR: kazoo is not importable by %s (%s); install it with: "
        "apt-get install -y python3-kazoo\n" % (sys.executable, exc)
    )
    sys.stderr.flush()
    os._exit(2)

EXIT_OK, EXIT_VIOLATION, EXIT_ERROR, EXIT_TIMEOUT = 0, 1, 2, 3
REVOKE_DATA = b"__REVOKE__"

# Patterns a kazoo contender adds to its own so that it also sees the lock
# nodes Curator and turnstile write (_c_<uuid>-lock-N, -__WRIT__N, -__READ__N).
DEFAULT_PATTERNS = {
    "mutex": ["lock-"],
    "write": ["__WRIT__", "__READ__"],
    "read": ["__WRIT__"],
}


_SEQUENCE = re.compile(r"(-?\d{10})$")


class EarlierOnlyReadLock(ReadLock):
    """kazoo's ReadLock, waiting only for a writer queued BEFORE it.

    kazoo 2.8's ReadLock does not find its own node among the contenders it
    matches (its name is __rlock__, which its patterns exclude), so it takes
    the LAST writer on the path as its predecessor, even a writer queued after
    it; that writer in turn waits for the reader: deadlock (python-zk/kazoo
    issue #649, fixed in kazoo 2.9.0). This class keeps kazoo's protocol and
    node names and only restricts the choice to writers with a lower sequence
    number, which is what the ZooKeeper shared-lock recipe prescribes.
    """

    def _get_predecessor(self, node):
        children = self.client.get_children(self.path)
        if node not in children:
            raise ForceRetryError()  # our node is gone (session loss): retry
        mine = int(_SEQUENCE.search(node).group(1))
        best_seq, best = None, None
        for child in children:
            m = self._contenders_re.search(child)
            if m is None or child == node:
                continue
            seq = int(m.group(1))
            if seq < mine and (best_seq is None or seq > best_seq):
                best_seq, best = seq, child
        return best


def _version_tuple(v):
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


# The read lock the peer uses: kazoo's own from 2.9 on, the fixed one before.
PeerReadLock = ReadLock if _version_tuple(KAZOO_VERSION) >= (2, 9) else EarlierOnlyReadLock


def parse_args(argv):
    p = argparse.ArgumentParser(prog="peer.py", description=__doc__.split("\n")[0])
    p.add_argument("--connect", required=True)
    p.add_argument("--path")
    p.add_argument(
        "--recipe",
        default="mutex",
        choices=["mutex", "read", "write", "rw", "semaphore"],
    )
    p.add_argument("--leases", type=int, default=1)
    p.add_argument("--write-ratio", type=float, default=0.5)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--hold-ms", type=float, default=0)
    p.add_argument("--witness")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout-s", type=float, default=120)
    p.add_argument("--session-ms", type=int, default=15000)
    p.add_argument(
        "--extra-patterns",
        help="comma-separated extra_lock_patterns; default per recipe "
        "(mutex: lock-; write: __WRIT__,__READ__; read: __WRIT__); "
        "'none' for kazoo's own names only",
    )
    p.add_argument("--hold-revocable", action="store_true")
    p.add_argument("--duration-ms", type=int, default=0,
                   help="stop starting cycles after this long (0: --iterations alone bounds the run)")
    p.add_argument("--paths", type=int, default=0,
                   help="0: every worker locks --path; N: worker w locks --path/<w mod N>")
    p.add_argument("--bench", action="store_true",
                   help="measure a window and print the BENCH lines (internal/interop/bench.go)")
    p.add_argument("--warmup-ms", type=int, default=0)
    p.add_argument("--revoke", metavar="NODEPATH")
    o = p.parse_args(argv)
    if o.revoke is None and (not o.path or not o.path.startswith("/")):
        p.error("--path must be an absolute znode path")
    if o.leases < 1 or o.workers < 1 or o.iterations < 0 or o.hold_ms < 0:
        p.error("--leases and --workers must be >= 1, --iterations and --hold-ms >= 0")
    if not 0 <= o.write_ratio <= 1:
        p.error("--write-ratio must be within [0,1]")
    if o.timeout_s <= 0:
        p.error("--timeout-s must be > 0")
    if o.duration_ms < 0 or o.warmup_ms < 0 or o.paths < 0:
        p.error("--duration-ms, --warmup-ms and --paths must be >= 0")
    return o


def patterns_for(o, kind):
    """extra_lock_patterns for a contender of kind mutex/read/write."""
    if o.extra_patterns is None:
        return list(DEFAULT_PATTERNS[kind])
    if o.extra_patterns in ("", "none"):
        return []
    return [s for s in o.extra_patterns.split(",") if s]


class Witness(object):
    """The shared witness protocol; enter_* return None or a violation text.

    The caller owns every file an enter_* call created (created[0] is True),
    also when it reported a violation, and removes it with remove().
    """

    def __init__(self, path):
        self.file = os.path.abspath(path)
        self.dir = os.path.dirname(self.file)
        self.base = os.path.basename(self.file)
        self.pid = os.getpid()

    def own(self, kind, worker):
        return os.path.join(
            self.dir, "%s.%s.%d.%d" % (self.base, kind, self.pid, worker)
        )

    @staticmethod
    def _create_exclusive(path):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        os.close(fd)
        return True

    def _count(self, kind):
        prefix = "%s.%s." % (self.base, kind)
        return sum(1 for n in os.listdir(self.dir) if n.startswith(prefix))

    def enter_exclusive(self, created, check_readers):
        created[0] = self._create_exclusive(self.file)
        if not created[0]:
            return "witness %s already exists (another holder)" % self.file
        if check_readers:
            readers = self._count("r")
            if readers:
                return "writer holds while %d reader witness file(s) exist" % readers
        return None

    def enter_read(self, worker, created):
        mine = self.own("r", worker)
        created[0] = self._create_exclusive(mine)
        if not created[0]:
            return "reader witness %s already exists" % mine
        if os.path.exists(self.file):
            return "reader holds while writer witness %s exists" % self.file
        return None

    def enter_semaphore(self, worker, leases, created):
        mine = self.own("s", worker)
        created[0] = self._create_exclusive(mine)
        if not created[0]:
            return "semaphore witness %s already exists" % mine
        holders = self._count("s")
        if holders > leases:
            return "%d semaphore holders for %d lease(s)" % (holders, leases)
        return None

    @staticmethod
    def remove(path):
        try:
            os.remove(path)
        except FileNotFoundError:
            return "witness %s vanished while held" % path
        return None


class Tally(object):
    def __init__(self):
        self.mu = threading.Lock()
        self.acquisitions = 0
        self.violations = 0
        self.errors = 0

    def add(self, field):
        with self.mu:
            setattr(self, field, getattr(self, field) + 1)

    def violation(self, worker, what):
        self.add("violations")
        sys.stderr.write("VIOLATION worker=%d: %s\n" % (worker, what))
        sys.stderr.flush()

    def result_line(self):
        with self.mu:
            return "RESULT acquisitions=%d violations=%d" % (
                self.acquisitions,
                self.violations,
            )

    def exit_code(self):
        with self.mu:
            if self.violations:
                return EXIT_VIOLATION
            return EXIT_ERROR if self.errors else EXIT_OK


class Window(object):
    """The measurement window of --bench (the protocol is in internal/interop/bench.go).

    Workers run from the start; the window opens after --warmup-ms and closes
    --duration-ms later or when every worker is done. Only cycles completed
    inside it count, with their acquire latencies. Times are
    time.monotonic_ns, CLOCK_MONOTONIC on Linux: the clock the harness and the
    other peers read.
    """

    def __init__(self):
        self.open = False
        self.stopping = False  # workers start no further cycle


def latency_bucket(micros):
    """micros rounded down to 3 significant digits: the LAT line's precision."""
    scale = 1
    while micros // scale >= 1000:
        scale *= 10
    return micros // scale * scale


def finish(tally, code):
    sys.stdout.write(tally.result_line() + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # kazoo's threads must not keep the process alive


def worker_loop(o, client, witness, tally, wid, deadline, window, latencies):
    rng = random.Random(o.seed * 1000003 + wid)
    ident = "peer.py pid=%d worker=%d" % (os.getpid(), wid)
    path = o.path
    if o.paths:
        path = "%s/%d" % (o.path, wid % o.paths)
        if witness:
            witness = Witness("%s-%d" % (witness.file, wid % o.paths))
    if o.recipe == "semaphore":
        sem = Semaphore(client, path, identifier=ident, max_leases=o.leases)
    elif o.recipe == "mutex":
        mutex = Lock(client, path, ident, extra_lock_patterns=patterns_for(o, "mutex"))
    else:
        wlock = WriteLock(client, path, ident, extra_lock_patterns=patterns_for(o, "write"))
        rlock = PeerReadLock(client, path, ident, extra_lock_patterns=patterns_for(o, "read"))

    def check(v):
        if v is not None:
            tally.violation(wid, v)

    def counted(acquire_ns):
        if window.open:
            b = latency_bucket(acquire_ns // 1000)
            latencies[b] = latencies.get(b, 0) + 1

    for _ in range(o.iterations):
        if window.stopping:
            break
        left = max(0.001, deadline - time.monotonic())
        created = [False]
        t0 = time.monotonic_ns()
        if o.recipe == "semaphore":
            if not sem.acquire(timeout=left):
                raise RuntimeError("semaphore acquire timed out")
            acquired = time.monotonic_ns() - t0
            try:
                tally.add("acquisitions")
                if witness:
                    mine = witness.own("s", wid)
                    check(witness.enter_semaphore(wid, o.leases, created))
                hold(o)
                if created[0]:
                    check(witness.remove(mine))
            finally:
                sem.release()
            counted(acquired)
            continue

        if o.recipe == "mutex":
            lk, write = mutex, True
        else:
            if o.recipe == "rw":
                write = rng.random() < o.write_ratio
            else:
                write = o.recipe == "write"
            lk = wlock if write else rlock
        if not lk.acquire(timeout=left):
            raise RuntimeError("%s acquire timed out" % ("write" if write else "read"))
        acquired = time.monotonic_ns() - t0
        try:
            tally.add("acquisitions")
            if witness:
                if write:
                    mine = witness.file
                    check(witness.enter_exclusive(created, o.recipe != "mutex"))
                else:
                    mine = witness.own("r", wid)
                    check(witness.enter_read(wid, created))
            hold(o)
            if created[0]:
                check(witness.remove(mine))
        finally:
            lk.release()
        counted(acquired)


def hold(o):
    if o.hold_ms > 0:
        time.sleep(o.hold_ms / 1000.0)


def run_worker(o, client, witness, tally, wid, deadline, window, latencies):
    try:
        worker_loop(o, client, witness, tally, wid, deadline, window, latencies)
    except Exception as exc:  # noqa: BLE001 - reported, counted, and the exit code says so
        tally.add("errors")
        sys.stderr.write("ERROR worker=%d: %r\n" % (wid, exc))
        sys.stderr.flush()


def hold_revocable(o, client, witness, tally, deadline):
    lk = Lock(client, o.path, "peer.py pid=%d revocable" % os.getpid(),
              extra_lock_patterns=patterns_for(o, "mutex"))
    if not lk.acquire(timeout=max(0.001, deadline - time.monotonic())):
        raise RuntimeError("acquire timed out")
    tally.add("acquisitions")
    node = o.path.rstrip("/") + "/" + lk.node
    revoked = threading.Event()

    def watch(event):
        # Re-arm while the data is anything but the revocation request.
        if event is not None and event.type == "DELETED":
            return
        try:
            data, _ = client.get(node, watch=watch)
        except NoNodeError:
            return
        if data == REVOKE_DATA:
            revoked.set()

    watch(None)
    created = [False]
    if witness:
        v = witness.enter_exclusive(created, False)
        if v is not None:
            tally.violation(0, v)
    sys.stdout.write("HELD %s\n" % node)
    sys.stdout.flush()
    if not revoked.wait(max(0.001, deadline - time.monotonic())):
        raise TimeoutError("never revoked")
    sys.stdout.write("REVOKED\n")
    sys.stdout.flush()
    if created[0]:
        v = witness.remove(witness.file)
        if v is not None:
            tally.violation(0, v)
    lk.release()


def join_for(threads, seconds):
    """Waits up to seconds (None: for ever) for every thread to end."""
    end = None if seconds is None else time.monotonic() + seconds
    for t in threads:
        while t.is_alive():
            if end is None:
                t.join()
                continue
            left = end - time.monotonic()
            if left <= 0:
                return  # the time is up
            t.join(left)


def run_workers(o, client, witness, tally, deadline):
    window = Window()
    latencies = [dict() for _ in range(o.workers)]
    threads = [
        threading.Thread(
            target=run_worker,
            args=(o, client, witness, tally, w, deadline, window, latencies[w]),
            name="peer-worker-%d" % w,
            daemon=True,
        )
        for w in range(o.workers)
    ]
    for t in threads:
        t.start()
    duration = o.duration_ms / 1000.0 if o.duration_ms else None
    if not o.bench:
        join_for(threads, duration)
        window.stopping = True
        join_for(threads, None)
        return
    join_for(threads, o.warmup_ms / 1000.0)
    start = time.monotonic_ns()
    window.open = True
    sys.stdout.write("BENCH-START\n")
    sys.stdout.flush()
    join_for(threads, duration)
    window.open = False
    elapsed = time.monotonic_ns() - start
    window.stopping = True
    sys.stdout.write("BENCH-END\n")
    sys.stdout.flush()
    join_for(threads, None)
    merged = {}
    for lat in latencies:
        for b, n in lat.items():
            merged[b] = merged.get(b, 0) + n
    cycles = sum(merged.values())  # the window's cycles are those recorded
    with tally.mu:
        errors = tally.errors
    sys.stdout.write("BENCH cycles=%d errors=%d window_ns=%d\n" % (cycles, errors, elapsed))
    sys.stdout.write("LAT" + "".join(" %d:%d" % (b, merged[b]) for b in sorted(merged)) + "\n")
    sys.stdout.flush()


def main(argv):
    o = parse_args(argv)
    tally = Tally()
    deadline = time.monotonic() + o.timeout_s

    def on_timeout():
        sys.stderr.write("TIMEOUT after %gs\n" % o.timeout_s)
        finish(tally, EXIT_TIMEOUT)

    watchdog = threading.Timer(o.timeout_s, on_timeout)
    watchdog.daemon = True
    watchdog.start()

    client = KazooClient(hosts=o.connect, timeout=o.session_ms / 1000.0)
    try:
        client.start(timeout=max(0.001, min(15.0, deadline - time.monotonic())))
    except Exception as exc:  # noqa: BLE001
        sys.stderr.write("ERROR: cannot connect to %s: %r\n" % (o.connect, exc))
        finish(tally, EXIT_TIMEOUT)

    try:
        if o.revoke is not None:
            try:
                client.set(o.revoke, REVOKE_DATA)
            except NoNodeError:
                pass  # already released: nothing to revoke
            client.stop()
            client.close()
            sys.stdout.flush()
            os._exit(EXIT_OK)
        witness = Witness(o.witness) if o.witness else None
        if o.hold_revocable:
            hold_revocable(o, client, witness, tally, deadline)
        else:
            run_workers(o, client, witness, tally, deadline)
    except Exception as exc:  # noqa: BLE001
        tally.add("errors")
        sys.stderr.write("ERROR: %r\n" % (exc,))
    try:
        client.stop()
        client.close()
    except Exception:  # noqa: BLE001 - the result matters, not a clean close
        pass
    finish(tally, tally.exit_code())


if __name__ == "__main__":
    main(sys.argv[1:])
