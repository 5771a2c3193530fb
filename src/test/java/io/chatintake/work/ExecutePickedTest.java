package io.chatintake.work;

import static io.chatintake.work.WorkerParts.ORDERED;
import static io.chatintake.work.WorkerParts.UNORDERED;
import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** One worker's slice run through real handler routes, its outcomes recorded in a real PostgreSQL. */
@ExtendWith(TestDatabase.class)
class ExecutePickedTest {
    private static final Duration WAIT = Duration.ofSeconds(20);

    private final DataSource dataSource = TestDatabase.dataSource();
    private final List<String> handled = new CopyOnWriteArrayList<>();
    private final Set<String> failing = ConcurrentHashMap.newKeySet();
    private final Set<String> deferring = ConcurrentHashMap.newKeySet();
    /** Keys whose handler runs for a flush interval, while nothing of its run is recorded yet. */
    private final Set<String> pastAFlush = ConcurrentHashMap.newKeySet();
    /** Keys whose handler runs until the test releases it. */
    private final Set<String> held = ConcurrentHashMap.newKeySet();
    private final CountDownLatch release = new CountDownLatch(1);
    private WorkerParts parts;

    @BeforeEach
    void start() throws Exception {
        parts = new WorkerParts(dataSource, new RouteBuilder() {
            @Override
            public void configure() {
                from("work:" + ORDERED).routeId("ordered-handler").process(e -> handle(e.getMessage().getBody(String.class)));
                from("work:" + UNORDERED).routeId("unordered-handler").process(e -> handle(e.getMessage().getBody(String.class)));
            }
        });
    }

    @AfterEach
    void stop() {
        release.countDown();
        parts.close();
    }

    private void handle(String key) throws Exception {
        if (pastAFlush.contains(key)) {
            Await.throughout("nothing recorded within a flush interval", ExecutePicked.FLUSH_EVERY,
                    () -> "running/1,running/1".equals(states(ORDERED)));
        }
        if (held.contains(key)) {
            release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
        if (deferring.contains(key)) {
            throw new EffectFailure(DeferReason.CHAT_LIMIT, "chat limit for " + key, Instant.now().plusSeconds(60));
        }
        if (failing.contains(key)) {
            throw new IllegalStateException("handler failure for " + key);
        }
        handled.add(key);
    }

    private String states(String kind) {
        return Sql.string(dataSource, "SELECT string_agg(state || '/' || attempts, ',' ORDER BY id) FROM work_item WHERE kind = '" + kind + "'");
    }

    @Test
    void aSliceRunsEachRunInItsOrderAndRecordsEveryOutcomeAndFreesTheLanes() throws Exception {
        parts.schedule(ORDERED, "a", 1, 2, 3);
        parts.schedule(ORDERED, "b", 4, 5);
        List<ActiveRun> slice = parts.claimSlice();
        assertThat(slice).hasSize(2);

        parts.executing.execute(new Slice(slice));

        assertThat(handled).containsExactlyInAnyOrder("ordered-work:1", "ordered-work:2", "ordered-work:3", "ordered-work:4", "ordered-work:5");
        assertThat(handled.stream().filter(k -> List.of("ordered-work:1", "ordered-work:2", "ordered-work:3").contains(k)))
                .containsExactly("ordered-work:1", "ordered-work:2", "ordered-work:3");
        assertThat(states(ORDERED)).isEqualTo("done/1,done/1,done/1,done/1,done/1");
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_lane WHERE claim_token IS NOT NULL")).as("lanes freed").isZero();
        assertThat(parts.runs.tokens()).as("nothing left held here").isEmpty();
    }

    @Test
    void aFailureEndsAnOrderedRunAndItsItemsAfterItGoBackUnrun() throws Exception {
        failing.add("ordered-work:2");
        parts.schedule(ORDERED, "a", 1, 2, 3);

        parts.executing.execute(new Slice(parts.claimSlice()));

        assertThat(handled).containsExactly("ordered-work:1");
        assertThat(states(ORDERED)).isEqualTo("done/1,failed/1,pending/0");
        assertThat(Sql.string(dataSource, "SELECT last_error FROM work_item WHERE source_key = 'ordered-work:2'"))
                .contains("handler failure for ordered-work:2");
    }

    @Test
    void anUnorderedRunGoesOnPastAFailure() throws Exception {
        failing.add("unordered-work:2");
        parts.schedule(UNORDERED, "a", 1, 2, 3);

        parts.executing.execute(new Slice(parts.claimSlice()));

        assertThat(handled).containsExactly("unordered-work:1", "unordered-work:3");
        assertThat(states(UNORDERED)).isEqualTo("done/1,failed/1,done/1");
    }

    @Test
    void aDeferralHoldsItsChatOrderedOrNotWithoutSpendingAnAttempt() throws Exception {
        deferring.add("unordered-work:1");
        parts.schedule(UNORDERED, "a", 1, 2);

        parts.executing.execute(new Slice(parts.claimSlice()));

        assertThat(handled).isEmpty();
        assertThat(Sql.string(dataSource, "SELECT string_agg(state || '/' || attempts || '/' || (next_attempt_at > now()), ',' ORDER BY id)"
                + " FROM work_item")).isEqualTo("pending/0/true,pending/0/false");
        assertThat(Sql.string(dataSource, "SELECT (due_at > now() + interval '50 seconds')::text FROM work_lane"))
                .as("the chat waits for its limit").isEqualTo("true");
    }

    @Test
    void itemsOfAKindWhoseRouteStoppedAfterTheClaimWaitAsTheyWere() throws Exception {
        parts.schedule(ORDERED, "a", 1, 2);
        List<ActiveRun> slice = parts.claimSlice();
        parts.camel.getRouteController().stopRoute("ordered-handler");

        parts.executing.execute(new Slice(slice));

        assertThat(handled).isEmpty();
        assertThat(states(ORDERED)).as("no attempt spent").isEqualTo("pending/0,pending/0");
    }

    @Test
    void aRunHandedBackBeforeItStartedIsLeftToTheWorkerThatHasItNow() throws Exception {
        parts.schedule(ORDERED, "a", 1);
        parts.schedule(ORDERED, "b", 2);
        List<ActiveRun> slice = parts.claimSlice();
        ActiveRun handedBack = slice.get(1);
        assertThat(handedBack.move(ActiveRun.State.SLICED, ActiveRun.State.QUEUED)).isTrue();

        parts.executing.execute(new Slice(slice));

        WorkItem other = handedBack.run.items().get(0);
        assertThat(handled).containsExactly(slice.get(0).run.items().get(0).sourceKey());
        assertThat(Sql.string(dataSource, "SELECT state || ' ' || claim_token FROM work_item WHERE id = " + other.id()))
                .as("still its claim's, for the worker that takes it").isEqualTo("running " + other.claimToken());
    }

    @Test
    void aLongRunRecordsWhatItHasDoneWhileItGoesOn() throws Exception {
        pastAFlush.add("ordered-work:1");
        held.add("ordered-work:2");
        parts.schedule(ORDERED, "a", 1, 2);
        List<ActiveRun> slice = parts.claimSlice();

        CompletableFuture<Void> executing = CompletableFuture.runAsync(() -> parts.executing.execute(new Slice(slice)));
        Await.until("the first item recorded done while the second's handler runs", WAIT,
                () -> "done/1,running/1".equals(states(ORDERED)));
        release.countDown();
        executing.get(WAIT.toSeconds(), TimeUnit.SECONDS);

        assertThat(states(ORDERED)).isEqualTo("done/1,done/1");
    }
}
