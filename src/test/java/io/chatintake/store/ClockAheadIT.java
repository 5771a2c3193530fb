package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.ClusterTemplate;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two runners under load, the second with its wall clock 90 s ahead of the first's and of the
 * database's: every deadline is the database's, so there is still one poller of the bot at a
 * time, albums are decided once their quiet period after their last part has run out by the
 * database's clock (and not a skew later), nothing is retained early, and nothing is lost, doubled
 * or parked.
 */
class ClockAheadIT {
    private static final Duration AHEAD = Duration.ofSeconds(90);
    private static final Duration LOAD = Duration.ofSeconds(10);
    private static final int ALBUMS = 6;
    /** How far from a retention window's edge the aged rows are: half the skew, so a purge on the skewed clock would cross it. */
    private static final String OFF_EDGE = "45 seconds";
    /**
     * The runner ahead's retention alone, a pass a minute, the first half a minute after its start, while the
     * load runs: content kept a day, rows two (the other runner's keep the defaults).
     */
    private static final Map<String, String> RETENTION = Map.of("RETENTION_CONTENT_DAYS", "1", "RETENTION_WEBHOOK_EVENT_DAYS", "2",
            "RETENTION_INTERVAL_MINUTES", "1", "RETENTION_FIRST_RUN_DELAY_SECONDS", "30");
    /** Deliveries apart from the load's, aged to either side of the retention windows' edges. */
    private static final List<String> AGED = List.of("evt_aged_0", "evt_aged_1", "evt_aged_2", "evt_aged_3");
    /** Later than this after its deadline, an album was decided by a deadline the skew moved (slow machines take seconds). */
    private static final String LATE = "60 seconds";

    @TempDir
    Path work;

    @Test
    void aRunnerWhoseClockIs90SecondsAheadChangesNothing() throws Exception {
        assumeTrue(RunnerProcess.faketimeInstalled(), "faketime is not installed (apt-get install faketime; .ci/run does)");
        try (EmbeddedDatabase database = ClusterTemplate.start(work.resolve("pg"), RunnerProcess.freePort(), true);
             RunnersUnderLoad load = new RunnersUnderLoad(work, database, AHEAD, RETENTION)) {
            DataSource db = Sql.dataSource(database);
            // Albums with a part missing: only their quiet period decides them, half of them on the runner ahead.
            for (int album = 0; album < ALBUMS; album++) {
                RunnerProcess runner = album % 2 == 0 ? load.first : load.second;
                load.deliverAlbumPart(runner, "skew" + album, 1, 3);
                load.deliverAlbumPart(runner, "skew" + album, 2, 3);
            }
            AGED.forEach(eventId -> load.deliverText(load.first, eventId));
            try (Ageing ageing = new Ageing(db)) {
                load.keepLoading(LOAD);
                load.stopLoadAndAwaitHandled(db);
                Await.until("every album decided", Duration.ofSeconds(60), () -> Sql.count(db, "SELECT count(*) FROM album"
                        + " WHERE album_id LIKE 'skew%' AND decided_at IS NOT NULL AND decide_after IS NULL") == ALBUMS);
                ageing.awaitRetentionPass();
            }

            String brought = load.assertNothingLostDoubledOrParked(db);
            assertThat(load.polls()).as("one poller of the bot at a time").startsWith("1 at once, 0 displaced");
            long quiet = RunnersUnderLoad.ALBUM_QUIET.toSeconds();
            assertThat(Sql.rows(db, "SELECT album_id, decided_at - last_child_at FROM album WHERE album_id LIKE 'skew%'"
                    + " AND decided_at < last_child_at + make_interval(secs => " + quiet + ")"))
                    .as("no album decided before its quiet period ran out by the database's clock").isEmpty();
            assertThat(Sql.rows(db, "SELECT album_id, decided_at - last_child_at FROM album WHERE album_id LIKE 'skew%'"
                    + " AND decided_at > last_child_at + make_interval(secs => " + quiet + ") + interval '" + LATE + "'"))
                    .as("no album decided a skew late").isEmpty();
            assertThat(Sql.rows(db, "SELECT event_id, content_removed_at IS NOT NULL FROM webhook_event"
                    + " WHERE event_id IN ('evt_aged_0', 'evt_aged_1', 'evt_aged_2') ORDER BY event_id"))
                    .as("by the database's clock: content older than a day and rows older than two days gone, nothing younger")
                    .containsExactly(List.of("evt_aged_0", false), List.of("evt_aged_1", true), List.of("evt_aged_2", true));
            System.out.printf("clock 90 s ahead: %s; polls: %s%n", brought, load.polls());
        }
    }

    /**
     * Four handled deliveries aged by the database's clock to either side of the runner ahead's
     * content window (a day) and row window (two days), 45 s from each edge, once they are handled
     * and then every second, from the start of the load until its retention has taken the older
     * side of each (the content of the day-old one, the row of the one older than two days); the
     * younger side is then still there: the statements that took the older rows weighed these too.
     * A pass later than 45 s after a single ageing would rightly take the younger side too.
     */
    private static final class Ageing implements AutoCloseable {
        private static final String AGE = """
                UPDATE webhook_event SET received_at = now() - CASE event_id
                       WHEN 'evt_aged_0' THEN interval '1 day' - interval '%1$s'
                       WHEN 'evt_aged_1' THEN interval '1 day' + interval '%1$s'
                       WHEN 'evt_aged_2' THEN interval '2 days' - interval '%1$s'
                       ELSE interval '2 days' + interval '%1$s' END
                 WHERE event_id IN ('evt_aged_0', 'evt_aged_1', 'evt_aged_2', 'evt_aged_3')""".formatted(OFF_EDGE);
        /** Retention takes only rows whose work is done: the four are aged once it is. */
        private static final String HANDLED = """
                SELECT count(*) FROM webhook_event e
                 WHERE e.event_id IN ('evt_aged_0', 'evt_aged_1', 'evt_aged_2', 'evt_aged_3')
                   AND EXISTS (SELECT 1 FROM work_item w
                                WHERE w.source_id = e.id AND w.kind <> 'telegram-update' AND w.state = 'done')
                   AND NOT EXISTS (SELECT 1 FROM work_item w
                                    WHERE w.source_id = e.id AND w.kind <> 'telegram-update' AND w.state <> 'done')""";

        private final DataSource db;
        private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        private final AtomicBoolean aged = new AtomicBoolean();
        private final AtomicReference<RuntimeException> failed = new AtomicReference<>();

        Ageing(DataSource db) {
            this.db = db;
            timer.scheduleWithFixedDelay(this::ageOnceHandled, 0, 1, TimeUnit.SECONDS);
        }

        private void ageOnceHandled() {
            try {
                if (aged.get() || Sql.count(db, HANDLED) == AGED.size()) {
                    Sql.execute(db, AGE);
                    aged.set(true);
                }
            } catch (RuntimeException e) {
                failed.compareAndSet(null, e);
            }
        }

        void awaitRetentionPass() {
            Await.until("a retention pass of the runner ahead after the ageing", Duration.ofSeconds(150), () -> {
                if (failed.get() != null) {
                    throw failed.get();
                }
                return aged.get() && Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id = 'evt_aged_3'") == 0 && Sql.count(db,
                        "SELECT count(*) FROM webhook_event WHERE event_id = 'evt_aged_1' AND content_removed_at IS NOT NULL") == 1;
            });
        }

        @Override
        public void close() throws InterruptedException {
            timer.shutdownNow();
            timer.awaitTermination(10, TimeUnit.SECONDS);
        }
    }
}
