package io.chatintake.album;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.app.Runner;
import io.chatintake.channel.ChildMessages;
import io.chatintake.testkit.RouteFile;
import io.chatintake.channel.webhook.DerivingEventStore;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.work.WorkItem;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.processor.aggregate.AggregateProcessor;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Album scheduling and decisions against the real schema: out-of-order children, deadlines in the database. */
@ExtendWith(TestDatabase.class)
class AlbumDecisionsTest {
    private static final String ALBUM = "[\"default\", \"whatsapp\", \"acc_1\", \"conv\", \"a1\"]";

    private final DataSource db = TestDatabase.dataSource();
    /** A quiet period far longer than any test: a decision made here is made by count or by a moved deadline. */
    private final DerivingEventStore store = new DerivingEventStore(db, "default",
            ChildMessages.listener(new QuietPeriods(Duration.ofHours(1), Duration.ofHours(1))));
    private final AlbumDecisions decisions = new AlbumDecisions(db);
    private int events;

    private void event(String type, String messageId, Instant occurredAt, String album) throws Exception {
        String data = "{\"conversation\":{\"id\":\"conv\"},\"message\":{\"id\":\"" + messageId + "\",\"type\":\"image\""
                + (album == null ? "" : ",\"album\":" + album) + "}}";
        String eventId = "evt_" + (++events);
        store.store(RouteFile.unifyPortEvents(
                SignedDeliverySender.envelope(eventId, type, "whatsapp", "acc_1", occurredAt, data), "dlv_" + eventId));
    }

    private void received(String messageId, int index, Instant occurredAt) throws Exception {
        event("message.received", messageId, occurredAt, "{\"id\":\"a1\",\"index\":" + index + ",\"total\":2}");
    }

    /** The aggregator's completion of the album reaching {@link AlbumDecisions#record}: the kind decided, if any. */
    private Optional<String> completed(AlbumDecisions by, String albumKey, String completedBy) throws Exception {
        try (CamelContext camel = new DefaultCamelContext()) {
            Exchange group = new DefaultExchange(camel);
            group.getMessage().setHeader(AlbumChildSource.ALBUM_KEY, albumKey);
            group.setProperty(Exchange.AGGREGATED_COMPLETED_BY, completedBy);
            by.record(group).join();
            return Optional.ofNullable(group.getMessage().getHeader(AlbumDecisions.DECISION_KIND, String.class));
        }
    }

    private Optional<String> byCount() throws Exception {
        return completed(decisions, ALBUM, AggregateProcessor.COMPLETED_BY_PREDICATE);
    }

    private Optional<String> byDeadline(AlbumDecisions by, String albumKey) throws Exception {
        return completed(by, albumKey, AggregateProcessor.COMPLETED_BY_FORCE);
    }

    /** The quiet period ran out (the test's is an hour): every open album's deadline in the database is now. */
    private void overdue() {
        Sql.execute(db, "UPDATE album SET decide_after = now() WHERE decide_after IS NOT NULL");
    }

    private long childWork() {
        return Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-child'");
    }

    @Test
    void childrenFirstSeenThroughReactionsAreScheduledWhenTheyReceiveTheirAlbum() throws Exception {
        Instant sent = Instant.parse("2026-11-30T09:00:00Z");
        event("message.reaction", "m1", sent.plusSeconds(60), null);
        event("message.reaction", "m2", sent.plusSeconds(61), null);
        assertThat(childWork()).as("a reaction names no album").isZero();

        received("m1", 1, sent);
        assertThat(byCount()).as("one child of two").isEmpty();
        received("m2", 2, sent);

        assertThat(childWork()).as("both children, though neither row was new").isEqualTo(2);
        assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after > now() + interval '50 minutes'")).isEqualTo(1);
        assertThat(byCount()).contains("complete");
        assertThat(Sql.string(db, "SELECT jsonb_array_length(child_ids)::text FROM album_decision")).isEqualTo("2");
        assertThat(byCount()).as("the same children: no second version").isEmpty();
        assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after IS NULL AND decided_version = 1")).isEqualTo(1);
    }

    /** The children's work items, loaded together as the dispatcher loads a run: whether each found its album complete. */
    private List<Boolean> loadChildren() throws Exception {
        List<WorkItem> items = new ArrayList<>();
        for (List<Object> row : Sql.rows(db, "SELECT id, source_key, source_id FROM work_item WHERE kind = 'album-child' ORDER BY id")) {
            items.add(new WorkItem(((Number) row.get(0)).longValue(), AlbumChildSource.KIND, (String) row.get(1),
                    ((Number) row.get(2)).longValue(), ALBUM, 1, 0));
        }
        List<Exchange> exchanges = new ArrayList<>();
        try (CamelContext camel = new DefaultCamelContext(); Connection c = db.getConnection()) {
            items.forEach(item -> exchanges.add(new DefaultExchange(camel)));
            new AlbumChildSource()
                    .loadRun(c, items, exchanges);
        }
        List<Boolean> complete = new ArrayList<>();
        for (Exchange exchange : exchanges) {
            assertThat(exchange.getException()).isNull();
            assertThat(exchange.getMessage().getHeader(AlbumChildSource.ALBUM_KEY)).isEqualTo(ALBUM);
            complete.add(exchange.getMessage().getHeader(AlbumChildSource.COMPLETE, Boolean.class));
        }
        return complete;
    }

    @Test
    void aChildLoadedBringsWhetherItsAlbumsStoredChildrenWereCompleteThen() throws Exception {
        Instant sent = Instant.parse("2026-11-30T09:00:00Z");
        received("m1", 1, sent);
        assertThat(loadChildren()).as("one child of two").containsExactly(false);

        received("m2", 2, sent);
        assertThat(loadChildren()).as("both stored when loaded, the first child's load included").containsExactly(true, true);

        event("message.received", "m3", sent, "{\"id\":\"a1\",\"index\":3,\"total\":3}");
        assertThat(loadChildren()).as("a third child claims another total: a conflict, never complete").containsExactly(false, false, false);
    }

    @Test
    void anAlbumWithOnlySomeChildrenPreSeenCompletesByCountToo() throws Exception {
        Instant sent = Instant.parse("2026-11-30T09:00:00Z");
        event("message.reaction", "m1", sent.plusSeconds(60), null);
        received("m2", 2, sent);
        received("m1", 1, sent);

        assertThat(childWork()).isEqualTo(2);
        assertThat(byCount()).contains("complete");
        // a redelivered received event (new event id) and another reaction change nothing
        received("m1", 1, sent);
        event("message.reaction", "m2", sent.plusSeconds(90), null);
        assertThat(childWork()).isEqualTo(2);
        assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after IS NOT NULL")).isZero();
    }

    @Test
    void overdueAlbumsCompletedByManyProcessesAtOnceAreDecidedOnce() throws Exception {
        Instant sent = Instant.parse("2026-11-30T09:00:00Z");
        int albums = 250;
        for (int album = 0; album < albums; album++) {
            event("message.received", "x" + album, sent, "{\"id\":\"b" + album + "\"}");
        }
        List<String> keys = Sql.rows(db, "SELECT album_key FROM album ORDER BY album_key").stream().map(r -> (String) r.get(0)).toList();
        overdue();

        // four processes completing every album at once, each with its own decisions and pool connections
        ExecutorService pool = Executors.newFixedThreadPool(16);
        List<Future<Optional<String>>> completions = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            AlbumDecisions process = new AlbumDecisions(db);
            for (String key : keys) {
                completions.add(pool.submit((Callable<Optional<String>>) () -> byDeadline(process, key)));
            }
        }
        int decided = 0;
        for (Future<Optional<String>> completion : completions) {
            decided += completion.get().isPresent() ? 1 : 0;
        }
        pool.shutdown();

        assertThat(decided).isEqualTo(albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).isEqualTo(albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision WHERE kind = 'provisional' AND completed_by = 'timeout'"))
                .isEqualTo(albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-decision'")).isEqualTo(albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after IS NOT NULL")).isZero();

        // a late child moves the deadline again: the next version is late, with both children
        event("message.received", "x0b", sent, "{\"id\":\"b0\"}");
        String b0 = key("b0");
        assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after IS NOT NULL")).isEqualTo(1);
        overdue();
        assertThat(byDeadline(decisions, b0)).contains("late");
        assertThat(Sql.string(db, "SELECT version || ' ' || jsonb_array_length(child_ids) FROM album_decision WHERE kind = 'late'"))
                .isEqualTo("2 2");
    }

    @Test
    void aChildStoredAfterItsAlbumWasFoundOverdueKeepsItOpenForItsOwnQuietPeriod() throws Exception {
        Instant sent = Instant.parse("2026-11-30T09:00:00Z");
        event("message.received", "m1", sent, "{\"id\":\"a1\",\"index\":1,\"total\":3}");
        overdue();
        // The sweep removed the group as overdue; a child whose transaction began before commits now,
        // and its deadline (an hour on) is what the completion finds under the album's lock.
        event("message.received", "m2", sent, "{\"id\":\"a1\",\"index\":2,\"total\":3}");

        assertThat(byDeadline(decisions, ALBUM)).as("nothing decided before the moved deadline").isEmpty();
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).isZero();
        assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after > now()")).as("still open, its deadline kept").isEqualTo(1);

        overdue();
        assertThat(byDeadline(decisions, ALBUM)).contains("provisional");
        assertThat(Sql.string(db, "SELECT jsonb_array_length(child_ids) FROM album_decision")).isEqualTo("2");
    }

    @Test
    void aChildThatCompletesAnAlbumFoundOverdueHasItDecidedAtOnce() throws Exception {
        Instant sent = Instant.parse("2026-11-30T09:00:00Z");
        received("m1", 1, sent);
        overdue();
        received("m2", 2, sent);

        assertThat(byDeadline(decisions, ALBUM)).as("complete needs no quiet period").contains("complete");
    }

    private static String key(String albumId) {
        return "[\"default\", \"whatsapp\", \"acc_1\", \"conv\", \"" + albumId + "\"]";
    }

    @Test
    void theOpenAlbumMetricReadsOnlyOpenAlbumsThroughItsPartialIndex() {
        Sql.execute(db, """
                INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id, decided_version, decided_at)
                SELECT 'k' || g, 'default', 'p', 'a', 'c', 'k' || g, 1, now() FROM generate_series(1, 50000) g;
                INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id, decide_after)
                SELECT 'open' || g, 'default', 'p', 'a', 'c', 'open' || g, now() FROM generate_series(1, 5) g;
                ANALYZE album;""");

        assertThat(Sql.plan(db, AlbumMetrics.QUERY)).contains("album_open").doesNotContain("Seq Scan");
        // Either partial index on open albums serves the sweep (the planner picks by cost); never the whole table.
        assertThat(Sql.plan(db, "SELECT album_key FROM album WHERE decide_after <= now() ORDER BY decide_after LIMIT 100"))
                .containsAnyOf("album_due", "album_open").doesNotContain("Seq Scan");
    }
}
