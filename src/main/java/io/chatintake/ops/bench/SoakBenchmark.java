package io.chatintake.ops.bench;

import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.PlainHttpConnection;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * {@code bench soak [SECONDS]} (default 300): one runner (child process, shipped routes, echo
 * replies on with the send limits lifted) under a steady mixed load ({@link SoakLoad}) for the
 * given time: Telegram text updates from the Bot API simulator, and signed UnifyPort deliveries
 * over HTTP, some of them the children of albums, an album's children posted at once by several
 * senders. Every {@link #REPORT_EVERY} and at the end it prints the work items created and done a
 * second, the work not done and how old its oldest item is (read from the database), the runner's
 * memory, its "released or taken over" log lines and the cores each process kept busy (handling
 * that falls short on a machine busy with other work is another finding). After the load it waits
 * up to 30 s for everything to be done. The targets are {@link SoakVerdict}'s; there is no
 * contender: handling must keep up with what intake takes in, on any machine that takes it in.
 */
public final class SoakBenchmark {
    /** What the runner logs when a claim it held was lost (ClaimedRuns); with a single runner it lost it to itself. */
    static final String CLAIM_LOST = "released or taken over";
    private static final long BOT = 9301;
    private static final String SECRET = "bench-soak-signing-secret-not-a-real-one";
    private static final Duration TICK = Duration.ofMillis(100);
    private static final Duration SAMPLE_EVERY = Duration.ofMillis(500);
    private static final Duration REPORT_EVERY = Duration.ofSeconds(30);
    /** Enough that an album's children are posted together and one slow answer does not hold the rate back. */
    private static final int SENDERS = 8;
    private static final int CONVERSATIONS = 100;
    private static final String PAD = "s".repeat(100);
    private static final String SAMPLE = """
            SELECT count(*), count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state = 'parked'),
                   count(*) FILTER (WHERE state = 'running'),
                   count(*) FILTER (WHERE state NOT IN ('done', 'parked')) + (SELECT count(*) FROM chat_intake.work_staged)
                       + (SELECT count(*) FROM chat_intake.webhook_event WHERE derived_at IS NULL),
                   coalesce(extract(epoch FROM now() - least(min(created_at) FILTER (WHERE state NOT IN ('done', 'parked')),
                                                             (SELECT min(staged_at) FROM chat_intake.work_staged),
                                                             (SELECT min(received_at) FROM chat_intake.webhook_event
                                                               WHERE derived_at IS NULL))), 0)
              FROM chat_intake.work_item""";

    private final PrintStream out;

    public SoakBenchmark(PrintStream out) {
        this.out = out;
    }

    /** @param flags {@code --name=value} changes to the default load ({@link SoakLoad#fromFlags}); @return 0 when every target is met */
    public int run(int seconds, List<String> flags) throws Exception {
        SoakLoad load = SoakLoad.fromFlags(flags);
        out.printf("load: %s; for %d s; one runner, shipped routes, echo replies on (send limits lifted), fsync on%n",
                load.describe(), seconds);
        SoakVerdict verdict = measure(Duration.ofSeconds(seconds), load);
        verdict.targets().forEach(target -> out.println(target.line()));
        out.println(verdict.met() ? "targets met" : "targets NOT met");
        return verdict.met() ? 0 : 1;
    }

    /** Runs the load for {@code length} against a fresh runner and database, printing as it goes. */
    SoakVerdict measure(Duration length, SoakLoad load) throws Exception {
        try (BenchDatabase database = BenchDatabase.start("soak", 2); BotApiSimulator simulator = BotApiSimulator.start()) {
            String token = simulator.addBot(BOT, "BENCH-soak-not-a-real-token", "soak_bot");
            Map<String, String> env = new HashMap<>(database.runnerEnv());
            env.put("TELEGRAM_BOT_TOKEN", token);
            env.put("TELEGRAM_API_URL", simulator.url());
            env.put("TELEGRAM_POLL_TIMEOUT_SECONDS", "1");
            env.put("TELEGRAM_ECHO_REPLIES", "true");
            // Lifted: handling is measured, not Telegram's send limits (bench replies measures those).
            env.put("TELEGRAM_SEND_PER_BOT_PER_SECOND", "100000");
            env.put("TELEGRAM_SEND_PER_CHAT_PER_SECOND", "1000");
            env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
            try (BenchRunner runner = BenchRunner.start(database.dir().resolve("runner"), env);
                 WebhookSenders webhooks = new WebhookSenders(URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"));
                 Connection connection = database.dataSource().getConnection();
                 PreparedStatement sample = connection.prepareStatement(SAMPLE)) {
                return new Run(runner, () -> CpuUse.now(runner.handle(), database.server()), simulator, token, webhooks, sample, load)
                        .go(length);
            }
        }
    }

    /** The work items as one look at the database saw them; {@code oldestPending} in seconds, 0 when nothing is pending. */
    private record Sample(long nanos, long created, long done, long parked, long running, long unfinished, double oldestPending) {
    }

    /** One run: the load offered on a timer, the database looked at every {@link #SAMPLE_EVERY} from this thread. */
    private final class Run {
        private final BenchRunner runner;
        private final Supplier<CpuUse> cpu;
        private final BotApiSimulator simulator;
        private final String token;
        private final WebhookSenders webhooks;
        private final PreparedStatement sample;
        private final SoakLoad load;
        private final AtomicReference<Throwable> loadFailure = new AtomicReference<>();
        private long updatesOffered;
        private long deliveriesOffered;
        private long albumChildrenOffered;
        private long albums;
        private double worstOldestInPeriod;
        private double worstOldestAfterFirstMinute;
        private CpuUse cpuReported;

        Run(BenchRunner runner, Supplier<CpuUse> cpu, BotApiSimulator simulator, String token, WebhookSenders webhooks,
            PreparedStatement sample, SoakLoad load) {
            this.runner = runner;
            this.cpu = cpu;
            this.simulator = simulator;
            this.token = token;
            this.webhooks = webhooks;
            this.sample = sample;
            this.load = load;
        }

        SoakVerdict go(Duration length) throws Exception {
            cpuReported = cpu.get();
            Sample first = sample();
            long start = first.nanos();
            Sample reported = first;
            ScheduledExecutorService offering = Executors.newSingleThreadScheduledExecutor();
            Sample atEnd = first;
            try {
                offering.scheduleAtFixedRate(() -> offer(start), 0, TICK.toMillis(), TimeUnit.MILLISECONDS);
                while (atEnd.nanos() - start < length.toNanos()) {
                    atEnd = sampleNext(atEnd, start);
                    if (atEnd.nanos() - reported.nanos() >= REPORT_EVERY.toNanos()) {
                        report(start, reported, atEnd);
                        reported = atEnd;
                    }
                }
            } finally {
                offering.shutdownNow();
                offering.awaitTermination(10, TimeUnit.SECONDS);
            }
            if (reportable(reported, atEnd)) {
                report(start, reported, atEnd);
            }
            out.printf("load ended: %d Telegram updates and %d UnifyPort deliveries offered (%d children of %d albums), %d refused"
                            + " attempts retried, %d deliveries not acknowledged%n", updatesOffered, deliveriesOffered,
                    albumChildrenOffered, albums, webhooks.refusedAttempts(), webhooks.lost());

            Sample last = atEnd;
            Duration doneAfterLoad = null;
            while (last.nanos() - atEnd.nanos() <= SoakVerdict.DRAIN_LIMIT.toNanos()) {
                if (everythingDone(last)) {
                    doneAfterLoad = Duration.ofNanos(last.nanos() - atEnd.nanos());
                    break;
                }
                last = sampleNext(last, start);
            }
            if (reportable(atEnd, last)) {
                report(start, atEnd, last);
            }
            out.printf("after the load: %s%n", doneAfterLoad != null
                    ? "everything done in %.1f s".formatted(doneAfterLoad.toNanos() / 1e9)
                    : "%d items not done (%d running, %d parked), the oldest %.0f s old; %d updates not yet confirmed at the simulator,"
                            .formatted(last.unfinished(), last.running(), last.parked(), last.oldestPending(), simulator.queued(token))
                            + " %d deliveries not yet acknowledged".formatted(webhooks.waiting()));
            // Not judged: a reply per text, once, is what the other benches and the tests check.
            out.printf("echo replies sent: %d for %d texts%n", simulator.sends(token).size(), updatesOffered);
            SoakVerdict verdict = new SoakVerdict(Duration.ofNanos(atEnd.nanos() - start), atEnd.created() - first.created(),
                    atEnd.done() - first.done(), worstOldestAfterFirstMinute, doneAfterLoad, runner.logLinesContaining(CLAIM_LOST));
            if (!verdict.met()) {
                // The run's files go with its database; a missed target needs the runner's own account.
                Path kept = Files.copy(runner.log(), Files.createTempFile("chat-intake-bench-soak-runner-", ".log"),
                        StandardCopyOption.REPLACE_EXISTING);
                out.println("the runner's log: " + kept);
            }
            return verdict;
        }

        private boolean everythingDone(Sample sample) {
            return sample.unfinished() == 0 && sample.parked() == 0 && simulator.queued(token) == 0 && webhooks.waiting() == 0;
        }

        /** Offers what is due by now since {@code start}: rates held over the run, whatever a tick's delay. */
        private void offer(long start) {
            try {
                double seconds = (System.nanoTime() - start) / 1e9;
                ThreadLocalRandom random = ThreadLocalRandom.current();
                for (long due = (long) (load.telegramPerSecond() * seconds); updatesOffered < due; updatesOffered++) {
                    simulator.enqueueText(token, 1 + random.nextInt(load.chats()), "soak " + updatesOffered + " " + PAD);
                }
                for (long due = (long) (load.webhookPerSecond() * seconds); deliveriesOffered < due; ) {
                    String conversation = "soak-c" + random.nextInt(CONVERSATIONS);
                    if (load.albumNext(deliveriesOffered, albumChildrenOffered)) {
                        String album = "soak-album-" + ++albums;
                        for (int index = 1; index <= load.albumSize(); index++) {
                            offerMessage(conversation, album + "-" + index, "\"type\":\"image\",\"album\":{\"id\":\"" + album
                                    + "\",\"index\":" + index + ",\"total\":" + load.albumSize() + "}");
                        }
                        deliveriesOffered += load.albumSize();
                        albumChildrenOffered += load.albumSize();
                    } else {
                        offerMessage(conversation, "soak-m" + deliveriesOffered, "\"type\":\"text\",\"text\":\"soak " + PAD + "\"");
                        deliveriesOffered++;
                    }
                }
            } catch (RuntimeException | Error e) {
                // A timer task that throws is never run again: the run must stop and say why.
                loadFailure.compareAndSet(null, e);
                throw e;
            }
        }

        /** A message.received event in {@code conversation}: {@code messageFields} are the message's own besides its id. */
        private void offerMessage(String conversation, String messageId, String messageFields) {
            String eventId = "evt_" + messageId;
            webhooks.offer(eventId, SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_soak", Instant.now(),
                    "{\"conversation\":{\"id\":\"" + conversation + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u-" + conversation
                            + "\",\"type\":\"user\"},\"message\":{\"id\":\"" + messageId + "\",\"direction\":\"in\",\"sent_at\":\""
                            + Instant.now() + "\"," + messageFields + "}}"));
        }

        /** Whether the period is long enough for its rates to say something. */
        private static boolean reportable(Sample from, Sample to) {
            return to.nanos() - from.nanos() >= SAMPLE_EVERY.toNanos() * 4;
        }

        /** The period from {@code from} to {@code to}; the worst oldest pending is that of every look in it. */
        private void report(long start, Sample from, Sample to) throws IOException {
            double seconds = (to.nanos() - from.nanos()) / 1e9;
            long resident = runner.residentBytes();
            CpuUse cpuNow = cpu.get();
            CpuUse used = cpuNow.since(cpuReported);
            cpuReported = cpuNow;
            out.printf("%4d s: in %.1f/s, handled %.1f/s; not done %d (%d running), oldest pending %.1f s (worst %.1f s);"
                            + " runner %sheap in use %d MB; \"%s\" lines %d; cores busy: runner %.2f, PostgreSQL %.2f, bench %.2f,"
                            + " load average %.1f%n",
                    Math.round((to.nanos() - start) / 1e9), (to.created() - from.created()) / seconds, (to.done() - from.done()) / seconds,
                    to.unfinished(), to.running(), to.oldestPending(), worstOldestInPeriod,
                    resident < 0 ? "" : "RSS %d MB, ".formatted(resident >> 20), runner.heapInUse() >> 20,
                    CLAIM_LOST, runner.logLinesContaining(CLAIM_LOST), used.runnerNanos() / 1e9 / seconds,
                    used.databaseNanos() / 1e9 / seconds, used.benchNanos() / 1e9 / seconds,
                    ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
            worstOldestInPeriod = 0;
        }

        /** The next look, {@link #SAMPLE_EVERY} after {@code previous}, counted in the worst oldest pending ages. */
        private Sample sampleNext(Sample previous, long start) throws SQLException, InterruptedException {
            long wait = previous.nanos() + SAMPLE_EVERY.toNanos() - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            Throwable failure = loadFailure.get();
            if (failure != null) {
                throw new IllegalStateException("offering the load failed: " + failure, failure);
            }
            Sample next = sample();
            worstOldestInPeriod = Math.max(worstOldestInPeriod, next.oldestPending());
            if (next.nanos() - start > SoakVerdict.FIRST_MINUTE.toNanos()) {
                worstOldestAfterFirstMinute = Math.max(worstOldestAfterFirstMinute, next.oldestPending());
            }
            return next;
        }

        private Sample sample() throws SQLException {
            long nanos = System.nanoTime();
            try (ResultSet rs = sample.executeQuery()) {
                rs.next();
                return new Sample(nanos, rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5), rs.getDouble(6));
            }
        }
    }

    /**
     * {@link #SENDERS} threads posting queued deliveries, each on its own kept-alive connection,
     * retrying what UnifyPort retries (connection errors, 408, 429, 5xx) as it does.
     */
    private static final class WebhookSenders implements AutoCloseable {
        private static final int MAX_ATTEMPTS = 5;
        private static final Duration BACKOFF = Duration.ofMillis(200);
        private final URI endpoint;
        private final SignedDeliverySender sender;
        private final BlockingQueue<Delivery> queue = new LinkedBlockingQueue<>();
        private final AtomicInteger waiting = new AtomicInteger();
        private final AtomicLong refusedAttempts = new AtomicLong();
        private final AtomicLong lost = new AtomicLong();
        private final List<Thread> threads = new ArrayList<>();

        private record Delivery(String eventId, byte[] body) {
        }

        WebhookSenders(URI endpoint) {
            this.endpoint = endpoint;
            this.sender = new SignedDeliverySender(endpoint, Secret.of(SECRET));
            for (int i = 0; i < SENDERS; i++) {
                Thread thread = new Thread(this::sendQueued, "bench-soak-sender-" + i);
                thread.setDaemon(true);
                thread.start();
                threads.add(thread);
            }
        }

        void offer(String eventId, byte[] body) {
            // Counted before it is queued: a delivery taken at once is never counted as done before it was waiting.
            waiting.incrementAndGet();
            queue.add(new Delivery(eventId, body));
        }

        /** Deliveries offered and not yet acknowledged or given up. */
        int waiting() {
            return waiting.get();
        }

        long refusedAttempts() {
            return refusedAttempts.get();
        }

        long lost() {
            return lost.get();
        }

        private void sendQueued() {
            SenderConnection connection = new SenderConnection();
            try {
                while (true) {
                    Delivery delivery = queue.take();
                    if (!deliver(delivery, connection)) {
                        lost.incrementAndGet();
                    }
                    waiting.decrementAndGet();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                connection.drop();
            }
        }

        /** @return whether an attempt was acknowledged */
        private boolean deliver(Delivery delivery, SenderConnection connection) throws InterruptedException {
            for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
                if (attempt > 1) {
                    Thread.sleep(BACKOFF.toMillis());
                }
                SignedDeliverySender.Response response = connection.post(sender.sign(delivery.eventId(), delivery.body(),
                        TimestampForm.UNIX_SECONDS));
                if (response.status() / 100 == 2) {
                    return true;
                }
                refusedAttempts.incrementAndGet();
                if (!response.retryable()) {
                    return false;
                }
            }
            return false;
        }

        /** One sender's connection, opened again after it failed. */
        private final class SenderConnection {
            private PlainHttpConnection open;

            SignedDeliverySender.Response post(SignedDeliverySender.Delivery delivery) {
                try {
                    if (open == null) {
                        open = new PlainHttpConnection(endpoint, 30_000);
                    }
                } catch (IOException e) {
                    return new SignedDeliverySender.Response(0, e.getMessage(), delivery);
                }
                SignedDeliverySender.Response response = sender.post(delivery, open);
                if (response.status() == 0) {
                    drop();
                }
                return response;
            }

            void drop() {
                try {
                    if (open != null) {
                        open.close();
                    }
                } catch (IOException e) {
                    // Dropped either way; the next attempt opens another.
                }
                open = null;
            }
        }

        @Override
        public void close() throws InterruptedException {
            threads.forEach(Thread::interrupt);
            for (Thread thread : threads) {
                thread.join(TimeUnit.SECONDS.toMillis(10));
            }
        }
    }
}
