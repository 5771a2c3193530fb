package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The sampler behind the graphs, over a real PostgreSQL: counters found by name (the names other
 * parts register, dots or underscores), deltas added into the shared minute and hour, twice for two
 * processes, nothing for a counter that did not move; gauges of the backlog; old rows forgotten.
 */
@ExtendWith(TestDatabase.class)
class StatusHistoryTest {

    @Test
    void eachSampleAddsWhatTheCountersCountedSinceTheLastIntoTheSharedBuckets(DataSource db) throws Exception {
        MeterRegistry one = new SimpleMeterRegistry();
        MeterRegistry two = new SimpleMeterRegistry();
        StatusHistory first = new StatusHistory(Settings.of(Map.of()), db);
        StatusHistory second = new StatusHistory(Settings.of(Map.of()), db);
        for (MeterRegistry registry : List.of(one, two)) {
            Counter.builder("chat.intake.webhook.deliveries").tags("channel", "slack", "workspace", "w", "status", "200", "outcome", "stored")
                    .register(registry).increment(3);
            Counter.builder("chat.intake.webhook.deliveries").tags("channel", "slack", "workspace", "w", "status", "401",
                    "outcome", "bad_signature").register(registry).increment(5);
            Counter.builder("chat_intake_telegram_updates_stored").tag("bot", "main").register(registry).increment(2);
            Timer.builder("chat_intake_work_handler_seconds").tags("kind", "telegram-update", "outcome", "done").register(registry)
                    .record(Duration.ofMillis(1));
            // The names of the counters of limits and sends (tags kind, reason; bot, result).
            Counter.builder("chat_intake_work_deferrals").tags("kind", "telegram-update", "reason", "per_chat").register(registry).increment();
            Counter.builder("chat_intake_telegram_sends").tags("bot", "main", "result", "sent").register(registry).increment(4);
            Counter.builder("chat_intake_telegram_sends").tags("bot", "main", "result", "rate_limited").register(registry).increment(1);
        }
        first.sample(one);
        second.sample(two);
        first.sample(one);

        assertThat(history(db, "minute")).containsExactlyInAnyOrder(
                List.of("stored", "slack/w", 6L), List.of("stored", "bot main", 4L), List.of("done", "work telegram-update", 2L),
                List.of("deferred by limits", "work telegram-update", 2L), List.of("replies sent", "bot main", 8L),
                List.of("429s", "bot main", 2L));
        assertThat(history(db, "hour")).isEqualTo(history(db, "minute"));

        one.counter("chat_intake_telegram_updates_stored", "bot", "main").increment(7);
        first.sample(one);
        assertThat(Sql.count(db, "SELECT value::bigint FROM status_rollup WHERE resolution = 'hour' AND subject = 'bot main'"
                + " AND series = 'stored'")).isEqualTo(11);
    }

    @Test
    void theBacklogIsRecordedAndOldHistoryAndLongDeadProcessesAreForgotten(DataSource db) throws Exception {
        Sql.execute(db, """
                INSERT INTO work_item (kind, source_key, source_id, state, next_attempt_at)
                SELECT 'attachment', 'a:' || i, i, 'pending', now() - interval '90 seconds' FROM generate_series(1, 4) i;
                INSERT INTO status_rollup (resolution, series, subject, bucket, value)
                VALUES ('minute', 'stored', 'bot main', date_trunc('minute', now() - interval '3 hours'), 1),
                       ('hour', 'stored', 'bot main', date_trunc('hour', now() - interval '9 days'), 1),
                       ('hour', 'stored', 'bot main', date_trunc('hour', now() - interval '6 days'), 1);
                INSERT INTO runner_heartbeat (process_id, host, pid, beat_at)
                VALUES ('gone', 'h', 1, now() - interval '3 minutes'), ('dead', 'h', 2, now() - interval '30 seconds'),
                       ('alive', 'h', 3, now());
                INSERT INTO operator_alert_message (id, destination, text, created_at, sent_at)
                VALUES (1, 'd', 'old', now() - interval '91 days', now() - interval '91 days'), (2, 'd', 'new', now(), now());
                INSERT INTO operator_finding (finding, text, started_at, cleared_at, start_message_id, end_message_id)
                VALUES ('over long ago', 't', now() - interval '92 days', now() - interval '91 days', 1, 1),
                       ('over, not yet announced', 't', now() - interval '92 days', now() - interval '91 days', 1, NULL),
                       ('open', 't', now() - interval '92 days', NULL, 1, NULL);
                """);
        new StatusHistory(Settings.of(Map.of(StatusHistory.DEAD_PROCESS_MINUTES, "2")), db).sample(new SimpleMeterRegistry());

        assertThat(Sql.rows(db, "SELECT resolution, series, value FROM status_rollup WHERE subject = 'work attachment' ORDER BY 1, 2"))
                .hasSize(4).contains(List.of("minute", "backlog", 4L), List.of("hour", "backlog", 4L));
        assertThat(Sql.count(db, "SELECT value::bigint FROM status_rollup WHERE resolution = 'minute' AND series = 'oldest due (s)'"))
                .isBetween(90L, 150L);
        assertThat(Sql.count(db, "SELECT count(*) FROM status_rollup WHERE subject = 'bot main'")).as("only the 6-day-old hour").isEqualTo(1);
        assertThat(Sql.rows(db, "SELECT process_id FROM runner_heartbeat ORDER BY 1")).containsExactly(List.of("alive"), List.of("dead"));
    }

    private static List<List<Object>> history(DataSource db, String resolution) {
        return Sql.rows(db, "SELECT series, subject, value FROM status_rollup WHERE resolution = '" + resolution
                + "' AND value > 0 ORDER BY series, subject");
    }
}
