package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.channel.ChildMessages;
import io.chatintake.channel.webhook.WebhookEventDeriver;
import io.chatintake.channel.webhook.WebhookEventStore;
import io.chatintake.config.Settings;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.RouteFile;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * An event stored but not derived yet holds its child's content in its own row: erasing its
 * conversation removes that content and ends the event underived, so no child message or work
 * item appears from it afterwards; another conversation's event is derived as usual.
 */
@ExtendWith(TestDatabase.class)
class ErasureOfUnderivedEventsTest {
    private static final String MARK = "UNDERIVEDERASEMARK";

    private final DataSource db = TestDatabase.dataSource();

    @Test
    void erasingAConversationWhoseEventIsNotDerivedYetLeavesNothingToDerive() throws Exception {
        WebhookEventStore intake = new WebhookEventStore(db, Duration.ofSeconds(5), "default", "unifyport", "unifyport-event", () -> { });
        for (String conversation : List.of("conv-gone", "conv-kept")) {
            intake.store(RouteFile.unifyPortEvents(SignedDeliverySender.envelope("evt-" + conversation, "message.received", "whatsapp",
                    "acc_1", Instant.now(), "{\"conversation\":{\"id\":\"" + conversation + "\",\"type\":\"user\"},\"message\":{\"id\":\"m-"
                            + conversation + "\",\"type\":\"text\",\"text\":\"" + MARK + " " + conversation + "\"}}"), "dlv-" + conversation));
        }
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE derived_at IS NULL AND child LIKE '%" + MARK + "%'")).isEqualTo(2);

        Settings settings = TestDatabase.commandSettings(Map.of("chat-intake.data-dir",
                Files.createTempDirectory("chat-intake-erase-underived").toString()));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = new EraseCommand(settings, new PrintStream(out, true, StandardCharsets.UTF_8))
                .run(List.of("--conversation", "unifyport:default:acc_1:conv-gone", "--by", "dpo"));
        assertThat(code).as(out.toString(StandardCharsets.UTF_8)).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("erased by dpo");

        assertThat(new WebhookEventDeriver(db, ChildMessages.listener()).deriveNext(100)).as("only the kept conversation's event").isEqualTo(1);
        assertThat(Sql.rows(db, "SELECT conversation_id FROM channel_message")).containsExactly(List.of("conv-kept"));
        assertThat(Sql.rows(db, "SELECT source_key FROM work_item")).containsExactly(List.of("default:unifyport:evt-conv-kept"));
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE child LIKE '%" + MARK + "%' OR body IS NOT NULL AND event_id = 'evt-conv-gone'"))
                .as("the erased event keeps no content").isZero();
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE derived_at IS NULL")).isZero();
    }
}
