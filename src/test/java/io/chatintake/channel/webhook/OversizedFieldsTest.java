package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Authentic events whose ids are too long for an index entry (a btree entry holds about 2.7 kB,
 * and random text does not compress): each is stored and handled, and none holds up the events
 * after it. Before, such an event failed its delivery at every retry, or, once stored, failed the
 * derivation of every later event with it.
 */
@ExtendWith(TestDatabase.class)
class OversizedFieldsTest {
    /** 9 kB that no compression brings under the limit. */
    private static final String HUGE = huge();

    @Test
    void eventsWhoseChildTheDatabaseRefusesAreSetAsideAndHoldUpNoLaterEvent(DataSource db) {
        try (LogCapture logs = new LogCapture();
             WebhookServer server = WebhookServer.start(db, Map.of("unifyport.signing-secrets", "s1", "unifyport.workspace", "ws"))) {
            SignedDeliverySender sender = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of("s1"));
            List<String[]> events = List.of(new String[] {"evt_long_chat", HUGE, "m1", "a1"}, new String[] {"evt_long_message", "c1", HUGE, "a1"},
                    new String[] {"evt_long_album", "c1", "m2", HUGE}, new String[] {"evt_after", "c1", "m3", null});
            for (String[] e : events) {
                String album = e[3] == null ? "" : ",\"album\":{\"id\":\"" + e[3] + "\",\"index\":1,\"total\":2}";
                byte[] body = SignedDeliverySender.envelope(e[0], "message.received", "whatsapp", "acc_1", Instant.now(),
                        "{\"conversation\":{\"id\":\"" + e[1] + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                                + "\"message\":{\"id\":\"" + e[2] + "\",\"type\":\"image\",\"direction\":\"in\"" + album + "}}");
                assertThat(sender.post(sender.sign(e[0], body, TimestampForm.RFC3339)).body()).isEqualTo("{\"status\":\"stored\"}");
            }

            Await.workScheduled(db);
            assertThat(Sql.string(db, "SELECT string_agg(event_id || ' ' || coalesce(parse_error, '-'), ', ' ORDER BY id) FROM webhook_event"
                    + " WHERE channel = 'unifyport'"))
                    .isEqualTo("evt_long_chat child_not_derivable_54000, evt_long_message child_not_derivable_54000,"
                            + " evt_long_album child_not_derivable_54000, evt_after -");
            assertThat(Sql.rows(db, "SELECT message_id FROM channel_message WHERE conversation_id = 'c1'")).as("the later event's child").containsExactly(List.of("m3"));
            Await.until("every event handled", Duration.ofSeconds(20),
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'unifyport-event' AND state = 'done'") == 4);
            assertThat(Sql.string(db, "SELECT string_agg(coalesce(chat_key, '-'), ' ' ORDER BY id) FROM work_item WHERE kind = 'unifyport-event'"))
                    .as("set aside outside any chat's lane").isEqualTo("- - - ws:whatsapp:acc_1:c1");
            assertThat(logs.lines().stream().filter(l -> l.contains("unifyport webhook: the event in row") && l.contains("refuses its child message")).count()).isEqualTo(3);
            assertThat(logs.lines()).noneMatch(l -> l.startsWith("\tat ")).noneMatch(l -> l.contains(HUGE.substring(0, 40)));
        }
    }

    @Test
    void anIdTooLongForTheDedupeIndexIsKeyedByItsDigestAndASenderIdTooLongIsNotIndexed(DataSource db) throws Exception {
        try (WebhookServer server = WebhookServer.start(db, Map.of("whatsapp.app-secrets", "s1", "whatsapp.verify-token", "v"),
                "file:routes/whatsapp.yaml")) {
            SignedDeliverySender meta = new SignedDeliverySender(server.uri("/webhooks/whatsapp"), Secret.of("s1"), SignatureScheme.meta());
            byte[] longId = whatsApp(message(HUGE, "16505551234"));
            assertThat(meta.postSigned(longId, "application/json").body()).isEqualTo("{\"status\":\"stored\"}");
            // The same id beside two ordinary messages, one of them from a sender whose id is too long.
            byte[] again = whatsApp(message("wamid.OK1", "16505551234") + "," + message(HUGE, "16505551234") + "," + message("wamid.OK2", HUGE));
            assertThat(meta.postSigned(again, "application/json").body()).isEqualTo("{\"status\":\"stored\"}");

            String digest = "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(HUGE.getBytes(StandardCharsets.UTF_8)));
            assertThat(Sql.rows(db, "SELECT event_id, delivery_count FROM webhook_event WHERE channel = 'whatsapp' ORDER BY id"))
                    .containsExactly(List.of(digest, 2L), List.of("wamid.OK1", 1L), List.of("wamid.OK2", 1L));
            assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE payload ->> 'id' = '" + HUGE + "'")).as("the id as sent, in the event").isEqualTo(1);
            Await.until("every event handled", Duration.ofSeconds(20),
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'whatsapp-event' AND state = 'done'") == 3);
        }
    }

    private static String message(String id, String from) {
        return "{\"from\":\"" + from + "\",\"id\":\"" + id + "\",\"timestamp\":\"" + Instant.now().getEpochSecond()
                + "\",\"type\":\"text\",\"text\":{\"body\":\"hi\"}}";
    }

    private static byte[] whatsApp(String messages) {
        return ("{\"object\":\"whatsapp_business_account\",\"entry\":[{\"id\":\"WABA\",\"changes\":[{\"value\":{\"messaging_product\":\"whatsapp\","
                + "\"metadata\":{\"display_phone_number\":\"1555\",\"phone_number_id\":\"PN1\"},\"messages\":[" + messages + "]},"
                + "\"field\":\"messages\"}]}]}").getBytes(StandardCharsets.UTF_8);
    }

    private static String huge() {
        StringBuilder text = new StringBuilder();
        Random random = new Random(1);
        while (text.length() < 9000) {
            text.append(Long.toString(random.nextLong() & Long.MAX_VALUE, 36));
        }
        return text.toString();
    }
}
