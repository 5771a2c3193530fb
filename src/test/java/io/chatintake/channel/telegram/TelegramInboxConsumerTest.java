package io.chatintake.channel.telegram;

import static io.chatintake.channel.telegram.TelegramIntake.FAST;
import static io.chatintake.channel.telegram.TelegramIntake.count;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.chatintake.sim.AdjustableClock;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.BotApiSimulator.Fault;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.LostCommitAnswers;
import io.chatintake.testkit.TestDatabase;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.camel.Exchange;
import org.apache.camel.health.HealthCheckHelper;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

@ExtendWith(TestDatabase.class)
class TelegramInboxConsumerTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    private BotApiSimulator simulator;
    private String token;
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();

    @BeforeEach
    void start() {
        simulator = BotApiSimulator.start();
        token = simulator.addBot(4242, "FAKE-test-token-not-real", "intake_test_bot");
        logs.start();
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(logs);
    }

    @AfterEach
    void stop() {
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(logs);
        simulator.close();
    }

    @Test
    void storesEveryUpdateOfEveryTypeAndAdvancesTheCheckpointBeforeConfirming() throws Exception {
        for (int i = 0; i < 230; i++) {
            simulator.enqueueText(token, 1000 + i % 7, "hello " + i);
        }
        simulator.enqueueMediaGroupPart(token, 77, "album-1", "photo-a", "first caption");
        simulator.enqueueMediaGroupPart(token, 77, "album-1", "photo-b", null);
        simulator.enqueueUnknownType(token, "future_update_kind");

        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("233 updates stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 233);
            Await.until("233 exchanges", WAIT, () -> intake.received.size() == 233);
            Await.until("the last batch confirmed", WAIT, () -> simulator.queued(token) == 0);
        }

        assertThat(count("SELECT next_offset FROM telegram_checkpoint WHERE bot_id = 4242")).isEqualTo(234);
        assertThat(count("SELECT count(*) FROM telegram_update WHERE update_type = 'future_update_kind'")).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM telegram_update WHERE payload->'message'->>'media_group_id' = 'album-1'")).isEqualTo(2);
        assertThat(simulator.violations()).isEmpty();
        assertThat(simulator.requests()).filteredOn(r -> r.offset() != null).allMatch(r -> r.offset() >= 0);
    }

    @Test
    void fullBatchesHoldTheHandlersBackUntilTheBotsBacklogIsTakenIn() throws Exception {
        for (int i = 0; i < 1_000; i++) {
            simulator.enqueueText(token, 2000 + i % 10, "backlog " + i);
        }
        AtomicInteger handled = new AtomicInteger();
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .workHandler(exchange -> handled.incrementAndGet()).route("main", FAST, false).start()) {
            Gauge allowed = intake.meters.get("chat_intake_work_workers_allowed").gauge();
            // Polls come back full (100) while the backlog lasts: one worker of two meanwhile.
            Await.until("one worker allowed while the backlog is taken in", WAIT, () -> allowed.value() == 1);
            Await.until("the backlog confirmed", WAIT, () -> simulator.queued(token) == 0);
            Await.until("both workers allowed once intake caught up", WAIT, () -> allowed.value() == 2);
            Await.until("every update handled", WAIT, () -> handled.get() == 1_000);
            assertThat(intake.received).as("handled as work, not on the consumer's thread: the intake route runs once per batch")
                    .allSatisfy(batch -> assertThat(batch.getMessage().getHeader("WorkKind")).isEqualTo("telegram-update"))
                    .extracting(batch -> batch.getMessage().getBody(Integer.class)).doesNotContainNull()
                    .satisfies(counts -> assertThat(counts.stream().mapToInt(Integer::intValue).sum()).isEqualTo(1_000));
        }
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void anAnswerThatQueuedForAThreadToStoreItHoldsTheHandlersBackForAMoment() throws Exception {
        AtomicInteger handled = new AtomicInteger();
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .workHandler(exchange -> handled.incrementAndGet()).route("main", FAST, false).start()) {
            Gauge allowed = intake.meters.get("chat_intake_work_workers_allowed").gauge();
            Await.until("polling", WAIT, () -> simulator.requests().stream().anyMatch(r -> r.method().equals("getUpdates")));
            ScheduledExecutorService steps = intake.camel.getComponent("telegram-inbox", TelegramInboxComponent.class).polling();
            CountDownLatch release = new CountDownLatch(1);
            for (int i = 0; i < TelegramInboxComponent.POLLING_THREADS; i++) {
                steps.execute(() -> {
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
            }
            simulator.enqueueText(token, 3000, "while every step thread is busy");
            // The long poll answers at once; its answer waits behind the busy threads.
            Await.throughout("nothing stored while every step thread is busy", BotPoller.ANSWER_QUEUED.multipliedBy(4),
                    () -> allowed.value() == 2);
            release.countDown();
            Await.until("one worker allowed once the queued answer is stored", WAIT, () -> allowed.value() == 1);
            Await.until("both workers again half a second later", WAIT, () -> allowed.value() == 2);
            Await.until("the update handled", WAIT, () -> handled.get() == 1);
        }
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void updatesJsonbRefusesAreStoredRawFlaggedConfirmedAndHandedOnWithTheRestOfTheirBatch() throws Exception {
        String nul = "{\"update_id\":%d,\"message\":{\"message_id\":91,\"date\":1,\"chat\":{\"id\":31,\"type\":\"private\"},"
                + "\"text\":\"nul \\u0000 inside\"}}";
        String surrogate = "{\"update_id\":%d,\"message\":{\"message_id\":92,\"date\":1,\"chat\":{\"id\":32,\"type\":\"private\"},"
                + "\"text\":\"half an emoji \\ud83d\"}}";
        for (int i = 0; i < 300; i++) {
            if (i == 100) {
                simulator.enqueueJson(token, id -> nul.formatted(id));
            } else if (i == 150) {
                simulator.enqueueJson(token, id -> surrogate.formatted(id));
            } else {
                simulator.enqueueText(token, 30 + i % 5, "m" + i);
            }
        }
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("300 updates stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 300);
            Await.until("300 exchanges", WAIT, () -> intake.received.size() == 300);
            Await.until("the last batch confirmed", WAIT, () -> simulator.queued(token) == 0);
            assertThat(intake.meters.counter("chat_intake_telegram_raw_updates", "bot", "main").count()).isEqualTo(2);

            List<Exchange> raw = intake.received.stream().filter(e -> e.getMessage().getHeader(TelegramInboxConstants.RAW_REASON) != null).toList();
            assertThat(raw).extracting(e -> e.getMessage().getHeader(TelegramInboxConstants.RAW_REASON))
                    .containsExactlyInAnyOrder("nul_character", "lone_surrogate");
            assertThat(raw).extracting(e -> e.getMessage().getBody(String.class))
                    .containsExactlyInAnyOrder(nul.formatted(101), surrogate.formatted(151));
            assertThat(raw).extracting(e -> e.getMessage().getHeader(TelegramInboxConstants.CHAT_ID)).containsExactlyInAnyOrder("31", "32");
        }
        assertThat(count("SELECT next_offset FROM telegram_checkpoint WHERE bot_id = 4242")).isEqualTo(301);
        assertThat(count("SELECT count(*) FROM telegram_update WHERE stored_raw")).isEqualTo(2);
        assertThat(count("SELECT count(*) FROM telegram_update WHERE stored_raw AND update_id IN (101, 151) AND payload IS NULL"
                + " AND raw_payload LIKE '%\\\\u%' AND raw_reason IN ('nul_character', 'lone_surrogate')")).isEqualTo(2);
        assertThat(count("SELECT count(DISTINCT update_id) FROM telegram_update")).isEqualTo(300);
        assertThat(simulator.violations()).isEmpty();
        assertThat(messages()).anyMatch(m -> m.contains("update 151 cannot be stored as jsonb (lone_surrogate); stored raw"));
    }

    @Test
    void whatJsonbRefusesBeyondTheScanIsFoundByAskingPostgresAndStoredRawToo() throws Exception {
        // Valid JSON, no NUL, no surrogate, yet beyond jsonb's numeric range.
        String huge = "{\"update_id\":%d,\"message\":{\"message_id\":93,\"date\":1,\"chat\":{\"id\":33,\"type\":\"private\"},"
                + "\"n\":1e1000000}}";
        simulator.enqueueText(token, 33, "before");
        simulator.enqueueJson(token, id -> huge.formatted(id));
        simulator.enqueueText(token, 33, "after");
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("3 updates stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 3);
            Await.until("3 exchanges", WAIT, () -> intake.received.size() == 3);
            Await.until("confirmed", WAIT, () -> simulator.queued(token) == 0);
        }
        assertThat(count("SELECT count(*) FROM telegram_update WHERE stored_raw AND update_id = 2 AND raw_reason = 'jsonb_rejected_22003'"))
                .isEqualTo(1);
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void everyUpdateTypeIsAskedForByNameSoTheOptInTypesArrive() throws Exception {
        // What happened before: a poll without allowed_updates keeps Telegram's default, which withholds these.
        new BotApiClient(simulator.url(), io.chatintake.config.Secret.of(token)).getUpdates(0, 1, 0, List.of());
        BotApiSimulator.OPT_IN_TYPES.forEach(type -> assertThat(simulator.enqueue(token, id -> updateOf(type, 61))).isEqualTo(-1));
        assertThat(simulator.withheld(token)).isEqualTo(3);

        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("a poll naming the types", WAIT, () -> simulator.requests().stream().anyMatch(r -> r.allowedUpdates() != null));
            BotApiSimulator.OPT_IN_TYPES.forEach(type -> simulator.enqueue(token, id -> updateOf(type, 61)));
            Await.until("the three stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 3);
        }
        assertThat(simulator.withheld(token)).isEqualTo(3);
        assertThat(count("SELECT count(DISTINCT update_type) FROM telegram_update WHERE update_type IN"
                + " ('chat_member', 'message_reaction', 'message_reaction_count')")).isEqualTo(3);
        List<BotApiSimulator.Request> polls = simulator.requests().stream()
                .filter(r -> r.method().equals("getUpdates")).skip(1).toList();
        assertThat(polls).isNotEmpty().allSatisfy(r -> assertThat(r.allowedUpdates()).isEqualTo(AllowedUpdates.ALL));
        assertThat(AllowedUpdates.ALL).hasSize(23).containsAll(BotApiSimulator.OPT_IN_TYPES);
        assertThat(messages()).noneMatch(m -> m.contains("asking Telegram only for update types"));
    }

    @Test
    void aNarrowedListOfUpdateTypesIsAskedForAndSaidOnceAtStart() throws Exception {
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .property("telegram.allowed-updates", " message , callback_query")
                .route("main", FAST, false).start()) {
            Await.until("a poll", WAIT, () -> simulator.requests().stream().anyMatch(r -> r.allowedUpdates() != null));
            assertThat(simulator.enqueue(token, id -> updateOf("chat_member", 62))).isEqualTo(-1);
            simulator.enqueueText(token, 62, "still asked for");
            Await.until("the text stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 1);
        }
        assertThat(simulator.requests()).filteredOn(r -> r.method().equals("getUpdates"))
                .allSatisfy(r -> assertThat(r.allowedUpdates()).containsExactly("message", "callback_query"));
        assertThat(messages()).filteredOn(m -> m.contains("telegram bot 'main': asking Telegram only for update types"
                + " [message, callback_query] (TELEGRAM_ALLOWED_UPDATES); these are never received: [edited_message,")).hasSize(1);
    }

    /**
     * A Bot API server without getWebhookInfo (telegram-test-api answers it 500): the check is
     * advisory, so polling long-polls as usual and the missing method is one line, not a failed poll
     * retried with backoff. With 1 s long polls, an empty getUpdates holds 1 s: more polls than the
     * elapsed time allows would mean the poller gave up waiting.
     */
    @ParameterizedTest
    @ValueSource(ints = {500, 404})
    void aServerWithoutGetWebhookInfoIsLongPolledAsUsualWithOneLineAboutIt(int status) throws Exception {
        simulator.dropMethod("getWebhookInfo", status);
        simulator.enqueueText(token, 63, "polled without a webhook check");
        Instant since;
        Instant until;
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", "?timeout=1&leaseSeconds=10&backoffBaseMillis=50&backoffCapMillis=400", false).start()) {
            Await.until("the text stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 1);
            since = Instant.now();
            Await.until("four more polls", WAIT, () -> getUpdatesSince(since) >= 4);
            until = Instant.now();
            assertThat(intake.meters.scrape()).as("no failed poll counted")
                    .contains("chat_intake_telegram_poll_errors_total{bot=\"main\",kind=\"server_5xx\"} 0.0")
                    .contains("chat_intake_telegram_poll_errors_total{bot=\"main\",kind=\"unauthorized\"} 0.0");
        }
        long polls = getUpdatesSince(since) - simulator.requests().stream()
                .filter(r -> r.method().equals("getUpdates") && r.at().isAfter(until)).count();
        assertThat(polls).as("long polls of 1 s each").isLessThanOrEqualTo(Duration.between(since, until).toSeconds() + 2);
        assertThat(simulator.requests()).filteredOn(r -> r.method().equals("getWebhookInfo")).as("once, at the lease take").hasSize(1);
        assertThat(messages()).filteredOn(m -> m.contains("getWebhookInfo failed")).hasSize(1).first().asString()
                .contains("polling goes on").contains("checked again every 60 s");
        assertThat(messages()).noneMatch(m -> m.contains("Bot API call failed"));
    }

    private long getUpdatesSince(Instant since) {
        return simulator.requests().stream().filter(r -> r.method().equals("getUpdates") && !r.at().isBefore(since)).count();
    }

    private static com.fasterxml.jackson.databind.node.ObjectNode updateOf(String type, long chatId) {
        com.fasterxml.jackson.databind.node.ObjectNode update = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
        update.putObject(type).put("date", 1).putObject("chat").put("id", chatId).put("type", "group");
        return update;
    }

    @Test
    void exchangesCarryTheUpdateAndAnIdempotencyKeyAndAFailingRouteLosesNothing() throws Exception {
        simulator.enqueueText(token, 5, "one");
        simulator.enqueueText(token, 5, "two");
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, true).start()) {
            Await.until("two exchanges", WAIT, () -> intake.received.size() == 2);
            Await.until("confirmed", WAIT, () -> simulator.queued(token) == 0);
            assertThat(intake.received.get(0).getMessage().getHeader(io.chatintake.work.WorkDispatcher.IDEMPOTENCY_KEY)).isEqualTo("4242:1");
            assertThat(intake.received.get(1).getMessage().getHeader(TelegramInboxConstants.UPDATE_TYPE)).isEqualTo("message");
            assertThat(intake.received.get(1).getMessage().getBody(String.class)).contains("\"text\":\"two\"");
        }
        assertThat(count("SELECT count(*) FROM telegram_update")).isEqualTo(2);
        Await.until("the failure is reported", WAIT, () -> messages().stream().anyMatch(m -> m.contains("route failed for update 2") && m.contains("stays stored")));
    }

    @Test
    void serverErrorsRateLimitsAndDroppedAnswersNeitherLoseNorDuplicate() throws Exception {
        simulator.enqueueText(token, 9, "a");
        simulator.injectFault(token, Fault.serverError());
        simulator.injectFault(token, Fault.rateLimit(1));
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("first stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 1);
            // The next poll confirms update 1, then its answer is lost: the poller must poll again.
            simulator.injectFault(token, Fault.dropAfterApply());
            simulator.enqueueText(token, 9, "b");
            simulator.enqueueText(token, 9, "c");
            Await.until("all stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 3);
            Await.until("all confirmed", WAIT, () -> simulator.queued(token) == 0);
        }
        List<BotApiSimulator.Request> polls = simulator.requests().stream().filter(r -> r.method().equals("getUpdates")).toList();
        int rateLimited = 1; // the second getUpdates answered 429 with retry_after = 1
        assertThat(Duration.between(polls.get(rateLimited).at(), polls.get(rateLimited + 1).at())).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
        assertThat(messages()).anyMatch(m -> m.contains("rate limited by Telegram, waiting retry_after = 1 s"));
        assertThat(messages()).anyMatch(m -> m.contains("Bot API call failed (500"));
        assertThat(count("SELECT duplicate_count FROM telegram_checkpoint")).isZero();
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void aRejectedTokenStopsOnlyThatBot() throws Exception {
        simulator.enqueueText(token, 1, "for the good bot");
        try (TelegramIntake intake = new TelegramIntake(simulator)
                .property("telegram.bot-token", token)
                .property("telegram.bots.revoked.token", "999:FAKE-revoked-token")
                .route("main", FAST, false).route("revoked", FAST, false).start()) {
            Await.until("the good bot stores", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 1);
            Await.until("the rejection is reported", WAIT, () -> messages().stream().anyMatch(m -> m.contains("telegram bot 'revoked': the Bot API rejected the token (401")));
        }
        assertThat(messages()).filteredOn(m -> m.contains("rejected the token")).hasSize(1);
        assertThat(messages()).noneMatch(m -> m.contains("FAKE-revoked-token"));
    }

    @Test
    void eachBotsHealthSaysWhatItsPollerDoesWithoutBeingPartOfReadiness() throws Exception {
        try (TelegramIntake intake = new TelegramIntake(simulator)
                .property("telegram.bot-token", token)
                .property("telegram.bots.revoked.token", "999:FAKE-revoked-token")
                .route("main", FAST, false).route("revoked", FAST, false).route("idle", FAST, false).start()) {
            Await.until("main polls, revoked is stopped", WAIT, () -> health(intake, "telegram-bot-main").contains("UP telegram bot 'main': polling since")
                    && health(intake, "telegram-bot-revoked").contains("DOWN telegram bot 'revoked': stopped: unauthorized since"));
            assertThat(health(intake, "telegram-bot-revoked")).contains("fix TELEGRAM_BOTS_REVOKED_TOKEN").doesNotContain("FAKE-revoked-token");
            assertThat(health(intake, "telegram-bot-idle")).contains("UP telegram bot 'idle': off since").contains("TELEGRAM_BOTS_IDLE_TOKEN");

            failEveryPoll();
            Await.until("main backs off", WAIT, () -> health(intake, "telegram-bot-main").contains("DOWN telegram bot 'main': backing off since"));
            String since = health(intake, "telegram-bot-main").replaceAll(".* since (\\S+) .*", "$1");
            long polls = getUpdatesCalls();
            Await.until("failing on", WAIT, () -> getUpdatesCalls() > polls + 2);
            assertThat(health(intake, "telegram-bot-main")).as("since the first failure").contains("backing off since " + since + " (500");

            assertThat(HealthCheckHelper.invokeReadiness(intake.camel, "full")).extracting(r -> r.getCheck().getId())
                    .noneMatch(id -> id.startsWith("telegram-bot-"));
            assertThat(HealthCheckHelper.invokeLiveness(intake.camel, "full")).extracting(r -> r.getCheck().getId())
                    .noneMatch(id -> id.startsWith("telegram-bot-"));
            simulator.clearFaults(token);
            Await.until("main polls again", WAIT, () -> health(intake, "telegram-bot-main").contains("UP telegram bot 'main': polling since"));
        }
    }

    /** "UP message" of one check as the full exposure level shows it, or "" when it is not registered. */
    private static String health(TelegramIntake intake, String id) {
        return HealthCheckHelper.invoke(intake.camel, "full").stream().filter(r -> r.getCheck().getId().equals(id))
                .map(r -> r.getState() + " " + r.getMessage().orElse("")).findFirst().orElse("");
    }

    @Test
    void aBotWithoutTokenStaysOffAndSaysSoOnce() throws Exception {
        try (TelegramIntake intake = new TelegramIntake(simulator).route("main", FAST, false).start()) {
            assertThat(messages()).filteredOn(m -> m.contains("telegram bot 'main': no token configured (TELEGRAM_BOT_TOKEN); polling is off")).hasSize(1);
        }
        assertThat(simulator.requests()).isEmpty();
    }

    @Test
    void aSetWebhookStopsPollingWithTheSwitchCommandAndNeverDeletesIt() throws Exception {
        simulator.setWebhook(token, "https://example.invalid/hook");
        simulator.enqueueText(token, 1, "queued while webhook set");
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("the refusal is reported", WAIT, () -> messages().stream().anyMatch(m -> m.contains("switch-to-polling --bot main")));
        }
        assertThat(simulator.requests()).noneMatch(r -> r.method().equals("getUpdates") || r.method().equals("deleteWebhook"));
        assertThat(simulator.queued(token)).isEqualTo(1);
    }

    @Test
    void idsThatRestartBelowTheCheckpointAreFollowedAndNeverDroppedAsDuplicates() throws Exception {
        simulator.enqueueText(token, 3, "before the idle week 1");
        simulator.enqueueText(token, 3, "before the idle week 2");
        simulator.enqueueText(token, 3, "before the idle week 3");
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("three stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 3);
            Await.until("confirmed", WAIT, () -> simulator.queued(token) == 0);
            simulator.jumpIds(token, 2);
            simulator.enqueueText(token, 3, "after: reuses id 2");
            simulator.enqueueText(token, 3, "after: reuses id 3");
            Await.until("five stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 5);
            Await.until("confirmed again", WAIT, () -> simulator.queued(token) == 0);
        }
        assertThat(count("SELECT count(*) FROM telegram_update WHERE generation = 1 AND update_id IN (2, 3)")).isEqualTo(2);
        assertThat(count("SELECT next_offset FROM telegram_checkpoint")).isEqualTo(4);
        assertThat(messages()).filteredOn(m -> m.contains("update ids restarted below the checkpoint")).hasSize(1);
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void aBatchWhoseCommitAnswerWasLostStillGetsItsWorkItems() throws Exception {
        LostCommitAnswers database = new LostCommitAnswers(TestDatabase.dataSource());
        simulator.enqueueText(token, 8, "before");
        try (TelegramIntake intake = new TelegramIntake(simulator, Clock.systemUTC(), database).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("the first update scheduled", WAIT, () -> count("SELECT count(*) FROM work_item WHERE kind = 'telegram-update'") == 1);
            database.loseNext(1, "INSERT INTO telegram_update");
            simulator.enqueueText(token, 8, "committed, answer lost");
            Await.until("the batch committed without an answer", WAIT, () -> database.armed() == 0);
            Await.until("polled again and confirmed", WAIT, () -> simulator.queued(token) == 0);
            simulator.enqueueText(token, 8, "after");
            Await.until("three stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 3);
            Await.until("scheduled through the last", WAIT, () -> count("""
                    SELECT count(*) FROM telegram_schedule_checkpoint c
                     WHERE c.scheduled_through >= (SELECT max(id) FROM telegram_update)""") == 1);
        }
        assertThat(count("""
                SELECT count(*) FROM telegram_update u
                 WHERE NOT EXISTS (SELECT 1 FROM work_item w WHERE w.kind = 'telegram-update' AND w.source_id = u.id)"""))
                .as("every stored update has its work item").isZero();
        assertThat(count("SELECT count(*) FROM work_item WHERE kind = 'telegram-update'")).isEqualTo(3);
    }

    @Test
    void updatesAnotherCallerConfirmedBetweenTwoOfOurPollsAreRecordedAsAGapOnce() throws Exception {
        for (int i = 0; i < 3; i++) {
            simulator.enqueueText(token, 6, "ours " + i);
        }
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("three stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 3);
        }
        for (int i = 0; i < 5; i++) {
            simulator.enqueueText(token, 6, "later " + i); // ids 4..8
        }
        // A forgotten poller (or a manual call) asks with a higher offset: 4..6 are confirmed, unseen by us.
        new BotApiClient(simulator.url(), io.chatintake.config.Secret.of(token)).getUpdates(7, 100, 0, List.of());
        MeterRegistry registry;
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            registry = intake.meters;
            Await.until("7 and 8 stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 5);
            simulator.enqueueText(token, 6, "and on"); // id 9: no further gap
            Await.until("9 stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 6);
        }
        assertThat(new UpdateGap(TestDatabase.dataSource()).list(4242)).extracting(UpdateGap.Gap::describe)
                .containsExactly("updates 4..6 were confirmed outside this store");
        assertThat(messages()).filteredOn(m -> m.contains("were confirmed outside this store")).containsExactly(
                "telegram bot 'main': updates 4..6 were confirmed outside this store (a forgotten poller or a manual getUpdates"
                        + " with a higher offset); they never reached this inbox; recorded in telegram_gap");
        assertThat(registry.get("chat_intake_telegram_gaps").tag("bot", "main").counter().count()).isEqualTo(1.0);
        assertThat(simulator.violations()).as("the simulator saw the same three confirmed unstored")
                .containsExactly("getUpdates(offset=7) confirmed updates not stored: [4, 5, 6]");
    }

    @Test
    void aHigherIdAfterAWeekWithoutUpdatesIsAnIdRestartNotAGap() throws Exception {
        simulator.enqueueText(token, 6, "before the idle week");
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 1);
            Await.until("confirmed", WAIT, () -> simulator.queued(token) == 0);
        }
        try (Connection c = TestDatabase.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.executeUpdate("UPDATE telegram_checkpoint SET last_batch_at = now() - interval '8 days'");
        }
        simulator.jumpIds(token, 90_000);
        simulator.enqueueText(token, 6, "after the idle week");
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("stored after the restart", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 2);
        }
        assertThat(count("SELECT count(*) FROM telegram_gap")).isZero();
        assertThat(count("SELECT next_offset FROM telegram_checkpoint")).isEqualTo(90_001);
    }

    @Test
    void twoPollersOfOneBotNeverPollTogetherAndTheStandbyTakesOverOnStop() throws Exception {
        for (int i = 0; i < 20; i++) {
            simulator.enqueueText(token, 8, "m" + i);
        }
        TelegramIntake first = new TelegramIntake(simulator).property("telegram.bot-token", token).route("main", FAST, false).start();
        Await.until("first stores", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 20);
        try (TelegramIntake second = new TelegramIntake(simulator).property("telegram.bot-token", token).route("main", FAST, false).start()) {
            Await.until("the second stands by", WAIT, () -> messages().stream().anyMatch(m -> m.contains("another process holds the poll lease")));
            first.close();
            simulator.enqueueText(token, 8, "after handover");
            Await.until("the second takes over", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 21);
            // handed to the route after the commit, on the hand-off thread
            Await.until("the second hands it on", WAIT, () -> second.received.size() == 1);
        }
        assertThat(simulator.maxConcurrentPolls(token)).isEqualTo(1);
        assertThat(simulator.conflicts(token)).isZero();
        assertThat(count("SELECT fencing_token FROM telegram_poll_lease")).isEqualTo(2);
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void severalBotsInOneProcessKeepTheirOwnCheckpointAndLease() throws Exception {
        String sales = simulator.addBot(5151, "FAKE-sales-token", "sales_bot");
        for (int i = 0; i < 3; i++) {
            simulator.enqueueText(token, 1, "main " + i);
        }
        simulator.enqueueText(sales, 2, "sales 0");
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .property("telegram.bots.sales.token", sales)
                .route("main", FAST, false).route("sales", FAST, false).start()) {
            Await.until("both stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 4);
            Await.until("both confirmed", WAIT, () -> simulator.queued(token) == 0 && simulator.queued(sales) == 0);
        }
        assertThat(count("SELECT next_offset FROM telegram_checkpoint WHERE bot_id = 4242 AND bot_name = 'main'")).isEqualTo(4);
        assertThat(count("SELECT next_offset FROM telegram_checkpoint WHERE bot_id = 5151 AND bot_name = 'sales'")).isEqualTo(2);
        assertThat(count("SELECT count(DISTINCT bot_id) FROM telegram_poll_lease")).isEqualTo(2);
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void aForeignGetUpdatesDisplacesTheWaitingPollWhichBacksOffAndCarriesOn() throws Exception {
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", "?timeout=3&leaseSeconds=10&backoffBaseMillis=50&backoffCapMillis=400", false).start()) {
            Await.until("the poller's long poll waiting", WAIT, () -> simulator.waitingPolls(token) == 1);
            // A diagnostic poll from elsewhere; offset 0 confirms nothing.
            try {
                new BotApiClient(simulator.url(), io.chatintake.config.Secret.of(token)).getUpdates(0, 1, 1, List.of());
            } catch (BotApiException e) {
                // the poller's next request, newer still, displaced this one in turn
                assertThat(e.kind()).isEqualTo(BotApiException.Kind.CONFLICT_OTHER_POLLER);
            }
            Await.until("the 409 is reported", WAIT, () -> messages().stream().anyMatch(m -> m.contains("another getUpdates request is running")));
            simulator.enqueueText(token, 4, "still flowing");
            Await.until("stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 1);
        }
        assertThat(simulator.conflicts(token)).isGreaterThanOrEqualTo(1);
    }

    @Test
    void aPollerSilentForMoreThan24HoursRecordsAPossibleLossWindow() throws Exception {
        AdjustableClock clock = new AdjustableClock();
        try (TelegramIntake intake = new TelegramIntake(simulator, clock).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("a first poll", WAIT, () -> count("SELECT count(*) FROM telegram_checkpoint WHERE last_poll_at IS NOT NULL") == 1);
        }
        try (Connection c = TestDatabase.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.executeUpdate("UPDATE telegram_checkpoint SET last_poll_at = now() - interval '30 hours'");
        }
        try (TelegramIntake intake = new TelegramIntake(simulator, clock).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("the loss window", WAIT, () -> count("SELECT count(*) FROM telegram_loss_window WHERE bot_id = 4242") == 1);
        }
        assertThat(messages()).anyMatch(m -> m.contains("recorded as a possible loss window"));
        assertThat(new LossWindow(TestDatabase.dataSource()).list(4242).get(0).from()).isBefore(Instant.now().minus(Duration.ofHours(29)));
    }

    @Test
    void aPollerThatHoldsItsLeaseWhileEveryPollFailsRecordsTheLossWindowAsSoonAsItPasses24Hours() throws Exception {
        AdjustableClock clock = new AdjustableClock();
        try (TelegramIntake intake = new TelegramIntake(simulator, clock).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("a first poll", WAIT, () -> count("SELECT count(*) FROM telegram_checkpoint WHERE last_poll_at IS NOT NULL") == 1);
            failEveryPoll();
            long polls = getUpdatesCalls();
            Await.until("failing", WAIT, () -> getUpdatesCalls() > polls + 2);
            assertThat(count("SELECT count(*) FROM telegram_loss_window")).as("within Telegram's retention nothing is lost").isZero();

            clock.advance(Duration.ofHours(25));
            Await.until("the loss window, while the lease is held", WAIT, () -> count("SELECT count(*) FROM telegram_loss_window WHERE bot_id = 4242") == 1);
            assertThat(count("SELECT count(*) FROM telegram_poll_lease WHERE expires_at > now()")).as("the lease is still held").isEqualTo(1);
            Await.until("counted once committed", WAIT, () -> lossWindowsCounted(intake) == 1);
            assertThat(intake.meters.get("chat_intake_telegram_seconds_since_last_poll").tag("bot", "main").gauge().value())
                    .isGreaterThan(Duration.ofHours(25).toSeconds() - 60);

            clock.advance(Duration.ofHours(1));
            long later = getUpdatesCalls();
            Await.until("failing on", WAIT, () -> getUpdatesCalls() > later + 2);
            Await.until("the same window extended", WAIT, () -> count("SELECT count(*) FROM telegram_loss_window"
                    + " WHERE to_time - from_time > interval '25 hours 30 minutes'") == 1);

            simulator.clearFaults(token);
            simulator.enqueueText(token, 7, "after the outage");
            Await.until("polling again", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 1);
            Await.until("the age of the last success restarts", WAIT,
                    () -> intake.meters.get("chat_intake_telegram_seconds_since_last_poll").tag("bot", "main").gauge().value() < 60);
            assertThat(lossWindowsCounted(intake)).isEqualTo(1);
        }
        assertThat(count("SELECT count(*) FROM telegram_loss_window")).as("one outage, one window").isEqualTo(1);
        assertThat(messages()).filteredOn(m -> m.contains("recorded as a possible loss window")).hasSize(1);
        assertThat(simulator.violations()).isEmpty();
    }

    /** Every getUpdates answers 500 until the test clears the faults (10,000 outlast any test). */
    private void failEveryPoll() {
        for (int i = 0; i < 10_000; i++) {
            simulator.injectFault(token, Fault.serverError());
        }
    }

    private long getUpdatesCalls() {
        return simulator.requests().stream().filter(r -> r.method().equals("getUpdates")).count();
    }

    private static double lossWindowsCounted(TelegramIntake intake) {
        return intake.meters.counter("chat_intake_telegram_loss_windows", "bot", "main").count();
    }

    @Test
    void theTokenAppearsInNoLogLineThreadNameOrEndpointUri() throws Exception {
        simulator.enqueueText(token, 1, "x");
        simulator.injectFault(token, Fault.serverError());
        try (TelegramIntake intake = new TelegramIntake(simulator).property("telegram.bot-token", token)
                .route("main", FAST, false).start()) {
            Await.until("stored", WAIT, () -> count("SELECT count(*) FROM telegram_update") == 1);
            assertThat(intake.camel.getEndpoints()).allSatisfy(e -> assertThat(e.getEndpointUri()).doesNotContain(token));
            assertThat(Thread.getAllStackTraces().keySet()).allSatisfy(t -> assertThat(t.getName()).doesNotContain(token));
        }
        String secretPart = token.substring(token.indexOf(':') + 1);
        assertThat(logs.list).allSatisfy(e -> {
            assertThat(e.getFormattedMessage()).doesNotContain(secretPart);
            assertThat(e.getThreadName()).doesNotContain(secretPart);
        });
    }

    private List<String> messages() {
        return logs.list.stream().map(ILoggingEvent::getFormattedMessage).collect(Collectors.toList());
    }
}
