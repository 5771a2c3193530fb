package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Message;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A route declares its effect's outcome with the EffectOutcome header; the dispatcher retries, ends or parks accordingly. */
@ExtendWith(TestDatabase.class)
class EffectOutcomeTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final DataSource dataSource = TestDatabase.dataSource();
    private final CamelContext camel = new DefaultCamelContext();
    /** The outcome the "remote system" reports next, per item; absent: performed. */
    private final Map<String, String> nextOutcome = new ConcurrentHashMap<>();
    private final List<String> attempts = new CopyOnWriteArrayList<>();
    private final List<Instant> attemptTimes = new CopyOnWriteArrayList<>();
    private WorkDispatcher dispatcher;

    @BeforeEach
    void start() throws Exception {
        camel.getRegistry().bind("effectGuard", new EffectGuard(dataSource));
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("work:crm").setHeader(EffectGuard.EFFECT_NAME, constant("crm")).bean("effectGuard", "begin")
                        .process(e -> {
                            String key = e.getMessage().getHeader(WorkDispatcher.IDEMPOTENCY_KEY, String.class);
                            attempts.add(key);
                            attemptTimes.add(Instant.now());
                            String outcome = nextOutcome.remove(key);
                            if (outcome != null) {
                                e.getMessage().setHeader(EffectOutcome.HEADER, outcome);
                                e.getMessage().setHeader(EffectOutcome.RETRY_AFTER_HEADER, 1);
                            }
                            e.getMessage().setBody("crm-id-" + key);
                        })
                        .bean("effectGuard", "complete");
            }
        });
        camel.start();
        // Items of this kind carry everything in their key: nothing to load.
        WorkSource crm = new WorkSource("crm") {
            @Override
            public void load(Connection connection, WorkItem item, Message message) {
            }
        };
        dispatcher = new WorkDispatcher(camel, new WorkQueue(dataSource), List.of(crm), WorkDispatcher.Options.from(Settings.of(Map.of("work.concurrency", "2", "work.max-attempts", "5",
                "work.backoff-base-millis", "100", "work.backoff-cap-millis", "200", "work.poll-interval-millis", "50", "work.ordered-kinds", ""))));
    }

    @AfterEach
    void stop() {
        dispatcher.stop();
        camel.stop();
    }

    private void item(String key) {
        Sql.execute(dataSource, "INSERT INTO work_item (kind, source_key, source_id) VALUES ('crm', '" + key + "', 0)");
    }

    @Test
    void undeliverableEndsTheItemDoneWithoutRetrying() {
        nextOutcome.put("u1", "undeliverable");
        item("u1");
        dispatcher.start();

        Await.until("done", WAIT, () -> "done undeliverable".equals(Sql.string(dataSource, "SELECT state || ' ' || outcome FROM work_item")));
        assertThat(Sql.string(dataSource, "SELECT state FROM outbound_effect WHERE effect_key = 'u1:crm'")).isEqualTo("undeliverable");
        assertThat(attempts).containsExactly("u1");
    }

    @Test
    void failedIsRetriedNotBeforeRetryAfterAndThenPerformedOnce() {
        nextOutcome.put("f1", "failed");
        item("f1");
        dispatcher.start();

        Await.until("done", WAIT, () -> "done".equals(Sql.string(dataSource, "SELECT state FROM work_item")));
        assertThat(attempts).containsExactly("f1", "f1");
        assertThat(Duration.between(attemptTimes.get(0), attemptTimes.get(1))).as("retry_after, not the 100 ms backoff")
                .isGreaterThanOrEqualTo(Duration.ofMillis(950));
        assertThat(Sql.string(dataSource, "SELECT state || ' ' || result FROM outbound_effect")).isEqualTo("done crm-id-f1");
        assertThat(Sql.string(dataSource, "SELECT outcome FROM work_item")).isNull();
    }

    @Test
    void ambiguousIsParkedAtOnceAndAPersonsNotPerformedRunsItAgain() throws Exception {
        nextOutcome.put("a1", "ambiguous");
        item("a1");
        dispatcher.start();

        Await.until("parked", WAIT, () -> "parked".equals(Sql.string(dataSource, "SELECT state FROM work_item")));
        assertThat(Sql.count(dataSource, "SELECT attempts FROM work_item")).isEqualTo(1);
        assertThat(Sql.string(dataSource, "SELECT state FROM outbound_effect")).isEqualTo("started");

        EffectGuard.Resolved resolved = new EffectGuard(dataSource).resolve("a1:crm", false, "bob").orElseThrow();
        assertThat(new WorkQueue(dataSource).retry(resolved.workItemId())).isEqualTo(1);

        Await.until("done", WAIT, () -> "done".equals(Sql.string(dataSource, "SELECT state FROM work_item")));
        assertThat(attempts).containsExactly("a1", "a1");
        assertThat(Sql.string(dataSource, "SELECT state || ' ' || resolved_by FROM outbound_effect")).isEqualTo("done bob");
    }
}
