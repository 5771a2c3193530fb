package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code work retry} with a filter, run as the real jar: stopped as Ctrl-C stops it (the JVM's
 * shutdown), it ends after the chunk it is in, every chunk it did committed, and its one
 * {@code operator_action} row says cancelled with the count it reached.
 */
@ExtendWith(TestDatabase.class)
class BulkWorkActionIT {
    private static final int PARKED = 20_000;

    @TempDir
    Path work;

    @Test
    void ctrlCStopsAFilteredRetryAfterTheCurrentChunkAndItsRowSaysHowFarItGot(DataSource db) {
        Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)"
                + " SELECT 'album-child', 'album-child:' || g, g, 'parked', 8, 'storage full' FROM generate_series(1, " + PARKED + ") g");
        HikariDataSource pool = (HikariDataSource) db;
        Map<String, String> env = RunnerProcess.baseEnv(work);
        env.put("CHAT_INTAKE_DB_URL", pool.getJdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", pool.getUsername());
        env.put("CHAT_INTAKE_DB_PASSWORD", pool.getPassword());

        try (RunnerProcess retry = RunnerProcess.start(work, env, "work", "retry", "--kind", "album-child", "--error", "storage",
                "--chunk", "20", "--by", "dave")) {
            retry.awaitOutput(" item(s) done (operator_action #", Duration.ofSeconds(60));
            retry.terminate(Duration.ofSeconds(30));

            assertThat(retry.output()).containsPattern("cancelled after \\d+ item\\(s\\) back to pending \\(filter: kind=album-child"
                    + " error~\"storage\"; operator_action #\\d+\\)");
        }
        List<List<Object>> rows = Sql.rows(db, "SELECT acted_by, action, state, item_count FROM operator_action");
        assertThat(rows).hasSize(1);
        assertThat(rows.get(0).subList(0, 3)).containsExactly("dave", "retry-filtered", "cancelled");
        long changed = (Long) rows.get(0).get(3);
        assertThat(changed).as("whole chunks, not all").isPositive().isLessThan(PARKED).isEqualTo(changed / 20 * 20);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'pending'")).as("what the row says was done").isEqualTo(changed);
    }
}
