package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.channel.ChildMessages;
import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RouteFile;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The stored event as the job: duplicates while it waits for its derivation, and derivers running side by side. */
@ExtendWith(TestDatabase.class)
class WebhookDerivationTest {
    private static final String DERIVATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.webhook_event derivation'))";

    @Test
    void aRedeliveryOfAnEventStoredButNotDerivedIsADuplicateAndTheEventIsDerivedOnce(DataSource db) throws Exception {
        try (WebhookServer server = WebhookServer.start(db, Map.of("unifyport.signing-secrets", "secret_1"))) {
            SignedDeliverySender sender = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of("secret_1"));
            byte[] body = SignedDeliverySender.envelope("evt_twice", "message.received", "whatsapp", "acc_1", Instant.now(),
                    "{\"conversation\":{\"id\":\"c1\",\"type\":\"user\"},\"message\":{\"id\":\"m1\",\"type\":\"text\",\"text\":\"hi\"}}");
            try (Connection holder = db.getConnection(); Statement s = holder.createStatement()) {
                holder.setAutoCommit(false);
                // Every deriver waits for this lock: the event stays stored and underived while it is held.
                s.execute(DERIVATION_LOCK);
                assertThat(sender.post(sender.sign("evt_twice", body, TimestampForm.RFC3339)).body()).isEqualTo("{\"status\":\"stored\"}");
                assertThat(sender.post(sender.sign("evt_twice", body, TimestampForm.UNIX_SECONDS)).body())
                        .isEqualTo("{\"status\":\"duplicate\"}");
                assertThat(Sql.rows(db, "SELECT delivery_count, derived_at IS NULL, work_kind, chat_key FROM webhook_event"))
                        .containsExactly(List.of(2L, true, "unifyport-event", "default:whatsapp:acc_1:c1"));
                assertThat(Sql.count(db, "SELECT (SELECT count(*) FROM channel_message) + (SELECT count(*) FROM work_item)")).isZero();
                holder.commit();
            }
            Await.workScheduled(db);
            assertThat(Sql.rows(db, "SELECT (SELECT count(*) FROM channel_message), (SELECT count(*) FROM work_item),"
                    + " (SELECT count(*) FROM webhook_event WHERE derived_at IS NOT NULL AND child IS NULL)"))
                    .as("one child, one work item, the event marked derived").containsExactly(List.of(1L, 1L, 1L));
            assertThat(new WebhookEventDeriver(db, ChildMessages.listener()).deriveNext(100)).as("nothing left to derive").isZero();
        }
    }

    @Test
    void deriversSideBySideDeriveEachEventOnceAndKeepEachChatsOrder(DataSource db) throws Exception {
        WebhookEventStore store = new WebhookEventStore(db, Duration.ofSeconds(5), "default", "unifyport", "unifyport-event", () -> { });
        for (int i = 0; i < 300; i++) {
            store.store(RouteFile.unifyPortEvents(SignedDeliverySender.envelope("evt_" + i, "message.received", "whatsapp", "acc_1",
                    Instant.now(), "{\"conversation\":{\"id\":\"c" + (i % 4) + "\",\"type\":\"user\"},\"message\":{\"id\":\"m" + i
                            + "\",\"type\":\"text\",\"text\":\"t" + i + "\"}}"), "dlv_" + i));
        }
        ExecutorService replicas = Executors.newFixedThreadPool(3);
        try {
            List<Future<Integer>> derived = new ArrayList<>();
            for (int r = 0; r < 3; r++) {
                WebhookEventDeriver deriver = new WebhookEventDeriver(db, ChildMessages.listener());
                derived.add(replicas.submit(() -> {
                    int total = 0;
                    for (int taken = 1; taken > 0; total += taken) {
                        taken = deriver.deriveNext(17);
                    }
                    return total;
                }));
            }
            int total = 0;
            for (Future<Integer> f : derived) {
                total += f.get();
            }
            assertThat(total).as("each event derived by exactly one of them").isEqualTo(300);
        } finally {
            replicas.shutdownNow();
        }
        assertThat(Sql.rows(db, "SELECT count(*), count(DISTINCT source_id) FROM work_item")).containsExactly(List.of(300L, 300L));
        assertThat(Sql.count(db, "SELECT count(*) FROM channel_message")).isEqualTo(300);
        for (int chat = 0; chat < 4; chat++) {
            assertThat(Sql.rows(db, "SELECT source_id FROM work_item WHERE chat_key LIKE '%:c" + chat + "' ORDER BY id"))
                    .as("chat c%d: work items in the order of its events", chat)
                    .isEqualTo(Sql.rows(db, "SELECT id FROM webhook_event WHERE chat_key LIKE '%:c" + chat + "' ORDER BY id"));
        }
    }
}
