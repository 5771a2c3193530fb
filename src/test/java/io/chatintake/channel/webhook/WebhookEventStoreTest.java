package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.channel.ChildMessages;
import io.chatintake.channel.webhook.WebhookEventSink.Stored;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.RouteFile;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The event store writes the deliveries of a transaction in set-based statements: what each
 * event and child gets must be exactly what one statement per event gave, also when one group
 * holds an event twice or several events about one child.
 */
@ExtendWith(TestDatabase.class)
class WebhookEventStoreTest {
    private final DataSource db = TestDatabase.dataSource();
    private final WebhookEventStore store = new WebhookEventStore(db, Duration.ofSeconds(5), "default", "unifyport", "unifyport-event",
            () -> { });
    private final WebhookEventDeriver deriver = new WebhookEventDeriver(db, ChildMessages.listener());
    private final Instant now = Instant.parse("2026-12-01T08:00:00Z");

    @Test
    void eventsAboutOneChildInOneTransactionApplyInOrderAndARepeatedEventCountsAsARedelivery() throws Exception {
        List<WebhookEvent> events = new ArrayList<>();
        events.addAll(event("evt_rcv", "message.received", now, "first text"));
        events.addAll(event("evt_upd", "message.updated", now.plusSeconds(2), "edited text"));
        events.addAll(event("evt_del", "message.deleted", now.plusSeconds(3), null));
        events.addAll(event("evt_rcv", "message.received", now, "first text"));

        List<Stored> stored = store.store(events);

        assertThat(stored).extracting(Stored::firstDelivery).containsExactly(true, true, true, false);
        assertThat(stored.get(3).id()).as("the repeat finds the row its first occurrence wrote").isEqualTo(stored.get(0).id());
        assertThat(Sql.rows(db, "SELECT event_id, delivery_count, id FROM webhook_event ORDER BY id")).containsExactly(
                List.of("evt_rcv", 2L, stored.get(0).id()), List.of("evt_upd", 1L, stored.get(1).id()), List.of("evt_del", 1L, stored.get(2).id()));
        assertThat(Sql.count(db, "SELECT count(*) FROM channel_message") + Sql.count(db, "SELECT count(*) FROM work_item"))
                .as("the answer waits for one row per event: children and work items come after").isZero();
        assertThat(deriver.deriveNext(1000)).as("each new event derived once").isEqualTo(3);
        assertThat(deriver.deriveNext(1000)).isZero();
        assertThat(Sql.rows(db, "SELECT text, deleted_at IS NOT NULL, first_event_id FROM channel_message"))
                .as("one child: the newest content, marked deleted, first written by the first event")
                .containsExactly(List.of("edited text", true, "evt_rcv"));
        assertThat(Sql.rows(db, "SELECT source_id FROM work_item ORDER BY id")).as("one work item per new event, in order")
                .containsExactly(List.of(stored.get(0).id()), List.of(stored.get(1).id()), List.of(stored.get(2).id()));
    }

    @Test
    void aLoneEventGetsTheRowsItWouldGetInAGroupOfSeveral() throws Exception {
        List<List<WebhookEvent>> deliveries = List.of(
                event("evt_rcv", "message.received", now, "first text"),
                event("evt_upd", "message.updated", now.plusSeconds(2), "edited text"),
                event("evt_late", "message.updated", now.plusSeconds(1), "older edit, arrived late"),
                event("evt_rcv", "message.received", now, "first text"),
                event("evt_del", "message.deleted", now.plusSeconds(3), null),
                message("evt_react", "message.reaction", now, "m2", null, "[]"),
                message("evt_rcv2", "message.received", now.plusSeconds(4), "m2", "content after its reaction",
                        "[{\"type\":\"image\",\"url\":\"https://media.example/a.jpg\"}]"),
                RouteFile.unifyPortEvents(SignedDeliverySender.envelope("evt_acct", "account.connected", "whatsapp", "acc", now, "{}"),
                        "dlv-evt_acct"),
                RouteFile.unifyPortEvents("not json at all".getBytes(StandardCharsets.UTF_8), "dlv-broken"));
        WebhookEventStore grouped = new WebhookEventStore(db, Duration.ofSeconds(5), "grouped", "unifyport", "unifyport-event",
                () -> { });

        List<Boolean> alone = new ArrayList<>();
        for (List<WebhookEvent> delivery : deliveries) {
            alone.add(store.store(delivery).get(0).firstDelivery());
        }
        List<Boolean> together = grouped.store(deliveries.stream().flatMap(List::stream).toList()).stream().map(Stored::firstDelivery).toList();
        deriver.deriveNext(1000);

        assertThat(alone).containsExactly(true, true, true, false, true, true, true, true, true).isEqualTo(together);
        assertThat(rowsOf("default")).isEqualTo(rowsOf("grouped")).hasSize(8 + 2 + 8);
        assertThat(Sql.rows(db, "SELECT text, caption, attachments::text, deleted_at IS NOT NULL, first_event_id FROM channel_message"
                + " WHERE workspace = 'default' ORDER BY message_id")).containsExactly(
                Arrays.asList("edited text", null, null, true, "evt_rcv"),
                Arrays.asList("content after its reaction", null, "[{\"url\": \"https://media.example/a.jpg\", \"type\": \"image\"}]", false, "evt_react"));
        assertThat(Sql.rows(db, "SELECT m.workspace, a.position, a.status FROM message_attachment a"
                + " JOIN channel_message m ON m.id = a.channel_message_id ORDER BY m.workspace"))
                .as("the attachment recorded with its child, alone as in a group").containsExactly(
                        List.of("default", 0L, "pending"), List.of("grouped", 0L, "pending"));
    }

    /** What the store and the deriver wrote for one workspace: events, children and work items, without ids and arrival times. */
    private List<List<Object>> rowsOf(String workspace) throws SQLException {
        List<List<Object>> rows = new ArrayList<>();
        rows.addAll(Sql.rows(db, "SELECT event_id, first_delivery_id, last_delivery_id, delivery_count, event_type, provider, account_id,"
                + " occurred_at::text, encode(body, 'hex'), payload::text, parse_error FROM webhook_event WHERE workspace = '" + workspace
                + "' ORDER BY event_id"));
        rows.addAll(Sql.rows(db, "SELECT provider, account_id, conversation_id, message_id, message_type, text, caption, attachments::text,"
                + " sent_at::text, album_id, deleted_at::text, first_event_id, last_event_at::text FROM channel_message WHERE workspace = '"
                + workspace + "' ORDER BY message_id"));
        rows.addAll(Sql.rows(db, "SELECT w.kind, split_part(w.source_key, ':', 3), split_part(w.chat_key, ':', 4), e.event_id"
                + " FROM work_item w JOIN webhook_event e ON e.id = w.source_id WHERE w.source_key LIKE '" + workspace + ":%' ORDER BY w.id"));
        return rows;
    }

    @Test
    void deliveriesSharingTransactionsEachGetTheRowsOfTheirOwnEvents() throws Exception {
        ExecutorService senders = Executors.newFixedThreadPool(16);
        try {
            List<Future<List<Stored>>> answers = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                // Each about a message of its own, like most deliveries: a group of them is one statement.
                List<WebhookEvent> delivery = message("evt_" + i, "message.received", now, "m" + i, "text " + i, null);
                answers.add(senders.submit(() -> store.store(delivery)));
            }
            for (int i = 0; i < answers.size(); i++) {
                Stored stored = answers.get(i).get().get(0);
                assertThat(stored.firstDelivery()).isTrue();
                assertThat(Sql.rows(db, "SELECT event_id FROM webhook_event WHERE id = " + stored.id()))
                        .as("delivery %d is answered with its own row", i).containsExactly(List.of("evt_" + i));
            }
        } finally {
            senders.shutdownNow();
        }
        assertThat(Sql.rows(db, "SELECT count(*), count(DISTINCT txid) < 200 FROM (SELECT xmin::text AS txid FROM webhook_event) t"))
                .as("all stored, some of them sharing a transaction").containsExactly(List.of(200L, true));
    }

    @Test
    void aDeliveryHeldUpByALockFailsAtTheStatementTimeoutStoringNothing() throws Exception {
        WebhookEventStore bounded = new WebhookEventStore(db, Duration.ofMillis(300), "default", "unifyport", "unifyport-event",
                () -> { });
        try (Connection locker = db.getConnection(); Statement s = locker.createStatement()) {
            locker.setAutoCommit(false);
            s.execute("LOCK TABLE webhook_event IN ACCESS EXCLUSIVE MODE");
            long started = System.nanoTime();
            assertThatThrownBy(() -> bounded.store(event("evt_locked", "message.received", now, "held up")))
                    .isInstanceOf(SQLException.class).hasMessageContaining("canceling statement due to statement timeout");
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(3));
            locker.rollback();
        }
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id = 'evt_locked'")).isZero();
    }

    private List<WebhookEvent> event(String id, String type, Instant at, String text) {
        return message(id, type, at, "m1", text, null);
    }

    private List<WebhookEvent> message(String id, String type, Instant at, String messageId, String text, String attachmentsJson) {
        String textField = text == null ? "" : ",\"text\":\"" + text + "\"";
        String attachmentsField = attachmentsJson == null ? "" : ",\"attachments\":" + attachmentsJson;
        return RouteFile.unifyPortEvents(SignedDeliverySender.envelope(id, type, "whatsapp", "acc", at,
                "{\"conversation\":{\"id\":\"c1\",\"type\":\"user\"},\"message\":{\"id\":\"" + messageId + "\",\"type\":\"text\""
                        + textField + attachmentsField + "}}"), "dlv-" + id);
    }
}
