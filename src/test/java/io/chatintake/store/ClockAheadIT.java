package io.chatintake.store;

import static io.chatintake.store.RunnersUnderLoad.pause;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Path;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two runners under load, the second with its wall clock 90 s ahead of the first's and of the
 * database's: every deadline is the database's, so there is still one poller of the bot at a
 * time, albums are decided no earlier than their quiet period after their last part by the
 * database's clock, and nothing is lost, doubled or parked.
 */
class ClockAheadIT {
    private static final Duration AHEAD = Duration.ofSeconds(90);
    private static final int ALBUMS = 6;

    @TempDir
    Path work;

    @Test
    @Disabled("open: with one runner 90 s ahead an album (2 of 3 parts) was decided 0.85 s after its last part, quiet period 3 s")
    void aRunnerWhoseClockIs90SecondsAheadChangesNothing() throws Exception {
        assumeTrue(RunnerProcess.faketimeInstalled(), "faketime is not installed (apt-get install faketime; .ci/run does)");
        try (EmbeddedDatabase database = EmbeddedDatabase.start(work.resolve("pg"), RunnerProcess.freePort(), true);
             RunnersUnderLoad load = new RunnersUnderLoad(work, database, AHEAD)) {
            DataSource db = Sql.dataSource(database);
            // Albums with a part missing: only their quiet period decides them, half of them on the runner ahead.
            for (int album = 0; album < ALBUMS; album++) {
                RunnerProcess runner = album % 2 == 0 ? load.first : load.second;
                load.deliverAlbumPart(runner, "skew" + album, 1, 3);
                load.deliverAlbumPart(runner, "skew" + album, 2, 3);
            }
            pause(20_000);
            load.stopLoadAndAwaitHandled(db);
            Await.until("every album decided", Duration.ofSeconds(60), () -> Sql.count(db,
                    "SELECT count(*) FROM album WHERE album_id LIKE 'skew%' AND decided_at IS NOT NULL") == ALBUMS);

            String brought = load.assertNothingLostDoubledOrParked(db);
            assertThat(load.polls()).as("one poller of the bot at a time").startsWith("1 at once, 0 displaced");
            assertThat(Sql.rows(db, "SELECT album_id, decided_at - last_child_at FROM album WHERE album_id LIKE 'skew%'"
                    + " AND decided_at < last_child_at + make_interval(secs => " + RunnersUnderLoad.ALBUM_QUIET.toSeconds() + ")"))
                    .as("no album decided before its quiet period ran out by the database's clock").isEmpty();
            System.out.printf("clock 90 s ahead: %s; polls: %s%n", brought, load.polls());
        }
    }
}
