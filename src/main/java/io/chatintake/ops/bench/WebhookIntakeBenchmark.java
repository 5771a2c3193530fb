package io.chatintake.ops.bench;

import io.chatintake.config.Secret;
import io.chatintake.sim.PlainHttpConnection;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import java.io.PrintStream;
import java.net.URI;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * {@code bench webhook [N]}: signed UnifyPort deliveries over HTTP to the runner's shipped
 * route (child process) against the single-row commit limit of the same database: one
 * {@code INSERT} + {@code COMMIT} per row from as many JDBC clients. At 16 clients ours must
 * reach 0.5x with p99 < 50 ms, at 1 client 0.3x. Every delivery must be answered 200.
 */
public final class WebhookIntakeBenchmark {
    private static final String SECRET = "bench-signing-secret-not-a-real-one";
    /** Deliveries of one warm-up round (and a tenth of it at 1 client), repeated until the runner's JIT has settled. */
    private static final int WARM_UP = 5_000;
    private static final int MAX_WARM_UP_ROUNDS = 12;
    /** How long the work left may stand still before the bench stops waiting for it. */
    private static final Duration SETTLE_PATIENCE = Duration.ofSeconds(3);

    private final PrintStream out;

    public WebhookIntakeBenchmark(PrintStream out) {
        this.out = out;
    }

    record Result(double rate, double p50Millis, double p99Millis, int operations, Duration wall, CpuUse cpu) {
        /** The rate this CPU per operation would allow with every core busy. */
        double rateWithAllCoresBusy() {
            return Runtime.getRuntime().availableProcessors() * 1e9 * operations / cpu.totalNanos();
        }
    }

    /** @return 0 when every target is met */
    public int run(int deliveries) throws Exception {
        try (BenchDatabase database = BenchDatabase.start("webhook", 17)) {
            database.execute("CREATE TABLE public.bench_delivery (id bigserial PRIMARY KEY, body jsonb NOT NULL)");
            Map<String, String> env = new HashMap<>(database.runnerEnv());
            env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
            try (BenchRunner runner = BenchRunner.start(database.dir().resolve("runner"), env)) {
                URI endpoint = URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport");
                // Not a contender: the same signed requests to the shipped /hello route, which stores
                // nothing, show what HTTP alone allows on this machine.
                URI hello = URI.create("http://127.0.0.1:" + runner.httpPort() + "/hello");
                AtomicLong ids = new AtomicLong();
                Supplier<CpuUse> cpu = () -> CpuUse.now(runner.handle(), database.server());
                commitLimit(database, 16, WARM_UP, cpu);
                BenchRunner.Warmed warmed = runner.warmUntilCompiled(MAX_WARM_UP_ROUNDS, () -> {
                    deliver(hello, ids, 16, WARM_UP, cpu);
                    deliver(endpoint, ids, 16, WARM_UP, cpu);
                    deliver(endpoint, ids, 1, WARM_UP / 10, cpu);
                });
                // Only the warm-up and the 16-client phase leave work; the contender and /hello leave none.
                String afterWarmUp = settle(database);
                Result limit16 = commitLimit(database, 16, deliveries, cpu);
                Result http16 = deliver(hello, ids, 16, deliveries, cpu);
                Result ours16 = deliver(endpoint, ids, 16, deliveries, cpu);
                String after16 = settle(database);
                int single = Math.max(1, deliveries / 4);
                Result limit1 = commitLimit(database, 1, single, cpu);
                Result http1 = deliver(hello, ids, 1, single, cpu);
                Result ours1 = deliver(endpoint, ids, 1, single, cpu);
                double ratio16 = ours16.rate() / limit16.rate();
                double ratio1 = ours1.rate() / limit1.rate();
                boolean met16 = ratio16 >= 0.5 && ours16.p99Millis() < 50;
                boolean met1 = ratio1 >= 0.3;
                out.printf("deliveries: %d at 16 clients, %d at 1 client, ~1 KB signed UnifyPort message events, fsync on;"
                        + " the runner warmed up with %d deliveries (%s)%n", deliveries, single, warmed.rounds() * (WARM_UP + WARM_UP / 10),
                        warmed.describe());
                out.printf("the runner finished the work earlier deliveries left (handlers hold back while deliveries queue):"
                        + " after the warm-up %s, after the 16-client phase %s%n", afterWarmUp, after16);
                print("16 clients", limit16, http16, ours16, ratio16, "ratio >= 0.50 and p99 < 50 ms", met16);
                print("1 client", limit1, http1, ours1, ratio1, "ratio >= 0.30", met1);
                return met16 && met1 ? 0 : 1;
            }
        }
    }

    /**
     * Waits until the runner's work is done, so no phase is timed against the handling of the
     * last one's deliveries: at 16 clients handlers hold back, and caught up during the 1-client
     * phases they had taken most of the CPU. Without handlers (or stuck) it stops waiting once
     * nothing moved for a few seconds. Says what it waited for.
     */
    private static String settle(BenchDatabase database) throws SQLException, InterruptedException {
        long start = System.nanoTime();
        long first = unfinishedWork(database);
        long left = first;
        long lastMove = start;
        while (left > 0 && System.nanoTime() - lastMove < SETTLE_PATIENCE.toNanos()) {
            Thread.sleep(100);
            long now = unfinishedWork(database);
            if (now < left) {
                lastMove = System.nanoTime();
            }
            left = now;
        }
        return String.format("%d items in %.1f s%s", first - left, (System.nanoTime() - start) / 1e9,
                left > 0 ? " (" + left + " not handled: no handlers?)" : "");
    }

    private static long unfinishedWork(BenchDatabase database) throws SQLException {
        return database.queryLong("SELECT (SELECT count(*) FROM chat_intake.work_staged)"
                + " + (SELECT count(*) FROM chat_intake.work_item WHERE state NOT IN ('done', 'parked'))");
    }

    private void print(String clients, Result limit, Result http, Result ours, double ratio, String target, boolean met) {
        out.printf("%-10s single-row INSERT + COMMIT: %.0f/s (p50 %.1f ms, p99 %.1f ms)%n", clients, limit.rate(), limit.p50Millis(), limit.p99Millis());
        out.printf("%-10s POST /hello (HTTP alone):   %.0f/s (p50 %.1f ms, p99 %.1f ms)%n", clients, http.rate(), http.p50Millis(), http.p99Millis());
        out.printf("%-10s POST /webhooks/unifyport:   %.0f/s (p50 %.1f ms, p99 %.1f ms), %.2f of HTTP alone%n", clients, ours.rate(),
                ours.p50Millis(), ours.p99Millis(), ours.rate() / http.rate());
        out.printf("%-10s   contender %s%n", clients, limit.cpu().describe(limit.operations(), "row", limit.wall()));
        out.printf("%-10s   ours      %s%n", clients, ours.cpu().describe(ours.operations(), "delivery", ours.wall()));
        out.printf("%-10s   ours with every core busy at that CPU per delivery: %.0f/s, %.2f of the contender as measured%n", clients,
                ours.rateWithAllCoresBusy(), ours.rateWithAllCoresBusy() / limit.rate());
        out.printf("%-10s ratio %.2f (target %s): %s%n", clients, ratio, target, met ? "met" : "NOT met");
    }

    @FunctionalInterface
    private interface Client {
        /** Does the {@code i}th operation of this client. */
        void call(int i) throws Exception;
    }

    private static Result commitLimit(BenchDatabase database, int clients, int rows, Supplier<CpuUse> cpu) throws Exception {
        String body = new String(body("evt_limit"), java.nio.charset.StandardCharsets.UTF_8);
        return measure(clients, rows, cpu, () -> {
            Connection c = database.dataSource().getConnection();
            PreparedStatement insert = c.prepareStatement("INSERT INTO public.bench_delivery (body) VALUES (?::jsonb)");
            return i -> {
                if (i < 0) {
                    insert.close();
                    c.close();
                    return;
                }
                insert.setString(1, body);
                insert.executeUpdate();
            };
        });
    }

    private static Result deliver(URI endpoint, AtomicLong ids, int clients, int deliveries, Supplier<CpuUse> cpu) throws Exception {
        return measure(clients, deliveries, cpu, () -> {
            SignedDeliverySender sender = new SignedDeliverySender(endpoint, Secret.of(SECRET));
            PlainHttpConnection connection = new PlainHttpConnection(endpoint, 30_000);
            return i -> {
                if (i < 0) {
                    connection.close();
                    return;
                }
                String eventId = "evt_bench_" + ids.incrementAndGet();
                SignedDeliverySender.Response response = sender.post(sender.sign(eventId, body(eventId), TimestampForm.UNIX_SECONDS),
                        connection);
                if (response.status() != 200) {
                    throw new IllegalStateException("delivery " + eventId + " answered " + response.status() + ": " + response.body());
                }
            };
        });
    }

    @FunctionalInterface
    private interface ClientFactory {
        Client open() throws Exception;
    }

    /**
     * Runs {@code total} operations spread over {@code clients} threads; a negative index closes a
     * client. The CPU is read while the clients' connections are open, so their backends count.
     */
    private static Result measure(int clients, int total, Supplier<CpuUse> cpu, ClientFactory factory) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        try {
            List<Client> opened = new ArrayList<>();
            for (int t = 0; t < clients; t++) {
                opened.add(factory.open());
            }
            long[] latencies = new long[total];
            AtomicLong next = new AtomicLong();
            CountDownLatch done = new CountDownLatch(opened.size());
            AtomicReference<CpuUse> cpuAtEnd = new AtomicReference<>();
            CpuUse cpuAtStart = cpu.get();
            long start = System.nanoTime();
            List<Future<?>> running = new ArrayList<>();
            for (Client client : opened) {
                running.add(pool.submit(() -> {
                    try {
                        for (long i = next.getAndIncrement(); i < total; i = next.getAndIncrement()) {
                            long t0 = System.nanoTime();
                            client.call((int) i);
                            latencies[(int) i] = System.nanoTime() - t0;
                        }
                    } finally {
                        done.countDown();
                    }
                    // Every client waits for the last before closing: its backend must still be there to be read.
                    done.await();
                    cpuAtEnd.compareAndSet(null, cpu.get());
                    client.call(-1);
                    return null;
                }));
            }
            done.await();
            Duration wall = Duration.ofNanos(System.nanoTime() - start);
            for (Future<?> f : running) {
                f.get();
            }
            Arrays.sort(latencies);
            return new Result(total / (wall.toNanos() / 1e9), latencies[(int) (total * 0.50)] / 1e6,
                    latencies[Math.min(total - 1, (int) (total * 0.99))] / 1e6, total, wall, cpuAtEnd.get().since(cpuAtStart));
        } finally {
            pool.shutdownNow();
        }
    }

    /** A ~1 KB message event, as a chat app would deliver one. */
    private static byte[] body(String eventId) {
        return SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_bench", Instant.now(),
                "{\"conversation\":{\"id\":\"c" + Math.abs(eventId.hashCode() % 50) + "\",\"type\":\"user\"},\"message\":{\"id\":\""
                        + eventId + "\",\"type\":\"text\",\"text\":\"" + "y".repeat(800) + "\"}}");
    }
}
