// Peer is a lock contender built on Apache Curator's recipes, for turnstile's
// interop tests: it runs Curator contenders on a lock path that turnstile and
// kazoo contenders may share, and checks mutual exclusion with a witness file
// (the protocol is described in internal/interop/witness.go).
//
// Compiled by interop.BuildCurator (javac against Debian's Curator jars); run
// with --help for the flags. Output on stdout:
//
//	HELD <znode>      (--hold-revocable, once the lock is held)
//	REVOKED           (--hold-revocable, once revocation was asked for)
//	LEADER <znode>    (--recipe latch, at the start of each term)
//	BENCH-START, BENCH-END, BENCH ..., LAT ...   (--bench, see internal/interop/bench.go)
//	RESULT acquisitions=<n> violations=<v>
//
// With --recipe latch each worker is a LeaderLatch candidate with the
// participant id curator-<pid>-<worker>: it leads, holds the witness file
// like a mutex holder, and resigns (closes its latch) each iteration; a
// leader told it no longer leads (notLeader) leaves the witness at once.
//
// Exit status: 0 all well, 1 a witness violation, 2 a usage or lock error,
// 3 the overall timeout passed.
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class Peer {
    static final int EXIT_OK = 0, EXIT_VIOLATION = 1, EXIT_ERROR = 2, EXIT_TIMEOUT = 3;

    static final PrintStream out = System.out;
    static final PrintStream err = System.err;

    // ---- options ----------------------------------------------------------

    static final class Options {
        String connect;
        String path;
        String recipe = "mutex";
        int leases = 1;
        double writeRatio = 0.5;
        int iterations = 10;
        long holdMs = 0;
        String witness;
        int workers = 1;
        long seed = 1;
        long timeoutS = 120;
        int sessionMs = 15000;
        boolean holdRevocable;
        String revoke;
        long durationMs;  // 0: --iterations alone bounds the run
        long warmupMs;
        int paths;        // 0: every worker on --path; n: worker w on --path/<w mod n>
        boolean bench;
    }

    static void usage(String problem) {
        if (problem != null) {
            err.println("peer: " + problem);
        }
        err.println("usage: Peer --connect host:port[,..] --path /lock/path"
                + " [--recipe mutex|semaphore-mutex|rw|read|write|semaphore|latch] [--leases N]"
                + " [--write-ratio F] [--iterations K] [--hold-ms H] [--witness FILE]"
                + " [--workers W] [--seed S] [--timeout-s T] [--session-ms MS]"
                + " [--duration-ms D] [--paths N] [--bench [--warmup-ms W]]\n"
                + "       Peer --connect .. --path .. --hold-revocable [--witness FILE]\n"
                + "       Peer --connect .. --revoke /lock/path/node");
        System.exit(EXIT_ERROR);
    }

    static Options parse(String[] args) {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String v = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                v = a.substring(eq + 1);
                a = a.substring(0, eq);
            }
            if (a.equals("--help") || a.equals("-h")) {
                usage(null);
            }
            if (a.equals("--hold-revocable")) {
                o.holdRevocable = true;
                continue;
            }
            if (a.equals("--bench")) {
                o.bench = true;
                continue;
            }
            if (v == null) {
                if (i + 1 >= args.length) {
                    usage("flag " + a + " needs a value");
                }
                v = args[++i];
            }
            try {
                switch (a) {
                    case "--connect": o.connect = v; break;
                    case "--path": o.path = v; break;
                    case "--recipe": o.recipe = v; break;
                    case "--leases": o.leases = Integer.parseInt(v); break;
                    case "--write-ratio": o.writeRatio = Double.parseDouble(v); break;
                    case "--iterations": o.iterations = Integer.parseInt(v); break;
                    case "--hold-ms": o.holdMs = Long.parseLong(v); break;
                    case "--witness": o.witness = v; break;
                    case "--workers": o.workers = Integer.parseInt(v); break;
                    case "--seed": o.seed = Long.parseLong(v); break;
                    case "--timeout-s": o.timeoutS = Long.parseLong(v); break;
                    case "--session-ms": o.sessionMs = Integer.parseInt(v); break;
                    case "--revoke": o.revoke = v; break;
                    case "--duration-ms": o.durationMs = Long.parseLong(v); break;
                    case "--warmup-ms": o.warmupMs = Long.parseLong(v); break;
                    case "--paths": o.paths = Integer.parseInt(v); break;
                    default: usage("unknown flag " + a);
                }
            } catch (NumberFormatException e) {
                usage("bad value for " + a + ": " + v);
            }
        }
        if (o.connect == null || o.connect.isEmpty()) {
            usage("--connect is required");
        }
        if (o.revoke == null && (o.path == null || !o.path.startsWith("/"))) {
            usage("--path must be an absolute znode path");
        }
        if (o.leases < 1 || o.workers < 1 || o.iterations < 0 || o.holdMs < 0 || o.timeoutS < 1) {
            usage("--leases and --workers must be >= 1, --iterations and --hold-ms >= 0, --timeout-s >= 1");
        }
        if (o.writeRatio < 0 || o.writeRatio > 1) {
            usage("--write-ratio must be within [0,1]");
        }
        if (o.durationMs < 0 || o.warmupMs < 0 || o.paths < 0) {
            usage("--duration-ms, --warmup-ms and --paths must be >= 0");
        }
        switch (o.recipe) {
            case "mutex": case "semaphore-mutex": case "rw": case "read": case "write": case "semaphore": case "latch":
                break;
            default:
                usage("unknown recipe " + o.recipe);
        }
        return o;
    }

    // ---- witness ----------------------------------------------------------

    /**
     * The shared witness protocol. Each enter method returns null when the
     * check passed, or a description of the violation. The caller owns the
     * files an enter method created (even when it reported a violation) and
     * removes them with the matching exit method.
     */
    static final class Witness {
        final Path file;
        final Path dir;
        final String base;
        final long pid = ProcessHandle.current().pid();

        Witness(String path) {
            file = Paths.get(path).toAbsolutePath();
            dir = file.getParent();
            base = file.getFileName().toString();
        }

        Path own(String kind, int worker) {
            return dir.resolve(base + "." + kind + "." + pid + "." + worker);
        }

        /** Creates PATH exclusively; false when it already existed. */
        boolean createExclusive(Path p) throws IOException {
            try {
                Files.createFile(p); // CREATE_NEW: O_CREAT|O_EXCL
                return true;
            } catch (FileAlreadyExistsException e) {
                return false;
            }
        }

        int count(String kind) throws IOException {
            int n = 0;
            String prefix = base + "." + kind + ".";
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
                for (Path p : ds) {
                    if (p.getFileName().toString().startsWith(prefix)) {
                        n++;
                    }
                }
            }
            return n;
        }

        /** Removes a file this holder created; a missing file is a violation. */
        String remove(Path p) throws IOException {
            try {
                Files.delete(p);
                return null;
            } catch (NoSuchFileException e) {
                return "witness " + p + " vanished while held";
            }
        }

        /** Mutex or writer entry; created tells whether PATH is ours to remove. */
        String enterExclusive(boolean[] created, boolean checkReaders) throws IOException {
            created[0] = createExclusive(file);
            if (!created[0]) {
                return "witness " + file + " already exists (another holder)";
            }
            if (checkReaders) {
                int readers = count("r");
                if (readers > 0) {
                    return "writer holds while " + readers + " reader witness file(s) exist";
                }
            }
            return null;
        }

        String enterRead(int worker, boolean[] created) throws IOException {
            Path mine = own("r", worker);
            created[0] = createExclusive(mine);
            if (!created[0]) {
                return "reader witness " + mine + " already exists";
            }
            if (Files.exists(file)) {
                return "reader holds while writer witness " + file + " exists";
            }
            return null;
        }

        String enterSemaphore(int worker, int leases, boolean[] created) throws IOException {
            Path mine = own("s", worker);
            created[0] = createExclusive(mine);
            if (!created[0]) {
                return "semaphore witness " + mine + " already exists";
            }
            int holders = count("s");
            if (holders > leases) {
                return holders + " semaphore holders for " + leases + " lease(s)";
            }
            return null;
        }
    }

    // ---- the contenders ---------------------------------------------------

    static final AtomicInteger acquisitions = new AtomicInteger();
    static final AtomicInteger violations = new AtomicInteger();
    static final AtomicInteger errors = new AtomicInteger();

    static void violation(int worker, String what) {
        violations.incrementAndGet();
        err.println("VIOLATION worker=" + worker + ": " + what);
    }

    // ---- bench mode -------------------------------------------------------

    /**
     * The measurement window of --bench (the protocol is in internal/interop/bench.go).
     * Workers run from the start; the window opens after --warmup-ms, so that
     * the JIT has compiled the loop as in a long-running client, and closes
     * --duration-ms later or when every worker is done. Only cycles completed
     * inside it count, with their acquire latencies. Times are
     * System.nanoTime, CLOCK_MONOTONIC on Linux: the clock the harness and
     * the other peers read.
     */
    static volatile boolean windowOpen;
    /** Set when the run ends: workers start no further cycle. */
    static volatile boolean stopping;

    /** µs rounded down to 3 significant digits: the precision of the LAT line. */
    static long latencyBucket(long micros) {
        long scale = 1;
        while (micros / scale >= 1000) {
            scale *= 10;
        }
        return micros / scale * scale;
    }

    /** One worker's locks: a recipe instance of its own, as a separate contender. */
    static final class Worker implements Runnable {
        final int id;
        final Options o;
        final CuratorFramework client;
        final Witness witness;
        final long deadlineNanos;
        final Random random;

        InterProcessLock mutex;           // mutex, semaphore-mutex
        InterProcessReadWriteLock rw;     // rw, read, write
        InterProcessSemaphoreV2 semaphore;
        /** --bench: acquire latency bucket (µs) → cycles, inside the window. */
        final Map<Long, long[]> latencies = new TreeMap<>();

        Worker(int id, Options o, CuratorFramework client, Witness witness, long deadlineNanos) {
            this.id = id;
            this.o = o;
            this.client = client;
            this.deadlineNanos = deadlineNanos;
            this.random = new Random(o.seed * 1_000_003L + id);
            String path = o.path;
            if (o.paths > 0) {
                path = o.path + "/" + (id % o.paths);
                if (witness != null) {
                    witness = new Witness(witness.file + "-" + (id % o.paths));
                }
            }
            this.witness = witness;
            switch (o.recipe) {
                case "latch": break; // a LeaderLatch per term: a closed one cannot start again
                case "mutex": mutex = new InterProcessMutex(client, path); break;
                case "semaphore-mutex": mutex = new InterProcessSemaphoreMutex(client, path); break;
                case "semaphore": semaphore = new InterProcessSemaphoreV2(client, path, o.leases); break;
                default: rw = new InterProcessReadWriteLock(client, path); break;
            }
        }

        long remainingMs() {
            return Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
        }

        @Override
        public void run() {
            try {
                for (int i = 0; i < o.iterations && !stopping; i++) {
                    long acquireNanos = once();
                    if (windowOpen) {
                        latencies.computeIfAbsent(latencyBucket(acquireNanos / 1000), k -> new long[1])[0]++;
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                errors.incrementAndGet();
                err.println("ERROR worker=" + id + ": " + e);
            }
        }

        /** One cycle; returns how long the acquire took, in ns. */
        long once() throws Exception {
            boolean write;
            switch (o.recipe) {
                case "read": write = false; break;
                case "write": write = true; break;
                case "rw": write = random.nextDouble() < o.writeRatio; break;
                default: write = true;
            }
            boolean[] created = {false};
            long t0 = System.nanoTime();
            if (o.recipe.equals("latch")) {
                lead(created);
                return System.nanoTime() - t0;
            }
            if (semaphore != null) {
                Lease lease = semaphore.acquire(remainingMs(), TimeUnit.MILLISECONDS);
                long acquired = System.nanoTime() - t0;
                if (lease == null) {
                    throw new Exception("semaphore acquire timed out");
                }
                try {
                    acquisitions.incrementAndGet();
                    Path mine = witness == null ? null : witness.own("s", id);
                    if (witness != null) {
                        check(witness.enterSemaphore(id, o.leases, created));
                    }
                    hold();
                    if (created[0]) {
                        check(witness.remove(mine));
                    }
                } finally {
                    semaphore.returnLease(lease);
                }
                return acquired;
            }
            InterProcessLock l = mutex;
            if (l == null) {
                l = write ? rw.writeLock() : rw.readLock();
            }
            if (!l.acquire(remainingMs(), TimeUnit.MILLISECONDS)) {
                throw new Exception((write ? "write" : "read") + " acquire timed out");
            }
            long acquired = System.nanoTime() - t0;
            try {
                acquisitions.incrementAndGet();
                Path mine = null;
                if (witness != null) {
                    if (write) {
                        mine = witness.file;
                        check(witness.enterExclusive(created, rw != null));
                    } else {
                        mine = witness.own("r", id);
                        check(witness.enterRead(id, created));
                    }
                }
                hold();
                if (created[0]) {
                    check(witness.remove(mine));
                }
            } finally {
                l.release();
            }
            return acquired;
        }

        /** One term: campaign, lead until the hold ends or leadership is lost, resign. */
        void lead(boolean[] created) throws Exception {
            LeaderLatch latch = new LeaderLatch(client, o.path, "curator-" + ProcessHandle.current().pid() + "-" + id);
            CountDownLatch notLeader = new CountDownLatch(1);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                }

                @Override
                public void notLeader() {
                    notLeader.countDown();
                }
            });
            latch.start();
            try {
                if (!latch.await(remainingMs(), TimeUnit.MILLISECONDS)) {
                    throw new Exception("latch await timed out");
                }
                acquisitions.incrementAndGet();
                out.println("LEADER " + latch.getOurPath());
                out.flush();
                if (witness != null) {
                    check(witness.enterExclusive(created, false));
                }
                // Hold for the term, but stop at once when told it is over.
                if (notLeader.await(o.holdMs, TimeUnit.MILLISECONDS)) {
                    err.println("worker=" + id + ": leadership lost before the term ended");
                }
                if (created[0]) {
                    check(witness.remove(witness.file));
                }
            } finally {
                latch.close();
            }
        }

        void check(String v) {
            if (v != null) {
                violation(id, v);
            }
        }

        void hold() throws InterruptedException {
            if (o.holdMs > 0) {
                Thread.sleep(o.holdMs);
            }
        }
    }

    /** An InterProcessMutex that tells which znode it holds. */
    static final class NamedMutex extends InterProcessMutex {
        NamedMutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String node() {
            return getLockPath();
        }
    }

    static void result() {
        out.println("RESULT acquisitions=" + acquisitions.get() + " violations=" + violations.get());
        out.flush();
    }

    /** Ends the JVM at once: Curator's threads and shutdown hooks cannot hold it. */
    static void finish(int code) {
        out.flush();
        err.flush();
        Runtime.getRuntime().halt(code);
    }

    static int exitCode() {
        if (violations.get() > 0) {
            return EXIT_VIOLATION;
        }
        return errors.get() > 0 ? EXIT_ERROR : EXIT_OK;
    }

    public static void main(String[] args) {
        Options o = parse(args);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(o.timeoutS);

        // The overall bound: whatever hangs (connection, a lock never
        // granted, a revocation never asked for), the process ends.
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(TimeUnit.SECONDS.toMillis(o.timeoutS));
            } catch (InterruptedException e) {
                return;
            }
            err.println("TIMEOUT after " + o.timeoutS + "s");
            result();
            finish(EXIT_TIMEOUT);
        }, "peer-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();

        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(o.connect)
                .sessionTimeoutMs(o.sessionMs)
                .connectionTimeoutMs((int) Math.min(15000, TimeUnit.SECONDS.toMillis(o.timeoutS)))
                .retryPolicy(new ExponentialBackoffRetry(50, 10, 1000))
                .build();
        client.start();
        try {
            if (!client.blockUntilConnected((int) o.timeoutS, TimeUnit.SECONDS)) {
                err.println("ERROR: cannot connect to " + o.connect);
                finish(EXIT_TIMEOUT);
            }
            if (o.revoke != null) {
                Revoker.attemptRevoke(client, o.revoke);
                client.close();
                finish(EXIT_OK);
            }
            Witness witness = o.witness == null || o.witness.isEmpty() ? null : new Witness(o.witness);
            if (o.holdRevocable) {
                holdRevocable(o, client, witness, deadline);
            } else {
                runWorkers(o, client, witness, deadline);
            }
        } catch (Exception e) {
            errors.incrementAndGet();
            err.println("ERROR: " + e);
        }
        client.close();
        result();
        finish(exitCode());
    }

    static void runWorkers(Options o, CuratorFramework client, Witness witness, long deadline) throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        List<Worker> workers = new ArrayList<>();
        for (int w = 0; w < o.workers; w++) {
            Worker wk = new Worker(w, o, client, witness, deadline);
            Thread t = new Thread(wk, "peer-worker-" + w);
            t.start();
            threads.add(t);
            workers.add(wk);
        }
        if (o.bench) {
            joinFor(threads, TimeUnit.MILLISECONDS.toNanos(o.warmupMs));
            long start = System.nanoTime();
            windowOpen = true;
            out.println("BENCH-START");
            out.flush();
            joinFor(threads, o.durationMs > 0 ? TimeUnit.MILLISECONDS.toNanos(o.durationMs) : Long.MAX_VALUE);
            windowOpen = false;
            long window = System.nanoTime() - start;
            stopping = true;
            out.println("BENCH-END");
            out.flush();
            for (Thread t : threads) {
                t.join();
            }
            benchResult(window, workers);
            return;
        }
        if (o.durationMs > 0) {
            joinFor(threads, TimeUnit.MILLISECONDS.toNanos(o.durationMs));
            stopping = true;
        }
        for (Thread t : threads) {
            t.join();
        }
    }

    /** Waits up to nanos (Long.MAX_VALUE: for ever) for every thread to end. */
    static void joinFor(List<Thread> threads, long nanos) throws InterruptedException {
        long end = System.nanoTime() + nanos;
        for (Thread t : threads) {
            while (t.isAlive()) {
                if (nanos == Long.MAX_VALUE) {
                    t.join();
                    continue;
                }
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return; // the time is up
                }
                t.join(left / 1_000_000, (int) (left % 1_000_000)); // rounds up to whole ms
            }
        }
    }

    /** The cycles of the window are those whose latency was recorded. */
    static void benchResult(long windowNanos, List<Worker> workers) {
        TreeMap<Long, Long> merged = new TreeMap<>();
        long cycles = 0;
        for (Worker w : workers) {
            for (Map.Entry<Long, long[]> e : w.latencies.entrySet()) {
                merged.merge(e.getKey(), e.getValue()[0], Long::sum);
                cycles += e.getValue()[0];
            }
        }
        out.println("BENCH cycles=" + cycles + " errors=" + errors.get() + " window_ns=" + windowNanos);
        StringBuilder b = new StringBuilder("LAT");
        for (Map.Entry<Long, Long> e : merged.entrySet()) {
            b.append(' ').append(e.getKey()).append(':').append(e.getValue());
        }
        out.println(b);
        out.flush();
    }

    static void holdRevocable(Options o, CuratorFramework client, Witness witness, long deadline) throws Exception {
        NamedMutex m = new NamedMutex(client, o.path);
        CountDownLatch revoked = new CountDownLatch(1);
        m.makeRevocable(ignored -> revoked.countDown());
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (!m.acquire(Math.max(1, left), TimeUnit.MILLISECONDS)) {
            throw new Exception("acquire timed out");
        }
        acquisitions.incrementAndGet();
        boolean[] created = {false};
        if (witness != null) {
            String v = witness.enterExclusive(created, false);
            if (v != null) {
                violation(0, v);
            }
        }
        out.println("HELD " + m.node());
        out.flush();
        revoked.await(); // the watchdog bounds this wait
        out.println("REVOKED");
        out.flush();
        if (created[0]) {
            String v = witness.remove(witness.file);
            if (v != null) {
                violation(0, v);
            }
        }
        m.release();
    }
}
