// The stress harness's Curator driver: Curator's InterProcessMutex on the
// keys workload and in open-loop runs, which internal/interop's peer does
// not run. Run in Java's source-file mode on the Curator classpath.
//
// It speaks internal/interop's bench protocol (BENCH-START, BENCH-END,
// BENCH, LAT, then RESULT), and adds for open-loop runs
//
//     OPEN unfinished=<n>    acquisitions scheduled in the window and not
//                            granted when the driver gave up on them
//
// Lock paths: --keys: worker w's cycle n on <path>-<w>/<n> (the parents
// exist); --paths N: worker w on <path>/<w mod N>; else <path>.
//
// --each N: no bench protocol; one worker locks <path>-0/0 .. <path>-0/N-1
// (--keys), one after the other, and prints "EACH <n> <µs>" per acquire,
// then "RESULT acquisitions=N violations=0" (stress's
// BenchmarkLingerArrivalCurator, which prepares each key).
//
// Closed loop (--rate 0): each worker times acquire from its call. Open
// loop: acquisition i is meant to start at start + i/rate; the next free
// worker takes the next i, waits for its time if early, and its latency
// counts from that time, however late the worker came to it.

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorDriver {
    static final long DRAIN_NS = 5_000_000_000L; // the backlog's time after the window

    String connect, path;
    int workers = 1, paths, sessionMs = 15000;
    boolean keys;
    long durationMs, warmupMs;
    double rate;
    double timeoutS = 120;
    long each;
    // An interleaved run: the epoch every impl's process shares (wall
    // clock, ns), and the only spans in which tickets fall, from and
    // length in ns after it, with their tickets at the rate from each
    // span's start.
    long epochUnixNs;
    long[] sliceFrom = new long[0], sliceTickets = new long[0];

    final Object mu = new Object();
    long start; // the schedule's start: once connected, as the workers start
    Long winFrom, winTo;
    boolean stop, closed;
    long nextTicket, completed, errors;
    final TreeMap<Long, Long> lat = new TreeMap<>();
    final Map<Long, Integer> inflight = new HashMap<>();

    static void sleepUntil(long nanoTime) throws InterruptedException {
        for (long left; (left = nanoTime - System.nanoTime()) > 0; ) {
            Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
        }
    }

    static long bucket(long us) {
        long scale = 1;
        while (us / scale >= 1000) scale *= 10;
        return us / scale * scale;
    }

    /** Ticket i's intended time; past the last slice's, Long.MAX_VALUE. */
    long intended(long i) {
        if (sliceFrom.length == 0) return start + (long) (i * 1e9 / rate);
        for (int k = 0; k < sliceFrom.length; k++) {
            if (i < sliceTickets[k]) return start + sliceFrom[k] + (long) (i * 1e9 / rate);
            i -= sliceTickets[k];
        }
        return Long.MAX_VALUE;
    }

    /** The next open-loop ticket's intended time, or -1 when done. */
    long take() {
        synchronized (mu) {
            if (stop) return -1;
            long at = intended(nextTicket);
            if (at == Long.MAX_VALUE || (winTo != null && at >= winTo)) return -1;
            nextTicket++;
            inflight.merge(at, 1, Integer::sum);
            return at;
        }
    }

    void done(long at) {
        synchronized (mu) {
            inflight.computeIfPresent(at, (k, v) -> v > 1 ? v - 1 : null);
        }
    }

    void record(long started, long granted) {
        synchronized (mu) {
            if (closed || winFrom == null) return;
            if (granted >= winFrom && (winTo == null || granted < winTo)) completed++;
            boolean counts = rate > 0 ? started >= winFrom : winTo == null;
            if (counts) lat.merge(bucket((granted - started) / 1000), 1L, Long::sum);
        }
    }

    String lockPath(int w, long n) {
        if (keys) return path + "-" + w + "/" + n;
        if (paths > 0) return path + "/" + (w % paths);
        return path;
    }

    /** --each: one acquisition per key, in order, each timed alone. */
    void eachKey(CuratorFramework client) throws Exception {
        StringBuilder b = new StringBuilder();
        for (long n = 0; n < each; n++) {
            InterProcessMutex m = new InterProcessMutex(client, lockPath(0, n));
            long t0 = System.nanoTime();
            m.acquire();
            long us = (System.nanoTime() - t0) / 1000;
            m.release();
            b.setLength(0);
            b.append("EACH ").append(n).append(' ').append(us);
            System.out.println(b);
        }
        System.out.println("RESULT acquisitions=" + each + " violations=0");
        System.out.flush();
    }

    void worker(CuratorFramework client, int w) {
        InterProcessMutex fixed = keys ? null : new InterProcessMutex(client, lockPath(w, 0));
        long n = 0;
        while (true) {
            long at;
            if (rate > 0) {
                at = take();
                if (at < 0) return;
                long wait = at - System.nanoTime();
                if (wait > 0) {
                    try {
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            } else {
                synchronized (mu) {
                    if (stop) return;
                }
                at = System.nanoTime();
            }
            InterProcessMutex m = fixed != null ? fixed : new InterProcessMutex(client, lockPath(w, n));
            n++;
            try {
                m.acquire();
                long granted = System.nanoTime();
                m.release();
                record(at, granted);
            } catch (Exception e) {
                synchronized (mu) {
                    errors++;
                }
                System.err.println("ERROR worker=" + w + ": " + e);
                try {
                    Thread.sleep(5);
                } catch (InterruptedException ie) {
                    return;
                }
            } finally {
                if (rate > 0) done(at);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorDriver d = new CuratorDriver();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--keys")) {
                d.keys = true;
                continue;
            }
            String v = args[++i];
            switch (a) {
                case "--connect": d.connect = v; break;
                case "--path": d.path = v; break;
                case "--workers": d.workers = Integer.parseInt(v); break;
                case "--paths": d.paths = Integer.parseInt(v); break;
                case "--duration-ms": d.durationMs = Long.parseLong(v); break;
                case "--warmup-ms": d.warmupMs = Long.parseLong(v); break;
                case "--rate": d.rate = Double.parseDouble(v); break;
                case "--session-ms": d.sessionMs = Integer.parseInt(v); break;
                case "--timeout-s": d.timeoutS = Double.parseDouble(v); break;
                case "--each": d.each = Long.parseLong(v); break;
                case "--epoch-unix-ns": d.epochUnixNs = Long.parseLong(v); break;
                case "--slices": {
                    String[] spans = v.isEmpty() ? new String[0] : v.split(",");
                    d.sliceFrom = new long[spans.length];
                    d.sliceTickets = new long[spans.length];
                    for (int k = 0; k < spans.length; k++) {
                        String[] fl = spans[k].split(":");
                        d.sliceFrom[k] = Long.parseLong(fl[0]);
                        d.sliceTickets[k] = (long) Math.ceil(Long.parseLong(fl[1]) * d.rate / 1e9);
                    }
                    break;
                }
                default: throw new IllegalArgumentException("unknown flag " + a);
            }
        }
        final double timeout = d.timeoutS;
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep((long) (timeout * 1000));
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("TIMEOUT");
            Runtime.getRuntime().halt(3);
        });
        watchdog.setDaemon(true);
        watchdog.start();

        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(d.connect)
                .sessionTimeoutMs(d.sessionMs)
                .retryPolicy(new ExponentialBackoffRetry(50, 10, 1000))
                .build();
        client.start();
        client.blockUntilConnected();
        if (d.each > 0) {
            d.eachKey(client);
            client.close();
            Runtime.getRuntime().halt(0);
        }
        d.start = System.nanoTime();
        if (d.epochUnixNs != 0) {
            java.time.Instant now = java.time.Instant.now();
            d.start += d.epochUnixNs - (now.getEpochSecond() * 1_000_000_000L + now.getNano());
        }
        Thread[] threads = new Thread[d.workers];
        for (int w = 0; w < d.workers; w++) {
            final int id = w;
            threads[w] = new Thread(() -> d.worker(client, id), "driver-worker-" + w);
            threads[w].setDaemon(true);
            threads[w].start();
        }
        long winFrom;
        if (d.epochUnixNs != 0) {
            // The window opens and closes at fixed times after the epoch.
            winFrom = d.start + d.warmupMs * 1_000_000L;
            sleepUntil(winFrom);
        } else {
            Thread.sleep(d.warmupMs);
            winFrom = System.nanoTime();
        }
        synchronized (d.mu) {
            d.winFrom = winFrom;
        }
        System.out.println("BENCH-START");
        System.out.flush();
        long winTo;
        if (d.epochUnixNs != 0) {
            winTo = winFrom + d.durationMs * 1_000_000L;
            sleepUntil(winTo);
        } else {
            Thread.sleep(d.durationMs);
            winTo = System.nanoTime();
        }
        synchronized (d.mu) {
            d.winTo = winTo;
            if (d.rate <= 0) d.stop = true;
        }
        System.out.println("BENCH-END");
        System.out.flush();
        long giveUp = System.nanoTime() + (d.rate > 0 ? DRAIN_NS : (long) (d.timeoutS * 1e9));
        for (Thread t : threads) {
            long left = (giveUp - System.nanoTime()) / 1_000_000;
            if (left > 0) t.join(left);
        }
        long unfinished = 0, completed, errors;
        TreeMap<Long, Long> lat;
        synchronized (d.mu) {
            d.stop = true;
            d.closed = true;
            if (d.rate > 0) {
                // Scheduled in the window and not granted, under way or never
                // started: their wait so far.
                long now = System.nanoTime();
                for (Map.Entry<Long, Integer> e : d.inflight.entrySet()) {
                    if (e.getKey() >= d.winFrom) {
                        unfinished += e.getValue();
                        d.lat.merge(bucket((now - e.getKey()) / 1000), (long) e.getValue(), Long::sum);
                    }
                }
                for (long at = d.intended(d.nextTicket); at < d.winTo; at = d.intended(++d.nextTicket)) {
                    if (at >= d.winFrom) {
                        unfinished++;
                        d.lat.merge(bucket((now - at) / 1000), 1L, Long::sum);
                    }
                }
            }
            lat = new TreeMap<>(d.lat);
            completed = d.completed;
            errors = d.errors;
        }
        StringBuilder b = new StringBuilder();
        b.append("BENCH cycles=").append(completed).append(" errors=").append(errors)
                .append(" window_ns=").append(d.winTo - d.winFrom).append('\n').append("LAT");
        for (Map.Entry<Long, Long> e : lat.entrySet()) b.append(' ').append(e.getKey()).append(':').append(e.getValue());
        b.append('\n');
        if (d.rate > 0) b.append("OPEN unfinished=").append(unfinished).append('\n');
        b.append("RESULT acquisitions=").append(completed).append(" violations=0\n");
        System.out.print(b);
        System.out.flush();
        try {
            client.close();
        } catch (Exception e) {
            // the result is out
        }
        Runtime.getRuntime().halt(errors > 0 ? 1 : 0); // Curator's threads must not keep the process alive
    }
}
