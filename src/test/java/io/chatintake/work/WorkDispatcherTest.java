package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.channel.ChildMessages;
import io.chatintake.channel.telegram.BotApiClient;
import io.chatintake.channel.telegram.OffsetCheckpoint;
import io.chatintake.channel.telegram.PollLease;
import io.chatintake.channel.telegram.ScheduleCheckpoint;
import io.chatintake.channel.telegram.TelegramUpdateStore;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import io.chatintake.channel.telegram.TelegramWorkSource;
import io.chatintake.config.Settings;
import io.chatintake.support.MeterRegistryLookup;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.apache.camel.AsyncCallback;
import org.apache.camel.AsyncProcessor;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.RoutesBuilder;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(TestDatabase.class)
class WorkDispatcherTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final long BOT = 31;
    private static final long PACE_MILLIS = 200;

    private final DataSource dataSource = TestDatabase.dataSource();
    private final List<String> handled = new CopyOnWriteArrayList<>();
    private final Map<String, AtomicInteger> failuresLeft = new ConcurrentHashMap<>();
    private final AtomicInteger effectsPerformed = new AtomicInteger();
    private final Map<String, AtomicInteger> deferralsLeft = new ConcurrentHashMap<>();
    private final List<Integer> attemptsSeenWhileDeferred = new CopyOnWriteArrayList<>();
    private final List<Instant> attemptTimes = new CopyOnWriteArrayList<>();
    private final List<WebhookServer> products = new ArrayList<>();
    /** Keys whose handler runs until the test releases it: a slow call. */
    private final Set<String> held = ConcurrentHashMap.newKeySet();
    private final CountDownLatch release = new CountDownLatch(1);
    private final Set<String> interrupting = ConcurrentHashMap.newKeySet();
    /** Keys whose handler goes asynchronous at step never-answers and is never completed (a lost callback), once each. */
    private final Set<String> unanswered = ConcurrentHashMap.newKeySet();
    /** Keys whose handler takes {@link #PACE_MILLIS}, and how many handlers ran at once at most meanwhile. */
    private final Set<String> paced = ConcurrentHashMap.newKeySet();
    private final AtomicInteger handlingNow = new AtomicInteger();
    private final AtomicInteger mostAtOnce = new AtomicInteger();
    private CamelContext camel;
    private PollLease.Held lease;

    @BeforeEach
    void start() throws Exception {
        new OffsetCheckpoint(dataSource).load(BOT, "work-test");
        lease = new PollLease(dataSource).tryAcquire(BOT, "work-test", Duration.ofMinutes(5)).orElseThrow();
    }

    @AfterEach
    void stop() {
        release.countDown();
        products.forEach(WebhookServer::close);
    }

    /** The product with this test's handler routes, its dispatcher handling telegram-update with test-speed backoff. */
    private void startDispatcher(int maxAttempts, String... settings) {
        camel = startProduct(maxAttempts, true, settings).context();
    }

    /**
     * @param runsTelegram whether this product's work:telegram-update route starts with it
     * @param settings     more settings, as key, value, key, value, ...
     */
    private WebhookServer startProduct(int maxAttempts, boolean runsTelegram, String... settings) {
        WebhookServer.Builder builder = WebhookServer.builder(dataSource).withoutHttp().routes(handlerRoutes(runsTelegram))
                .setting("work.concurrency", "2")
                .setting("work.max-attempts", Integer.toString(maxAttempts))
                .setting("work.backoff-base-millis", "200")
                .setting("work.backoff-cap-millis", "800")
                .setting("work.claim-seconds", "30")
                .setting("work.poll-interval-millis", "50")
                .setting("work.ordered-kinds", "telegram-update");
        for (int i = 0; i + 1 < settings.length; i += 2) {
            builder.setting(settings[i], settings[i + 1]);
        }
        WebhookServer product = builder.start();
        products.add(product);
        return product;
    }

    private RoutesBuilder handlerRoutes(boolean runsTelegram) {
        return new RouteBuilder() {
            @Override
            public void configure() {
                from("work:telegram-update").routeId("telegram-update-test").autoStartup(runsTelegram).process(new AsyncProcessor() {
                    @Override
                    public boolean process(Exchange exchange, AsyncCallback callback) {
                        if (unanswered.remove(exchange.getMessage().getHeader(WorkDispatcher.IDEMPOTENCY_KEY, String.class))) {
                            return false;
                        }
                        callback.done(true);
                        return true;
                    }

                    @Override
                    public CompletableFuture<Exchange> processAsync(Exchange exchange) {
                        throw new UnsupportedOperationException();
                    }

                    @Override
                    public void process(Exchange exchange) {
                        throw new UnsupportedOperationException();
                    }
                }).id("never-answers").process(exchange -> {
                    String key = exchange.getMessage().getHeader(WorkDispatcher.IDEMPOTENCY_KEY, String.class);
                    attemptTimes.add(Instant.now());
                    if (held.contains(key)) {
                        release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    }
                    if (paced.contains(key)) {
                        mostAtOnce.accumulateAndGet(handlingNow.incrementAndGet(), Math::max);
                        try {
                            Thread.sleep(PACE_MILLIS);
                        } finally {
                            handlingNow.decrementAndGet();
                        }
                    }
                    AtomicInteger deferrals = deferralsLeft.get(key);
                    if (deferrals != null && deferrals.getAndDecrement() > 0) {
                        int attempt = exchange.getMessage().getHeader(WorkDispatcher.WORK_ATTEMPT, Integer.class);
                        attemptsSeenWhileDeferred.add(attempt);
                        throw new EffectFailure(DeferReason.CHAT_LIMIT, "chat limit for " + key, Instant.now().plusMillis(30));
                    }
                    AtomicInteger left = failuresLeft.get(key);
                    if (left != null && left.getAndDecrement() > 0) {
                        throw new IllegalStateException("handler failure for " + key);
                    }
                    handled.add(key);
                    if (interrupting.contains(key)) {
                        Thread.currentThread().interrupt();
                    }
                });
                from("direct:guarded").bean("effectGuard", "begin").process(e -> effectsPerformed.incrementAndGet())
                        .process(e -> {
                            if (e.getMessage().getHeader("CrashAfterEffect", false, Boolean.class)) {
                                throw new IllegalStateException("died after the effect, before recording it");
                            }
                        })
                        .bean("effectGuard", "complete");
            }
        };
    }

    private TelegramUpdateStore.StoredBatch store(long chatId, long... updateIds) throws Exception {
        TelegramUpdateStore.StoredBatch stored = storeUnscheduled(chatId, updateIds);
        new ScheduleCheckpoint(dataSource).scheduleThrough(lease.botId(), stored.lastRowId());
        return stored;
    }

    private TelegramUpdateStore.StoredBatch storeUnscheduled(long chatId, long... updateIds) throws Exception {
        List<BotApiClient.RawUpdate> batch = new ArrayList<>();
        for (long id : updateIds) {
            batch.add(new BotApiClient.RawUpdate(id, "message",
                    "{\"update_id\":" + id + ",\"message\":{\"chat\":{\"id\":" + chatId + "},\"text\":\"u" + id + "\"}}"));
        }
        return new TelegramUpdateStore(dataSource, ChildMessages.listener()).store(lease, Duration.ofMinutes(5), batch);
    }

    /** Stores updates without their work items and stages their work instead, as a webhook delivery does. */
    private void storeStaged(long chatId, long... updateIds) throws Exception {
        storeUnscheduled(chatId, updateIds);
        Sql.execute(dataSource, """
                INSERT INTO work_staged (kind, source_key, source_id, chat_key)
                SELECT 'telegram-update', bot_id || ':' || update_id, id, bot_id || ':%d' FROM telegram_update
                 WHERE bot_id = %d AND update_id IN (%s) ORDER BY id""".formatted(chatId, BOT,
                Arrays.stream(updateIds).mapToObj(Long::toString).collect(Collectors.joining(","))));
    }

    @Test
    void workStagedByAProcessThatDiedIsScheduledAtStartAndWorkStagedLaterWithoutATellingWithinASecond() throws Exception {
        storeStaged(1, 1, 2, 3);
        startDispatcher(3);
        Await.until("the staged work handled, in order", WAIT, () -> handled.equals(List.of(BOT + ":1", BOT + ":2", BOT + ":3")));

        // Staged by another process, which never tells this one: its scheduler's own look finds it.
        long staged = System.nanoTime();
        storeStaged(1, 4);
        Await.until("handled", WAIT, () -> handled.contains(BOT + ":4"));
        assertThat(Duration.ofNanos(System.nanoTime() - staged)).isLessThan(StagedWorkScheduler.LOOK_EVERY.plusSeconds(2));
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_staged")).isZero();
        // The handler ran; its outcome commits right after it returns.
        Await.until("all four recorded done", WAIT, () -> Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'done'") == 4);
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item")).isEqualTo(4);
    }

    @Test
    void handlersThatLeaveTheirThreadInterruptedDoNotStopTheWorkers() throws Exception {
        // Both workers (work.concurrency 2) run a handler that returns with its thread's interrupt flag set.
        interrupting.add(BOT + ":1");
        interrupting.add(BOT + ":2");
        startDispatcher(3);
        store(1, 1);
        store(2, 2);
        Await.until("the interrupting items handled", WAIT, () -> handled.containsAll(List.of(BOT + ":1", BOT + ":2")));
        Await.until("both items recorded done", WAIT, () -> Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'done'") == 2);
        // Each worker goes idle (waits for work) at least once before new work arrives.
        Await.until("both workers waiting for work", WAIT, () -> workersWaiting(camel) == 2);

        store(3, 3, 4);
        Await.until("work stored later handled", WAIT, () -> handled.containsAll(List.of(BOT + ":3", BOT + ":4")));
    }

    @Test
    void runsLeftInASliceEndedByAnUnexpectedFailureGoBackAtOnceInsteadOfWaitingForTheClaim() throws Exception {
        // Loading the first run's rows throws what no source should; the run after it in the same slice must not wait.
        AtomicInteger loads = new AtomicInteger();
        WorkSource breaksOnce = WorkerParts.breaksOnce("breaks-once", loads);
        try (Connection c = dataSource.getConnection()) {
            WorkQueue.schedule(c, List.of(new WorkQueue.NewWork("breaks-once", "first", 1, "chat-a"),
                    new WorkQueue.NewWork("breaks-once", "second", 2, "chat-b")));
        }
        WebhookServer product = WebhookServer.builder(dataSource).withoutHttp()
                .routes(new RouteBuilder() {
                    @Override
                    public void configure() {
                        from("work:breaks-once").process(e -> handled.add(e.getMessage().getBody(String.class)));
                    }
                })
                .bean("breaksOnce", breaksOnce)
                // One worker takes both runs as one slice; a claim outlasts the test, so only giving back is fast enough.
                .setting("work.concurrency", "1")
                .setting("work.claim-seconds", "120")
                .setting("work.poll-interval-millis", "50")
                .start();
        products.add(product);
        // The failed run stays claimed until its claim expires, its attempt counted, as after a crash.
        Await.until("the run after the failing one done", Duration.ofSeconds(20), () -> "done 1,running 1".equals(
                Sql.string(dataSource, "SELECT string_agg(state || ' ' || attempts, ',' ORDER BY state) FROM work_item")));
        assertThat(loads.get()).isEqualTo(2);
        assertThat(handled).hasSize(1).containsAnyOf("first", "second");
    }

    @Test
    void aHandlerFailingTwiceIsDoneAfterThreeAttemptsWithBackoffBetween() throws Exception {
        failuresLeft.put(BOT + ":1", new AtomicInteger(2));
        store(1, 1);
        startDispatcher(5);

        Await.until("condition", WAIT, () -> handled.contains(BOT + ":1"));
        Await.until("condition", WAIT, () -> "done".equals(Sql.string(dataSource, "SELECT state FROM work_item")));
        assertThat(Sql.count(dataSource, "SELECT attempts FROM work_item")).isEqualTo(3);
        assertThat(attemptTimes).hasSize(3);
        // Backoff waits at least half of base * 2^(n-1): 100 ms, then 200 ms.
        assertThat(Duration.between(attemptTimes.get(0), attemptTimes.get(1))).isGreaterThanOrEqualTo(Duration.ofMillis(100));
        assertThat(Duration.between(attemptTimes.get(1), attemptTimes.get(2))).isGreaterThanOrEqualTo(Duration.ofMillis(200));
    }

    @Test
    void aHandlerThatAlwaysFailsIsParkedAfterTheMaximumWithItsError() throws Exception {
        failuresLeft.put(BOT + ":7", new AtomicInteger(Integer.MAX_VALUE));
        store(1, 7);
        startDispatcher(3);

        Await.until("condition", WAIT, () -> "parked".equals(Sql.string(dataSource, "SELECT state FROM work_item")));
        assertThat(Sql.count(dataSource, "SELECT attempts FROM work_item")).isEqualTo(3);
        assertThat(Sql.string(dataSource, "SELECT last_error FROM work_item")).contains("handler failure for 31:7");
        store(2, 8);
        Await.until("an item stored later handled", WAIT, () -> handled.contains(BOT + ":8"));
        assertThat(attemptTimes).as("a parked item does not run again: its three attempts and the later item's").hasSize(4);
        assertThat(Sql.count(dataSource, "SELECT attempts FROM work_item WHERE source_key = '31:7'")).isEqualTo(3);
    }

    @Test
    void anItemDeferredTwentyTimesByLimitsIsNotParkedAndItsAttemptCountIsUnchanged() throws Exception {
        deferralsLeft.put(BOT + ":40", new AtomicInteger(20));
        store(400, 40, 41);
        store(401, 42);
        startDispatcher(3);

        Await.until("the deferred chat's items done", WAIT, () -> handled.containsAll(List.of(BOT + ":40", BOT + ":41")));
        assertThat(attemptsSeenWhileDeferred).as("every deferred run was the first attempt").hasSize(20).containsOnly(1);
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'parked'")).isZero();
        assertThat(Sql.count(dataSource, "SELECT attempts FROM work_item WHERE source_key = '" + BOT + ":40'"))
                .as("twenty deferrals, then one attempt").isEqualTo(1);
        assertThat(Sql.string(dataSource, "SELECT last_error FROM work_item WHERE source_key = '" + BOT + ":40'")).isNull();
        assertThat(handled.indexOf(BOT + ":40")).as("its chat's order held").isLessThan(handled.indexOf(BOT + ":41"));
        assertThat(handled.indexOf(BOT + ":42")).as("the other chat was not held").isLessThan(handled.indexOf(BOT + ":40"));
        MeterRegistry registry = MeterRegistryLookup.of(camel);
        assertThat(registry.get("chat_intake_work_deferrals").tag("kind", "telegram-update").tag("reason", "chat_limit")
                .counter().count()).isEqualTo(20);
    }

    @Test
    void perChatOrderHoldsUnderRetriesAndAFailingHeadHoldsOnlyItsChat() throws Exception {
        failuresLeft.put(BOT + ":1", new AtomicInteger(2));
        store(100, 1, 2, 3);
        store(200, 4);
        startDispatcher(5);

        Await.until("condition", WAIT, () -> handled.size() == 4);
        List<String> chat100 = handled.stream().filter(k -> List.of(BOT + ":1", BOT + ":2", BOT + ":3").contains(k)).toList();
        assertThat(chat100).containsExactly(BOT + ":1", BOT + ":2", BOT + ":3");
        assertThat(handled.indexOf(BOT + ":4")).as("the other chat is not held").isLessThan(handled.indexOf(BOT + ":1"));
    }

    @Test
    void aTelegramUpdateRedeliveredAfterACrashDoesNotRunItsHandlerAgain() throws Exception {
        store(5, 10, 11);
        startDispatcher(3);
        Await.until("condition", WAIT, () -> handled.size() == 2);

        TelegramUpdateStore.StoredBatch again = store(5, 10, 11);

        assertThat(again.stored()).isEmpty();
        store(5, 12);
        Await.until("the chat's next update handled", WAIT, () -> handled.contains(BOT + ":12"));
        assertThat(handled).containsExactly(BOT + ":10", BOT + ":11", BOT + ":12");
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item")).isEqualTo(3);
    }

    @Test
    void aDoneEffectIsNeverRepeatedAndAnUnconfirmedOneIsParkedForReconciliation() throws Exception {
        startDispatcher(5);
        var producer = camel.createProducerTemplate();
        producer.sendBodyAndHeaders("direct:guarded", "x", Map.of(WorkDispatcher.IDEMPOTENCY_KEY, "k1"));
        producer.sendBodyAndHeaders("direct:guarded", "x", Map.of(WorkDispatcher.IDEMPOTENCY_KEY, "k1"));
        assertThat(effectsPerformed.get()).as("done once, skipped the second time").isEqualTo(1);

        var crashed = producer.send("direct:guarded", e -> {
            e.getMessage().setHeader(WorkDispatcher.IDEMPOTENCY_KEY, "k2");
            e.getMessage().setHeader("CrashAfterEffect", true);
        });
        assertThat(crashed.getException()).hasMessageContaining("died after the effect");
        var rerun = producer.send("direct:guarded", e -> e.getMessage().setHeader(WorkDispatcher.IDEMPOTENCY_KEY, "k2"));

        assertThat(rerun.getException()).isInstanceOf(EffectGuard.UnconfirmedEffectException.class)
                .hasMessageContaining("k2:effect was started but never recorded done");
        assertThat(effectsPerformed.get()).isEqualTo(2);
        var downstreamIdempotent = producer.send("direct:guarded", e -> {
            e.getMessage().setHeader(WorkDispatcher.IDEMPOTENCY_KEY, "k2");
            e.getMessage().setHeader(EffectGuard.IDEMPOTENT_DOWNSTREAM, true);
        });
        assertThat(downstreamIdempotent.getException()).isNull();
        assertThat(Sql.string(dataSource, "SELECT state FROM outbound_effect WHERE effect_key = 'k2:effect'")).isEqualTo("done");
    }

    @Test
    void retryAndReplayDoWhatTheySayAndNothingMore() throws Exception {
        failuresLeft.put(BOT + ":1", new AtomicInteger(1));
        store(1, 1);
        store(2, 2);
        startDispatcher(1);
        Await.until("condition", WAIT, () -> "parked".equals(Sql.string(dataSource, "SELECT state FROM work_item WHERE source_key = '31:1'")));
        Await.until("condition", WAIT, () -> "done".equals(Sql.string(dataSource, "SELECT state FROM work_item WHERE source_key = '31:2'")));
        WorkQueue queue = new WorkQueue(dataSource);

        assertThat(queue.retry(null)).isEqualTo(1);
        Await.until("condition", WAIT, () -> "done".equals(Sql.string(dataSource, "SELECT state FROM work_item WHERE source_key = '31:1'")));
        assertThat(handled).containsExactlyInAnyOrder(BOT + ":1", BOT + ":2");

        assertThat(queue.replay("some-other-kind", Instant.EPOCH)).isZero();
        assertThat(queue.replay("telegram-update", Instant.now().plusSeconds(60))).isZero();
        assertThat(queue.replay("telegram-update", Instant.EPOCH)).isEqualTo(2);
        Await.until("condition", WAIT, () -> handled.size() == 4);
        assertThat(handled).containsExactlyInAnyOrder(BOT + ":1", BOT + ":2", BOT + ":1", BOT + ":2");
    }

    @Test
    void aHandlerSlowerThanTheClaimRunsOnceBecauseItsClaimIsExtendedAndItsOutcomeCounts() throws Exception {
        held.add(BOT + ":1");
        store(1, 1);
        store(2, 2);
        // A 1 s claim, extended every third of it; the handler runs 2.5 s while another thread looks for work.
        WebhookServer product = WebhookServer.builder(dataSource).withoutHttp().routes(handlerRoutes(true))
                .setting("work.concurrency", "2")
                .setting("work.claim-seconds", "1")
                .setting("work.heartbeat-seconds", "1")
                .setting("work.poll-interval-millis", "50")
                .start();
        products.add(product);
        Await.until("the other item handled and the slow one started", WAIT, () -> handled.contains(BOT + ":2") && attemptTimes.size() == 2);
        Await.throughout("the slow item running on its first attempt past its claim's length", Duration.ofMillis(2500),
                () -> runningOnItsFirstAttempt(BOT + ":1"));
        release.countDown();

        Await.until("the slow item done", WAIT, () -> "done".equals(Sql.string(dataSource, "SELECT state FROM work_item WHERE source_key = '31:1'")));
        assertThat(handled).containsExactlyInAnyOrder(BOT + ":1", BOT + ":2");
        assertThat(Sql.count(dataSource, "SELECT attempts FROM work_item WHERE source_key = '31:1'")).isEqualTo(1);
        assertThat(attemptTimes).as("one attempt per item").hasSize(2);
    }

    @Test
    void aHandlerWhoseCallbackNeverComesIsGivenUpOnAfterTheClaimTimeAndItsWorkerGoesOn() throws Exception {
        unanswered.add(BOT + ":1");
        unanswered.add(BOT + ":2");
        store(1, 1, 3);
        store(2, 2);
        try (LogCapture log = new LogCapture()) {
            // The two lost callbacks stay in flight for good: the product's stop would wait its whole shutdown timeout for them.
            startDispatcher(5, "work.claim-seconds", "2", "camel.main.shutdown-timeout", "1");

            Await.until("both chats handled after their first attempts were given up on", WAIT,
                    () -> handled.containsAll(List.of(BOT + ":1", BOT + ":2", BOT + ":3")));
            assertThat(handled).as("each once, the first chat in order").containsSubsequence(BOT + ":1", BOT + ":3").hasSize(3);
            assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE attempts = 2")).as("the given-up attempts counted").isEqualTo(2);
            assertThat(log.lines()).filteredOn(line -> line.contains("no answer from the handler within 2 s"))
                    .as("one line each, naming the route and the step").hasSize(2)
                    .allSatisfy(line -> assertThat(line).contains("route telegram-update-test, step never-answers"));
        }
    }

    @Test
    void aRunRecordedWhileItsSliceGoesOnIsNoLongerExtendedSoItsRunnerNeverSeesItsOwnClaimLost() throws Exception {
        paced.add(BOT + ":1");
        held.add(BOT + ":2");
        store(1, 1);
        store(2, 2);
        try (LogCapture log = new LogCapture()) {
            // One worker takes both chats in one slice: the first is recorded while the second's handler runs on,
            // across several extensions of a 1 s claim.
            startDispatcher(3, "work.concurrency", "1", "work.claim-seconds", "1", "work.heartbeat-seconds", "1");
            Await.until("the second chat's handler started", WAIT, () -> attemptTimes.size() == 2);
            Await.throughout("the second chat running on its first attempt across extensions of its claim", Duration.ofMillis(2500),
                    () -> runningOnItsFirstAttempt(BOT + ":2"));
            release.countDown();

            Await.until("both chats done", WAIT, () -> Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'done'") == 2);
            assertThat(Sql.count(dataSource, "SELECT max(attempts) FROM work_item")).isEqualTo(1);
            assertThat(log.lines()).noneMatch(line -> line.contains("released or taken over"));
        }
    }

    @Test
    void chatsClaimedWithASlowChatAreHandledByOtherWorkersWhileItsHandlerRuns() throws Exception {
        held.add(BOT + ":1");
        store(1, 1);
        // Five more chats become due after the slow one: one claim takes all six, and with two
        // workers the slow chat's worker takes three of them.
        store(2, 2);
        store(3, 3);
        store(4, 4);
        store(5, 5);
        store(6, 6);
        startDispatcher(3);

        List<String> fast = List.of(BOT + ":2", BOT + ":3", BOT + ":4", BOT + ":5", BOT + ":6");
        // The chats queued behind the slow handler go to the other worker once it counts as stalled.
        Await.until("every fast chat handled while the slow handler runs", WAIT, () -> handled.containsAll(fast));
        assertThat(handled).doesNotContain(BOT + ":1");
        release.countDown();
        Await.until("the slow chat done", WAIT, () -> handled.contains(BOT + ":1"));
        assertThat(handled).hasSize(6);
    }

    /** An intake that keeps telling the dispatcher it is behind its source, as a poller taking full batches does, until closed. */
    private static final class IntakeBehind implements AutoCloseable {
        private final Thread thread;

        IntakeBehind(WorkDispatcher dispatcher) {
            this(dispatcher::intakeBehind);
        }

        /** Says {@code hint} every 20 ms until closed, as intake does while it stays behind. */
        IntakeBehind(Runnable hint) {
            thread = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    hint.run();
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "intake-behind");
            thread.start();
        }

        @Override
        public void close() throws InterruptedException {
            thread.interrupt();
            thread.join();
        }
    }

    @Test
    void whileIntakeIsBehindOneWorkerHandlesAndBothDoOnceItCaughtUp() throws Exception {
        startDispatcher(3);
        try (IntakeBehind behind = new IntakeBehind(WorkDispatcher.of(camel))) {
            assertThat(mostHandlersAtOnceForTwoChats(1)).as("handlers at once while intake is behind").isEqualTo(1);
        }
        // Caught up: both workers again, as soon as the last hint is older than INTAKE_BEHIND.
        awaitIntakeCaughtUp();
        assertThat(mostHandlersAtOnceForTwoChats(3)).as("handlers at once once intake caught up").isEqualTo(2);
    }

    @Test
    void whileIntakeIsBehindTheHeartbeatSaysSinceWhenHandlingIsHeldBackAndOnceCaughtUpItNoLongerDoes() throws Exception {
        startDispatcher(3, "work.heartbeat-seconds", "1");
        Instant before = Instant.now();
        try (IntakeBehind behind = new IntakeBehind(WorkDispatcher.of(camel))) {
            Await.until("a beat saying handling is held back", WAIT,
                    () -> Sql.count(dataSource, "SELECT count(*) FROM runner_heartbeat WHERE held_back_since IS NOT NULL") == 1);
            long sinceMillis = Sql.count(dataSource, "SELECT (extract(epoch FROM held_back_since) * 1000)::bigint FROM runner_heartbeat");
            Await.until("a later beat", WAIT, () -> Sql.count(dataSource,
                    "SELECT count(*) FROM runner_heartbeat WHERE beat_at > held_back_since + interval '1500 milliseconds'") == 1);
            assertThat(Sql.count(dataSource, "SELECT (extract(epoch FROM held_back_since) * 1000)::bigint FROM runner_heartbeat"))
                    .as("the same spell, as each beat tells it").isCloseTo(sinceMillis, Offset.offset(200L));
            assertThat(WorkDispatcher.of(camel).handlingHeldBackSince()).isAfterOrEqualTo(before);
        }
        Await.until("a beat saying it no longer is", WAIT,
                () -> Sql.count(dataSource, "SELECT count(*) FROM runner_heartbeat WHERE held_back_since IS NULL") == 1);
    }

    private void awaitIntakeCaughtUp() {
        Await.until("intake's last hint aged out", WAIT, () -> WorkDispatcher.of(camel).handlingHeldBackSince() == null);
    }

    /** Two chats whose handlers take {@link #PACE_MILLIS}, each with its own worker (no more runs than workers) unless intake is behind. */
    private int mostHandlersAtOnceForTwoChats(long firstUpdate) throws Exception {
        mostAtOnce.set(0);
        List<String> keys = List.of(BOT + ":" + firstUpdate, BOT + ":" + (firstUpdate + 1));
        paced.addAll(keys);
        store(firstUpdate, firstUpdate);
        store(firstUpdate + 1, firstUpdate + 1);
        Await.until("both chats handled", WAIT, () -> handled.containsAll(keys));
        return mostAtOnce.get();
    }

    @Test
    void whileIntakeIsBehindTheWorkerLeftClaimsAtMostOncePerPacingWait() throws Exception {
        startDispatcher(3, "work.gather-millis-while-intake-behind", "1000");
        try (IntakeBehind behind = new IntakeBehind(WorkDispatcher.of(camel))) {
            Duration apart = handlingApartForTwoChatsStoredOneAfterTheOther(1);
            assertThat(apart).as("the second chat's claim came after the pacing wait").isGreaterThanOrEqualTo(Duration.ofMillis(800));
        }
        awaitIntakeCaughtUp();
        assertThat(handlingApartForTwoChatsStoredOneAfterTheOther(3)).as("once intake caught up").isLessThan(Duration.ofMillis(500));
    }

    @Test
    void whileTheSourceHoldsABacklogClaimsArePacedHarderThanWhileIntakeIsOnlyBehind() throws Exception {
        startDispatcher(3, "work.gather-millis-while-intake-behind", "100", "work.gather-millis-while-backlog-at-source", "1500");
        WorkDispatcher dispatcher = WorkDispatcher.of(camel);
        try (IntakeBehind backlog = new IntakeBehind(dispatcher::backlogAtSource)) {
            assertThat(handlingApartForTwoChatsStoredOneAfterTheOther(1)).as("paced by work.gather-millis-while-backlog-at-source")
                    .isGreaterThanOrEqualTo(Duration.ofMillis(1200));
        }
        awaitIntakeCaughtUp();
        try (IntakeBehind behind = new IntakeBehind(dispatcher::intakeBehind)) {
            assertThat(handlingApartForTwoChatsStoredOneAfterTheOther(3)).as("paced by work.gather-millis-while-intake-behind alone")
                    .isLessThan(Duration.ofMillis(1000));
        }
    }

    @Test
    void aWorkerWaitingOutTheBacklogsPaceClaimsSoonAfterIntakeHasCaughtUp() throws Exception {
        startDispatcher(3, "work.gather-millis-while-backlog-at-source", "5000");
        try (IntakeBehind backlog = new IntakeBehind(WorkDispatcher.of(camel)::backlogAtSource)) {
            store(1, 1);
            Await.until("the first chat handled", WAIT, () -> handled.contains(BOT + ":1"));
            store(2, 2);
        }
        Instant caughtUp = Instant.now();
        Await.until("the second chat handled", WAIT, () -> handled.contains(BOT + ":2"));
        // The pace alone would hold the second claim until 5 s after the first.
        assertThat(Duration.between(caughtUp, attemptTimes.get(1))).isLessThan(Duration.ofMillis(2500));
    }

    @Test
    void aRunClaimedWhileThePacingHoldsItBackHasItsClaimExtendedNeverExpired() throws Exception {
        startDispatcher(3, "work.claim-seconds", "2", "work.heartbeat-seconds", "1");
        // One claim takes both chats; the pacing lets one worker work, so the second chat's run waits
        // queued, claimed, for longer than its 2 s claim while the first chat's fifteen handlers run.
        for (long update = 1; update <= 15; update++) {
            paced.add(BOT + ":" + update);
        }
        try (LogCapture log = new LogCapture(); IntakeBehind behind = new IntakeBehind(WorkDispatcher.of(camel))) {
            List<Long> expiredSeen = new CopyOnWriteArrayList<>();
            store(1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            store(2, 16);
            Await.until("both chats done", WAIT, () -> {
                expiredSeen.add(Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'running' AND claim_expires_at < now()"));
                return Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'done'") == 16;
            });
            assertThat(mostAtOnce.get()).as("one worker at a time while the pacing holds").isEqualTo(1);
            assertThat(expiredSeen).as("no claim seen expired").containsOnly(0L);
            assertThat(Sql.count(dataSource, "SELECT max(attempts) FROM work_item")).isEqualTo(1);
            assertThat(log.lines()).noneMatch(line -> line.contains("released or taken over"));
        }
    }

    @Test
    void aSourceThatReportsABacklogWithoutEndStillGetsItsWorkHandledWithinTheMaximumDeferral() throws Exception {
        startDispatcher(3, "work.intake-first-seconds", "2", "work.max-deferral-seconds", "4",
                "work.gather-millis-while-backlog-at-source", "60000");
        Duration load = Duration.ofSeconds(20);
        List<Duration> waits = new CopyOnWriteArrayList<>();
        try (IntakeBehind backlog = new IntakeBehind(WorkDispatcher.of(camel)::backlogAtSource)) {
            Instant end = Instant.now().plus(load);
            long update = 0;
            while (Instant.now().isBefore(end)) {
                // 20 updates a second over 10 chats, while the source says it holds more.
                for (int i = 0; i < 4; i++) {
                    update++;
                    store(100 + update % 10, update);
                }
                Thread.sleep(200);
                waits.add(Duration.ofMillis(Sql.count(dataSource, "SELECT coalesce((extract(epoch FROM now() - min(created_at)) * 1000)::bigint, 0)"
                        + " FROM work_item WHERE state <> 'done'")));
            }
            long stored = update;
            long handledDuringLoad = Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'done'");
            assertThat(handledDuringLoad).as("a fixed share handled while the source never caught up").isGreaterThanOrEqualTo(stored / 2);
        }
        assertThat(waits.stream().max(Duration::compareTo).orElseThrow()).as("oldest waiting, under max-deferral + 10 s")
                .isLessThan(Duration.ofSeconds(4 + 10));
    }

    /** Stores one chat's update, waits until it is handled, stores another chat's: the time between the two handlings. */
    private Duration handlingApartForTwoChatsStoredOneAfterTheOther(long firstUpdate) throws Exception {
        int before = attemptTimes.size();
        store(firstUpdate, firstUpdate);
        Await.until("the first chat handled", WAIT, () -> handled.contains(BOT + ":" + firstUpdate));
        store(firstUpdate + 1, firstUpdate + 1);
        Await.until("the second chat handled", WAIT, () -> handled.contains(BOT + ":" + (firstUpdate + 1)));
        return Duration.between(attemptTimes.get(before), attemptTimes.get(before + 1));
    }

    @Test
    void aHandlerStalledOnASlowCallDoesNotCountAgainstTheWorkersLeftWhileIntakeIsBehind() throws Exception {
        startDispatcher(3);
        held.add(BOT + ":1");
        store(1, 1);
        Await.until("the slow handler started", WAIT, () -> !attemptTimes.isEmpty());
        try (IntakeBehind behind = new IntakeBehind(WorkDispatcher.of(camel))) {
            store(2, 2);
            // Past the stall time (0.5 s) the other worker may take chat 2.
            Await.until("the other chat handled while the slow handler runs", WAIT, () -> handled.contains(BOT + ":2"));
            assertThat(handled).doesNotContain(BOT + ":1");
        }
        release.countDown();
        Await.until("the slow chat done", WAIT, () -> handled.contains(BOT + ":1"));
    }

    @Test
    void aKindWithoutAHandlerHereIsNeverClaimedHereAndRunsWhereItHasOne() throws Exception {
        store(3, 21);
        WorkSource later = WorkerParts.keyInBody("later");
        products.add(WebhookServer.builder(dataSource).withoutHttp().routes(handlerRoutes(false)).routes(new RouteBuilder() {
            @Override
            public void configure() {
                from("work:later").process(e -> handled.add(e.getMessage().getBody(String.class)));
            }
        }).bean("later", later).setting("work.poll-interval-millis", "50").start());
        // Due after the update: claiming it, the dispatcher has passed the update by.
        try (Connection c = dataSource.getConnection()) {
            WorkQueue.schedule(c, List.of(new WorkQueue.NewWork("later", "after-the-update", 1, "chat-later")));
        }
        Await.until("later work of a kind handled here", WAIT, () -> handled.contains("after-the-update"));
        assertThat(Sql.string(dataSource, "SELECT state || ' ' || attempts FROM work_item WHERE kind = 'telegram-update'"))
                .isEqualTo("pending 0");
        assertThat(attemptTimes).isEmpty();

        startProduct(3, true);
        Await.until("handled where a handler is configured", WAIT, () -> handled.contains(BOT + ":21"));
        Await.until("done", WAIT, () -> "done 1".equals(Sql.string(dataSource,
                "SELECT state || ' ' || attempts FROM work_item WHERE kind = 'telegram-update'")));
    }

    @Test
    void theDispatchersThreadsAreCamelsNamedAfterTheirJobAndStoppedWithTheContext() throws Exception {
        store(1, 51);
        WebhookServer product = startProduct(3, true);
        Await.until("handled", WAIT, () -> handled.contains(BOT + ":51"));
        Set<String> jobs = Set.of("work-dispatcher", "work-heartbeat", "work-staged-scheduler");
        String probe = product.context().getExecutorServiceManager().resolveThreadName("probe");
        String context = probe.substring(0, probe.indexOf(" thread #"));
        assertThat(workThreads(context)).as("named by Camel's ExecutorServiceManager after their job")
                .extracting(name -> name.substring(name.lastIndexOf(" - ") + 3)).containsAll(jobs).isSubsetOf(jobs);

        product.close();
        Await.until("the work threads shut down with the context", WAIT, () -> workThreads(context).isEmpty());
    }

    /** Dispatcher threads of this context waiting for work. */
    private static long workersWaiting(CamelContext camel) {
        String probe = camel.getExecutorServiceManager().resolveThreadName("probe");
        String context = probe.substring(0, probe.indexOf(" thread #"));
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith(context + " thread #") && t.getName().endsWith(" - work-dispatcher"))
                .filter(t -> t.getState() == Thread.State.TIMED_WAITING || t.getState() == Thread.State.WAITING).count();
    }

    private boolean runningOnItsFirstAttempt(String key) {
        return "running 1".equals(Sql.string(dataSource, "SELECT state || ' ' || attempts FROM work_item WHERE source_key = '" + key + "'"));
    }

    /** Camel names its threads "Camel (context) thread #n - name"; other test classes' contexts may share this JVM. */
    private static List<String> workThreads(String context) {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(name -> name.startsWith(context + " thread #") && name.contains(" - work-")).toList();
    }

    @Test
    void aStoppedDispatcherTakesItsDepthGaugesAlongSoTheNextOneOnTheSameRegistryShowsItsOwnCounts() throws Exception {
        store(1, 1);
        startDispatcher(3);
        MeterRegistry registry = MeterRegistryLookup.of(camel);
        Await.until("the depth gauge of the first dispatcher", WAIT,
                () -> registry.find("chat_intake_work_items").tag("kind", "telegram-update").gauge() != null);
        Await.until("handled", WAIT, () -> handled.contains(BOT + ":1"));

        WorkDispatcher.of(camel).stop();
        assertThat(registry.find("chat_intake_work_items").gauges()).as("a stopped dispatcher's gauges would shadow the next one's").isEmpty();

        // Held running until counted: a count taken only after it was done would find nothing unfinished.
        held.add(BOT + ":2");
        store(1, 2);
        WorkDispatcher next = new WorkDispatcher(camel, new WorkQueue(dataSource), List.of(new TelegramWorkSource()),
                WorkDispatcher.Options.from(Settings.of(Map.of("work.ordered-kinds", "telegram-update"))));
        next.start();
        try {
            Await.until("the next dispatcher's own count of the unfinished item", WAIT, () -> registry.find("chat_intake_work_items")
                    .tag("kind", "telegram-update").gauges().stream().mapToDouble(Gauge::value).sum() == 1);
            release.countDown();
            Await.until("handled by the next dispatcher", WAIT, () -> handled.contains(BOT + ":2"));
        } finally {
            next.stop();
        }
    }

    @Test
    void outcomesThatCouldNotBeRecordedWhileTheDatabaseWasAwayAreRecordedWhenItIsBackNotWhenTheClaimExpires() throws Exception {
        store(1, 41);
        held.add(BOT + ":41");
        AtomicReference<Instant> awayUntil = new AtomicReference<>(Instant.MIN);
        DataSource comesAndGoes = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection") && Instant.now().isBefore(awayUntil.get())) {
                        throw new SQLTransientConnectionException("injected: the database is away", "08001");
                    }
                    try {
                        return method.invoke(dataSource, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        camel = startProduct(3, false).context();
        // Only this test's dispatcher, over a database that comes and goes, runs the handler route.
        WorkDispatcher.of(camel).stop();
        camel.getRouteController().startRoute("telegram-update-test");
        WorkDispatcher dispatcher = new WorkDispatcher(camel, new WorkQueue(comesAndGoes),
                List.of(new TelegramWorkSource()), WorkDispatcher.Options.from(Settings.of(Map.of(
                        "work.ordered-kinds", "telegram-update", "work.claim-seconds", "60"))));
        dispatcher.start();
        try {
            Await.until("the handler started", WAIT, () -> !attemptTimes.isEmpty());
            // Longer than the first few attempts at recording (0.5, 1 and 1.5 s apart) after the handler returns.
            Instant back = Instant.now().plusSeconds(6);
            awayUntil.set(back);
            release.countDown();
            Await.until("done", WAIT, () -> "done 1".equals(Sql.string(dataSource, "SELECT state || ' ' || attempts FROM work_item")));
            assertThat(Duration.between(back, Instant.now())).as("recorded within seconds of the database's return, not at the claim's expiry")
                    .isLessThan(Duration.ofSeconds(10));
            assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_lane WHERE claim_token IS NOT NULL")).isZero();
            assertThat(handled).containsExactly(BOT + ":41");
        } finally {
            dispatcher.stop();
        }
    }
}
