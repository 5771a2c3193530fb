package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.InboxAudit;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * Two runners or more (the real jar) on one external PostgreSQL under Telegram and webhook load, for tests
 * that hurt the database meanwhile: texts to a polled bot whose shipped echo handler answers each,
 * and signed UnifyPort deliveries sent as a provider sends them (again after a 5xx or no answer,
 * to the runners in turn). Afterwards: every text answered once, every acknowledged delivery
 * stored once, every stored update with its work item, nothing parked, no runner exited.
 */
final class RunnersUnderLoad implements AutoCloseable {
    private static final String SECRET = "db_faults_it_secret_42";
    /** Long enough for a machine shared with other test runs to drain the load; only a failing run waits it out. */
    private static final Duration WAIT = Duration.ofSeconds(120);
    private static final int CHATS = 20;
    /** How many more deliveries and answers show that intake flows again. */
    private static final int FLOWING = 10;
    /** How long an album waits for more parts after its last: short, so that a test sees albums decided by it. */
    static final Duration ALBUM_QUIET = Duration.ofSeconds(3);

    private final BotApiSimulator simulator;
    private final String token;
    final RunnerProcess first;
    final RunnerProcess second;
    /** Every runner, {@link #first} and {@link #second} the first two. */
    final List<RunnerProcess> runners;
    private final AtomicBoolean loading = new AtomicBoolean(true);
    private final Set<String> acknowledged = ConcurrentHashMap.newKeySet();
    private final AtomicInteger texts = new AtomicInteger();
    private final Thread telegram;
    private final Thread webhooks;

    /** Starts both runners on the database at {@code jdbcUrl}, waits until they are ready, and starts the load. */
    RunnersUnderLoad(Path work, EmbeddedDatabase database) {
        this(work, database, Duration.ZERO);
    }

    /** The same with the second runner's wall clock {@code secondAhead} of the first's (and the database's). */
    RunnersUnderLoad(Path work, EmbeddedDatabase database, Duration secondAhead) {
        this(work, database, secondAhead, Map.of());
    }

    /** The same, the second runner also given {@code secondSettings} (environment variables). */
    RunnersUnderLoad(Path work, EmbeddedDatabase database, Duration secondAhead, Map<String, String> secondSettings) {
        this(work, database.jdbcUrl(), database.user(), database.password(), 2, secondAhead, Map.of(), secondSettings);
    }

    /** The same with {@code count} runners (2 or more), every clock the database's. */
    RunnersUnderLoad(Path work, EmbeddedDatabase database, int count) {
        this(work, database.jdbcUrl(), database.user(), database.password(), count, Duration.ZERO, Map.of(), Map.of());
    }

    /** The same on the database at {@code jdbcUrl}, e.g. a multi-host URL naming a primary and its standby. */
    RunnersUnderLoad(Path work, String jdbcUrl, String user, Secret password, Duration secondAhead) {
        this(work, jdbcUrl, user, password, 2, secondAhead, Map.of(), Map.of());
    }

    /** The same with settings of each runner's own (its database reached through a proxy, say). */
    RunnersUnderLoad(Path work, EmbeddedDatabase database, Map<String, String> firstOwn, Map<String, String> secondOwn) {
        this(work, database.jdbcUrl(), database.user(), database.password(), 2, Duration.ZERO, firstOwn, secondOwn);
    }

    private RunnersUnderLoad(Path work, String jdbcUrl, String user, Secret password, int count, Duration secondAhead,
                             Map<String, String> firstOwn, Map<String, String> secondOwn) {
        simulator = BotApiSimulator.start();
        token = simulator.addBot(707, "FAKE-db-faults-test-token", "db_faults_bot");
        Map<String, String> firstEnv = env(work.resolve("a"), jdbcUrl, user, password);
        firstEnv.putAll(firstOwn);
        first = RunnerProcess.start(work.resolve("a"), firstEnv);
        Map<String, String> secondEnv = env(work.resolve("b"), jdbcUrl, user, password);
        secondEnv.putAll(secondOwn);
        second = secondAhead.isZero() ? RunnerProcess.start(work.resolve("b"), secondEnv)
                : RunnerProcess.startWithClockAhead(work.resolve("b"), secondEnv, secondAhead);
        List<RunnerProcess> all = new ArrayList<>(List.of(first, second));
        for (int more = 2; more < count; more++) {
            Path dir = work.resolve(Character.toString('a' + more));
            all.add(RunnerProcess.start(dir, env(dir, jdbcUrl, user, password)));
        }
        runners = List.copyOf(all);
        try {
            runners.forEach(RunnerProcess::awaitReady);
        } catch (AssertionError e) {
            close(); // no test holds this yet: its runners would outlive it
            throw e;
        }
        telegram = new Thread(() -> {
            while (loading.get()) {
                int n = texts.get();
                simulator.enqueueText(token, 1 + n % CHATS, "text " + n);
                texts.incrementAndGet();
                pause(25);
            }
        }, "telegram-load");
        webhooks = new Thread(this::deliver, "webhook-load");
        telegram.start();
        webhooks.start();
    }

    private Map<String, String> env(Path dir, String jdbcUrl, String user, Secret password) {
        Map<String, String> env = RunnerProcess.pollingEnv(dir, simulator.url(), token);
        env.put("CHAT_INTAKE_DB_URL", jdbcUrl);
        env.put("CHAT_INTAKE_DB_USER", user);
        env.put("CHAT_INTAKE_DB_PASSWORD", password.reveal());
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        env.put("TELEGRAM_SEND_PER_BOT_PER_SECOND", "300");
        env.put("TELEGRAM_SEND_PER_CHAT_PER_SECOND", "100");
        // A claim whose commit went through while its answer was lost is not known to its live
        // claimer: it waits out its claim (LaneClaims). Shorter than the shipped 120 s so the test
        // waits less, still far longer than any outage here, so no live claim runs out meanwhile.
        env.put("WORK_CLAIM_SECONDS", "45");
        env.put("ALBUMS_QUIET_PERIOD_SECONDS", Long.toString(ALBUM_QUIET.toSeconds()));
        return env;
    }

    /** The most getUpdates of the bot that were ever waiting at once, and how many a later one displaced (409). */
    String polls() {
        return simulator.maxConcurrentPolls(token) + " at once, " + simulator.conflicts(token) + " displaced";
    }

    /** The deliveries answered 2xx so far. */
    Set<String> acknowledged() {
        return Set.copyOf(acknowledged);
    }

    /** The highest update id a getUpdates has confirmed so far (its offset less one); 0 for none. */
    long confirmedThrough() {
        return simulator.requests().stream().filter(r -> r.method().equals("getUpdates") && r.offset() != null)
                .mapToLong(r -> r.offset() - 1).max().orElse(0);
    }

    /** The answers the bot sent so far, each an effect performed. */
    int answers() {
        return simulator.sentMessages(token).size();
    }

    /**
     * Keeps the load going for {@code duration}, a length the test's scenario needs (a stretch of
     * load, an outage): not a sleep, as every runner is watched meanwhile and the test fails at once
     * when one exits.
     */
    void keepLoading(Duration duration) {
        long end = System.nanoTime() + duration.toNanos();
        while (System.nanoTime() < end) {
            runners.stream().filter(r -> !r.isAlive()).findFirst().ifPresent(r -> {
                throw new AssertionError("a runner exited under load:\n" + r.output());
            });
            pause(100);
        }
    }

    /**
     * Waits until intake goes on: {@value #FLOWING} more deliveries acknowledged and as many texts
     * answered after this call (the database may still be coming back meanwhile).
     */
    void awaitIntake() {
        int deliveries = acknowledged.size();
        int answers = simulator.sentMessages(token).size();
        Await.until(FLOWING + " more deliveries acknowledged and texts answered", WAIT,
                () -> acknowledged.size() >= deliveries + FLOWING && simulator.sentMessages(token).size() >= answers + FLOWING);
    }

    /** One album part (of {@code total}) delivered to {@code runner} until accepted. */
    void deliverAlbumPart(RunnerProcess runner, String album, int index, int total) {
        deliverUntilAccepted(runner, "evt_album_" + album + "_" + index, "c-albums",
                "{\"id\":\"" + album + "-" + index + "\",\"type\":\"image\",\"direction\":\"in\","
                        + "\"album\":{\"id\":\"" + album + "\",\"index\":" + index + ",\"total\":" + total + "}}");
    }

    /** One text event, apart from the load's, delivered to {@code runner} until accepted. */
    void deliverText(RunnerProcess runner, String eventId) {
        deliverUntilAccepted(runner, eventId, "c-" + eventId,
                "{\"id\":\"m-" + eventId + "\",\"type\":\"text\",\"text\":\"t\",\"direction\":\"in\"}");
    }

    private void deliverUntilAccepted(RunnerProcess runner, String eventId, String conversation, String messageJson) {
        byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(),
                "{\"conversation\":{\"id\":\"" + conversation + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                        + "\"message\":" + messageJson + "}");
        SignedDeliverySender sender = new SignedDeliverySender(
                URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
        Await.until(eventId + " accepted", WAIT, () -> {
            try {
                return sender.post(sender.sign(eventId, body, TimestampForm.RFC3339)).status() == 200;
            } catch (RuntimeException e) {
                return false;
            }
        });
    }

    /** Ends the load and waits until everything it brought is handled; the checks follow. */
    void stopLoadAndAwaitHandled(DataSource db) throws InterruptedException {
        stopLoadAndAwait(db, true);
    }

    /**
     * Ends the load and waits until every item is done or parked, without waiting for every text's
     * answer: an effect in flight as a runner was cut off is parked unanswered, ambiguous.
     */
    void stopLoadAndAwaitSettled(DataSource db) throws InterruptedException {
        stopLoadAndAwait(db, false);
    }

    private void stopLoadAndAwait(DataSource db, boolean everyTextAnswered) throws InterruptedException {
        loading.set(false);
        telegram.join();
        webhooks.join();
        int sent = texts.get();
        try {
            Await.until("every item done", WAIT, () -> Sql.count(db,
                    "SELECT count(*) FROM work_item WHERE state NOT IN ('done', 'parked')") == 0);
            if (everyTextAnswered) {
                Await.until("every text answered", WAIT, () -> simulator.sentMessages(token).size() >= sent);
            }
        } catch (AssertionError e) {
            throw new AssertionError(sent + " texts, " + simulator.sentMessages(token).size() + " answers, "
                    + Sql.count(db, "SELECT count(*) FROM telegram_update") + " updates stored; items by state: "
                    + Sql.rows(db, "SELECT kind, state, count(*), max(last_error) FROM work_item GROUP BY 1, 2")
                    + "; effects: " + Sql.rows(db, "SELECT state, count(*) FROM outbound_effect GROUP BY 1")
                    + "; running: " + Sql.rows(db, "SELECT id, chat_key, claimed_by, claim_token, claim_expires_at - now(), updated_at,"
                    + " attempts FROM work_item WHERE state = 'running'")
                    + "; lanes: " + Sql.rows(db, "SELECT chat_key, claimed_by, claim_token, due_at - now() FROM work_lane"
                    + " WHERE claimed_by IS NOT NULL")
                    + "; beats: " + Sql.rows(db, "SELECT process_id, now() - beat_at FROM runner_heartbeat") + "\n"
                    + runners.stream().map(RunnerProcess::output).collect(Collectors.joining("\n----\n")), e);
        }
    }

    /** Nothing lost, doubled or parked, no runner exited; returns what the load brought, for the test's line. */
    String assertNothingLostDoubledOrParked(DataSource db) {
        int sent = texts.get();
        for (RunnerProcess runner : runners) {
            assertThat(runner.isAlive()).as("no runner exits:\n%s", runner.output()).isTrue();
        }
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).as("none parked").isZero();
        assertThat(simulator.sentMessages(token).stream().map(m -> m.path("text").asText()).toList())
                .as("every text answered once").doesNotHaveDuplicates().hasSize(sent);
        return assertNothingLostOrDoubled(db);
    }

    /**
     * From now on the simulator checks at every getUpdates that what it confirms is stored
     * ({@link #assertNothingLostOrDoubledButAmbiguous}).
     */
    void auditConfirmations(DataSource db) {
        simulator.setAudit(new InboxAudit(db));
    }

    /**
     * Nothing confirmed unstored, lost or doubled, no text answered twice, no runner exited; parked
     * only an item whose effect was in flight when its runner was cut off (ambiguous, for a person),
     * its text answered at most once. Returns what the load brought and how many were ambiguous.
     */
    String assertNothingLostOrDoubledButAmbiguous(DataSource db) {
        int sent = texts.get();
        assertThat(simulator.violations()).as("nothing confirmed at Telegram unstored").isEmpty();
        assertThat(Sql.rows(db, "SELECT id, last_error FROM work_item WHERE state = 'parked'"
                + " AND last_error NOT LIKE '%was started but never recorded done%'")).as("parked only when ambiguous").isEmpty();
        long ambiguous = Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'");
        List<String> answers = simulator.sentMessages(token).stream().map(m -> m.path("text").asText()).toList();
        assertThat(answers).as("no text answered twice").doesNotHaveDuplicates();
        assertThat(answers.size()).as("every text answered but the ambiguous").isGreaterThanOrEqualTo((int) (sent - ambiguous));
        return assertNothingLostOrDoubled(db) + ", " + ambiguous + " ambiguous effect(s) parked";
    }

    private String assertNothingLostOrDoubled(DataSource db) {
        int sent = texts.get();
        assertThat(first.isAlive() && second.isAlive()).as("no runner exits:\n%s\n%s", first.output(), second.output()).isTrue();
        assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update")).isEqualTo(sent);
        assertThat(Sql.count(db, """
                SELECT count(*) FROM telegram_update u
                 WHERE NOT EXISTS (SELECT 1 FROM work_item w WHERE w.kind = 'telegram-update' AND w.source_id = u.id)"""))
                .as("every stored update has its work item").isZero();
        assertThat(Sql.count(db, "SELECT count(DISTINCT event_id) FROM webhook_event WHERE event_id LIKE 'evt_load_%'"))
                .as("every acknowledged delivery stored").isGreaterThanOrEqualTo(acknowledged.size());
        assertThat(Sql.count(db, "SELECT count(*) - count(DISTINCT event_id) FROM webhook_event")).as("none twice").isZero();
        // How many depends on the machine's load; enough that each fault met deliveries in flight.
        assertThat(acknowledged).as("deliveries went in").hasSizeGreaterThan(20);
        return sent + " texts, " + acknowledged.size() + " deliveries acknowledged";
    }

    /** A provider: each event sent until answered 200, to the runners in turn; 503 means retry. */
    private void deliver() {
        List<SignedDeliverySender> senders = runners.stream().map(r -> new SignedDeliverySender(
                URI.create("http://127.0.0.1:" + r.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET))).toList();
        for (int n = 0; loading.get(); n++) {
            String eventId = "evt_load_" + n;
            byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(),
                    "{\"conversation\":{\"id\":\"c" + n % CHATS + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                            + "\"message\":{\"id\":\"m" + n + "\",\"type\":\"text\",\"text\":\"t\",\"direction\":\"in\"}}");
            for (int attempt = 0; loading.get(); attempt++) {
                SignedDeliverySender sender = senders.get((n + attempt) % senders.size());
                try {
                    if (sender.post(sender.sign(eventId, body, TimestampForm.RFC3339)).status() == 200) {
                        acknowledged.add(eventId);
                        break;
                    }
                } catch (RuntimeException e) {
                    // no answer: the provider retries
                }
                pause(200);
            }
            pause(20);
        }
    }

    static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        loading.set(false);
        try (simulator) {
            for (int i = runners.size() - 1; i >= 0; i--) {
                runners.get(i).close();
            }
        }
    }
}
