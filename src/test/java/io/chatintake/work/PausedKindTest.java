package io.chatintake.work;

import static io.chatintake.store.Transactions.inTransaction;
import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.store.OperatorPause;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.apache.camel.Message;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code work pause --kind K} while K's route is broken: no item of K is claimed (so none spends an
 * attempt or is parked), new ones are still stored, other kinds run on; on resume K's items run,
 * in order per chat.
 */
@ExtendWith(TestDatabase.class)
class PausedKindTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private final DataSource dataSource = TestDatabase.dataSource();
    private final List<String> handled = new CopyOnWriteArrayList<>();
    /** The paused kind's route is being fixed: a call to it now would fail, and with 2 attempts park its item. */
    private final AtomicBoolean broken = new AtomicBoolean(true);

    @Test
    void aPausedKindIsNotClaimedItsItemsStayPendingAndNoneIsParkedAndOnResumeTheyRunInOrderPerChat() throws Exception {
        try (LogCapture log = new LogCapture(); WebhookServer product = start()) {
            pause("reply");
            schedule("other", "o1", "chat-x");
            // Each worker looks at the pauses before it claims: once one has seen this one, no claim takes a reply.
            Await.until("the dispatcher saw the pause, and other work ran after it", WAIT, () -> handled.contains("other:o1")
                    && log.lines().stream().anyMatch(l -> l.startsWith("work kind 'reply' is paused (by test since ")));

            for (int i = 1; i <= 4; i++) {
                schedule("reply", "a" + i, "chat-a");
                schedule("reply", "b" + i, "chat-b");
            }
            // An item failed once before the pause, due for its retry now.
            schedule("reply", "c1", "chat-c");
            Sql.execute(dataSource, "UPDATE work_item SET state = 'failed', attempts = 1, last_error = 'route broken'"
                    + " WHERE source_key = 'c1'");
            schedule("other", "o2", "chat-x");
            schedule("other", "o3", null);
            // Bounded: other work stored after the paused kind's ran, so claims have passed the reply items by.
            Await.until("the other kind's later items handled", WAIT, () -> handled.containsAll(List.of("other:o2", "other:o3")));
            Await.until("their outcomes recorded", WAIT, () -> Sql.count(dataSource,
                    "SELECT count(*) FROM work_item WHERE kind = 'other' AND state = 'done'") == 3);

            assertThat(handled).noneMatch(h -> h.startsWith("reply:"));
            assertThat(Sql.rows(dataSource, "SELECT state, attempts, count(*) FROM work_item WHERE kind = 'reply'"
                    + " GROUP BY state, attempts ORDER BY state")).as("as they were: pending, and the failed one still on attempt 1")
                    .containsExactly(List.of("failed", 1L, 1L), List.of("pending", 0L, 8L));
            assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'parked'")).isZero();

            broken.set(false);
            inTransaction(dataSource, c -> OperatorPause.resume(c, OperatorPause.Subject.WORK_KIND, "reply"));
            Await.until("every reply done", WAIT, () -> Sql.count(dataSource,
                    "SELECT count(*) FROM work_item WHERE kind = 'reply' AND state = 'done'") == 9);

            assertThat(handled.stream().filter(h -> h.startsWith("reply:a")).toList()).containsExactly("reply:a1", "reply:a2", "reply:a3", "reply:a4");
            assertThat(handled.stream().filter(h -> h.startsWith("reply:b")).toList()).containsExactly("reply:b1", "reply:b2", "reply:b3", "reply:b4");
            assertThat(handled).contains("reply:c1");
            assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'parked'")).isZero();
            assertThat(log.lines()).contains("work kind 'reply' resumed");
        }
    }

    private WebhookServer start() {
        return WebhookServer.builder(dataSource).withoutHttp()
                .routes(new RouteBuilder() {
                    @Override
                    public void configure() {
                        from("work:reply").process(e -> {
                            if (broken.get()) {
                                throw new IllegalStateException("route broken");
                            }
                            handled.add("reply:" + e.getMessage().getBody(String.class));
                        });
                        from("work:other").process(e -> handled.add("other:" + e.getMessage().getBody(String.class)));
                    }
                })
                .bean("replySource", source("reply"))
                .bean("otherSource", source("other"))
                .setting("work.concurrency", "2")
                .setting("work.max-attempts", "2")
                .setting("work.backoff-base-millis", "50")
                .setting("work.backoff-cap-millis", "100")
                .setting("work.poll-interval-millis", "50")
                .setting("work.ordered-kinds", "reply")
                .start();
    }

    /** A kind whose handler gets the item's source key as its body. */
    private static WorkSource source(String kind) {
        return new WorkSource(kind) {
            @Override
            public void load(Connection connection, WorkItem item, Message message) {
                message.setBody(item.sourceKey());
            }
        };
    }

    private void pause(String kind) throws Exception {
        inTransaction(dataSource, c -> OperatorPause.pause(c, OperatorPause.Subject.WORK_KIND, kind, "test"));
    }

    private void schedule(String kind, String key, String chat) throws Exception {
        try (Connection c = dataSource.getConnection()) {
            WorkQueue.schedule(c, List.of(new WorkQueue.NewWork(kind, key, 1, chat)));
        }
    }
}
