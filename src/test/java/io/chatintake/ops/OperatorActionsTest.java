package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.channel.ChildMessages;
import io.chatintake.channel.webhook.DerivingEventStore;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.RouteFile;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.work.WorkQueue;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Operator retries of parked work on a real PostgreSQL: an item whose content is gone is refused in one line, the others go back. */
@ExtendWith(TestDatabase.class)
class OperatorActionsTest {
    private final DataSource db = TestDatabase.dataSource();

    @Test
    void aRetryOfAnItemWhoseContentIsGoneIsRefusedAndTheOthersGoBack() throws Exception {
        DerivingEventStore intake = new DerivingEventStore(db, "default", ChildMessages.listener());
        for (String eventId : new String[] {"gone-1", "kept-1"}) {
            intake.store(RouteFile.unifyPortEvents(SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1",
                    Instant.now(), "{\"conversation\":{\"id\":\"c-" + eventId + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                            + "\"message\":{\"id\":\"m-" + eventId + "\",\"type\":\"text\",\"text\":\"hi\"}}"), "dlv-" + eventId));
        }
        Sql.execute(db, "UPDATE work_item SET state = 'parked', attempts = 8 WHERE kind = 'unifyport-event'");
        // What retention.content-days or an erasure leaves: the row, its content marked removed.
        Sql.execute(db, "UPDATE webhook_event SET body = NULL, payload = NULL, content_removed_at = now() WHERE event_id = 'gone-1'");
        long gone = Sql.count(db, "SELECT id FROM work_item WHERE source_key = 'default:unifyport:gone-1'");
        OperatorActions actions = new OperatorActions(db);

        OperatorActions.ActionResult refused = actions.retry(gone, "ops");
        assertThat(refused.changed()).isFalse();
        assertThat(refused.sentence()).isEqualTo("work item " + gone
                + ": refused, its content is gone (expired by retention.content-days, or erased); nothing to replay");
        assertThat(Sql.string(db, "SELECT state FROM work_item WHERE id = " + gone)).isEqualTo("parked");

        OperatorActions.ActionResult all = actions.retryAllParked("ops");
        assertThat(all.changed()).isTrue();
        assertThat(all.sentence()).isEqualTo("1 item(s) back to pending; 1 refused, their content is gone (expired or erased)");
        assertThat(Sql.string(db, "SELECT string_agg(source_key || ' ' || state, ', ' ORDER BY id) FROM work_item WHERE kind = 'unifyport-event'"))
                .isEqualTo("default:unifyport:gone-1 parked, default:unifyport:kept-1 pending");
    }
}
