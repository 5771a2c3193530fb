package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Act on many: a filtered retry or settle counts first ({@code --dry-run}), then runs in chunks,
 * each committed with the action's one {@code operator_action} row, and stops after a chunk when
 * cancelled.
 */
@ExtendWith(TestDatabase.class)
class BulkWorkActionTest {
    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8);

    @Test
    void aFilteredRetryOf2000ParkedItemsCountsFirstRunsInChunksAndIsRecordedOnce(DataSource db) {
        parked(db, "telegram-update", "handler down: 503", "2000", "5 minutes");
        parked(db, "telegram-update", "bad payload", "100", "5 minutes");      // other error text
        parked(db, "album-child", "handler down: 503", "100", "5 minutes");    // other kind
        parked(db, "telegram-update", "handler down: 503", "100", "3 hours");  // before --since
        String since = Sql.string(db, "SELECT to_char((now() - interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')");
        WorkCommands work = new WorkCommands(TestDatabase.commandSettings(), out);
        List<String> filter = List.of("retry", "--kind", "telegram-update", "--error", "handler down", "--since", since, "--by", "alice");

        assertThat(work.run(with(filter, "--dry-run"))).isZero();

        assertThat(printed.toString(StandardCharsets.UTF_8)).startsWith("2000 item(s) match kind=telegram-update error~\"handler down\" since=");
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).as("a dry run changes nothing").isEqualTo(2300);
        assertThat(Sql.count(db, "SELECT count(*) FROM operator_action")).as("nor is it recorded").isZero();
        printed.reset();

        assertThat(work.run(with(filter, "--chunk", "500"))).isZero();

        String lines = printed.toString(StandardCharsets.UTF_8);
        assertThat(lines).contains("500 of 2000 item(s) done", "1000 of 2000 item(s) done", "1500 of 2000 item(s) done",
                "2000 item(s) back to pending (filter: kind=telegram-update error~\"handler down\" since=");
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'pending' AND attempts = 0 AND last_error IS NULL"))
                .isEqualTo(2000);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).as("the others untouched").isEqualTo(300);
        assertThat(Sql.rows(db, "SELECT acted_by, action, state, item_count, filter FROM operator_action"))
                .containsExactly(List.of("alice", "retry-filtered", "done", 2000L,
                        "kind=telegram-update error~\"handler down\" since=" + since));
    }

    @Test
    void aCancelStopsAfterTheCurrentChunkAndTheOneRowSaysHowFarItGot(DataSource db) throws Exception {
        parked(db, "album-child", "storage full", "1000", "1 minute");
        BulkWorkAction action = new BulkWorkAction(db, 100);
        AtomicInteger chunks = new AtomicInteger();
        List<Long> counts = new ArrayList<>();

        BulkWorkAction.Progress last = action.run(BulkWorkAction.Kind.RETRY, new WorkFilter("album-child", "parked", null, null, null), "bob",
                () -> false, progress -> {
                    counts.add(progress.changed());
                    // The page's Cancel, as another process would ask: the row, read between chunks.
                    if (chunks.incrementAndGet() == 3) {
                        try {
                            assertThat(BulkWorkAction.requestCancel(db, progress.actionId())).isTrue();
                        } catch (java.sql.SQLException e) {
                            throw new AssertionError(e);
                        }
                    }
                });

        assertThat(last.cancelled()).isTrue();
        assertThat(counts).containsExactly(100L, 200L, 300L, 300L);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).isEqualTo(700);
        assertThat(Sql.rows(db, "SELECT state, item_count, outcome FROM operator_action"))
                .containsExactly(List.of("cancelled", 300L, "cancelled after 300 of 1000 back to pending (filter: kind=album-child state=parked)"));
    }

    @Test
    void aFilteredSettleRecordsEachMatchingEffectAndPutsItsItemBack(DataSource db) {
        parked(db, "unifyport-event", "ambiguous: timeout", "3", "1 minute");
        Sql.execute(db, "INSERT INTO outbound_effect (effect_key, work_item_id, state) SELECT id || ':reply', id, 'started' FROM work_item");
        WorkCommands work = new WorkCommands(TestDatabase.commandSettings(), out);

        assertThat(work.run(List.of("settle", "--kind", "unifyport-event", "--performed", "--by", "carol"))).isZero();

        assertThat(Sql.count(db, "SELECT count(*) FROM outbound_effect WHERE state = 'done' AND resolved_by = 'carol'")).isEqualTo(3);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'pending'")).isEqualTo(3);
        assertThat(Sql.rows(db, "SELECT action, state, item_count FROM operator_action")).containsExactly(List.of("settle-filtered", "done", 3L));
    }

    private static List<String> with(List<String> args, String... more) {
        List<String> all = new ArrayList<>(args);
        all.addAll(List.of(more));
        return all;
    }

    /** {@code n} parked items of {@code kind} with {@code error}, parked {@code ago}. */
    private static void parked(DataSource db, String kind, String error, String n, String ago) {
        Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error, updated_at)"
                + " SELECT '" + kind + "', '" + kind + ":' || md5(random()::text), g, 'parked', 8, '" + error + "', now() - interval '" + ago + "'"
                + " FROM generate_series(1, " + n + ") g");
    }
}
