package io.chatintake.album;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.app.Runner;
import io.chatintake.channel.ChildMessages;
import io.chatintake.testkit.RouteFile;
import io.chatintake.channel.webhook.WebhookEventStore;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.work.WorkItem;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Album scheduling and decisions against the real schema: out-of-order children, deadlines in the database. */
@ExtendWith(TestDatabase.class)
class AlbumDecisionsTest {
    private static final String ALBUM = "[\"default\", \"whatsapp\", \"acc_1\", \"conv\", \"a1\"]";

    private final DataSource db = TestDatabase.dataSource();
    /** A quiet period far longer than any test: a decision made here is made by count or by a moved deadline. */
    private final WebhookEventStore store = new WebhookEventStore(db, Duration.ofSeconds(5), "default", "unifyport", "unifyport-event",
            ChildMessages.listener(new QuietPeriods(Duration.ofHours(1), Duration.ofHours(1))), () -> { });
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
        assertThat(decisions.decideIfComplete(ALBUM)).as("one child of two").isEmpty();
        received("m2", 2, sent);

        assertThat(childWork()).as("both children, though neither row was new").isEqualTo(2);
        assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after > now() + interval '50 minutes'")).isEqualTo(1);
        AlbumDecisions.Decision decision = decisions.decideIfComplete(ALBUM).orElseThrow();
        assertThat(decision.kind()).isEqualTo("complete");
        assertThat(decision.childIds()).hasSize(2);
        assertThat(decisions.decideIfComplete(ALBUM)).as("the same children: no second version").isEmpty();
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
            new AlbumChildSource("direct:album-child").loadRun(c, items, exchanges);
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
        assertThat(decisions.decideIfComplete(ALBUM).orElseThrow().kind()).isEqualTo("complete");
        // a redelivered received event (new event id) and another reaction change nothing
        received("m1", 1, sent);
        event("message.reaction", "m2", sent.plusSeconds(90), null);
        assertThat(childWork()).isEqualTo(2);
        assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after IS NOT NULL")).isZero();
    }

    @Test
    void overdueAlbumsAreDecidedOnceWhateverNumberOfProcessesSweep() throws Exception {
        Instant sent = Instant.parse("2026-11-30T09:00:00Z");
        for (int album = 0; album < 250; album++) {
            event("message.received", "x" + album, sent, "{\"id\":\"b" + album + "\"}");
        }
        event("message.received", "y1", sent, "{\"id\":\"future\"}");
        Sql.execute(db, "UPDATE album SET decide_after = now() - interval '1 second' WHERE album_id <> 'future'");

        // four processes sweeping at once, each with its own pool connection
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<List<AlbumDecisions.Decision>>> sweeps = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            AlbumDecisions process = new AlbumDecisions(db);
            sweeps.add(pool.submit((Callable<List<AlbumDecisions.Decision>>) process::decideOverdue));
        }
        int decided = 0;
        for (Future<List<AlbumDecisions.Decision>> sweep : sweeps) {
            decided += sweep.get().size();
        }
        pool.shutdown();

        assertThat(decided).isEqualTo(250);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).isEqualTo(250);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision WHERE kind = 'provisional' AND completed_by = 'timeout'"))
                .isEqualTo(250);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-decision'")).isEqualTo(250);
        assertThat(decisions.decideOverdue()).as("nothing overdue is left; the future deadline waits").isEmpty();
        assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after IS NOT NULL")).isEqualTo(1);

        // a late child moves the deadline again: the next version is late, with both children
        event("message.received", "x0b", sent, "{\"id\":\"b0\"}");
        assertThat(decisions.decideOverdue()).isEmpty();
        Sql.execute(db, "UPDATE album SET decide_after = now() - interval '1 second' WHERE album_id = 'b0'");
        AlbumDecisions.Decision late = decisions.decideOverdue().get(0);
        assertThat(late.kind()).isEqualTo("late");
        assertThat(late.version()).isEqualTo(2);
        assertThat(late.childIds()).hasSize(2);
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
