package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.CachedPlan;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The queue's claims, fencing and lanes, statement by statement against a real PostgreSQL. */
@ExtendWith(TestDatabase.class)
class WorkQueueTest {
    private static final Duration CLAIM = Duration.ofSeconds(60);
    private static final Set<String> ORDERED = Set.of("chat-work");
    private static final Set<String> KINDS = Set.of("chat-work", "loose", "unordered");

    private final DataSource dataSource = TestDatabase.dataSource();
    private final WorkQueue queue = new WorkQueue(dataSource);

    private void schedule(String kind, String chat, int... ids) throws Exception {
        WorkerParts.schedule(dataSource, kind, chat, ids);
    }

    /** Stages work in a transaction of its own, the way intake does: one statement, rows in order. */
    private void stage(List<WorkQueue.NewWork> work) throws Exception {
        try (Connection c = dataSource.getConnection();
             var ps = c.prepareStatement("WITH new_work AS (SELECT * FROM unnest(?::text[], ?::text[], ?::bigint[], ?::text[])"
                     + " WITH ORDINALITY AS n(kind, source_key, source_id, chat_key, o)), " + WorkQueue.stageFrom("new_work")
                     + " SELECT count(*) FROM staged")) {
            ps.setArray(1, c.createArrayOf("text", work.stream().map(WorkQueue.NewWork::kind).toArray()));
            ps.setArray(2, c.createArrayOf("text", work.stream().map(WorkQueue.NewWork::sourceKey).toArray()));
            ps.setArray(3, c.createArrayOf("bigint", work.stream().map(WorkQueue.NewWork::sourceId).toArray()));
            ps.setArray(4, c.createArrayOf("text", work.stream().map(WorkQueue.NewWork::chatKey).toArray()));
            ps.executeQuery().close();
        }
    }

    @Test
    void stagedWorkBecomesItemsOnceAndEachChatKeepsItsStagingOrderWhileSchedulersRunAtOnce() throws Exception {
        // 40 transactions of 50 items over 7 chats (and some without a chat); every fifth source staged twice.
        CompletableFuture<?>[] schedulers = new CompletableFuture<?>[3];
        java.util.concurrent.atomic.AtomicBoolean staging = new java.util.concurrent.atomic.AtomicBoolean(true);
        for (int s = 0; s < schedulers.length; s++) {
            schedulers[s] = CompletableFuture.runAsync(() -> {
                try {
                    while (staging.get() || queue.anyStaged()) {
                        queue.scheduleStaged(37);
                    }
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
        }
        int id = 0;
        for (int t = 0; t < 40; t++) {
            List<WorkQueue.NewWork> work = new ArrayList<>();
            for (int i = 0; i < 50; i++, id++) {
                String chat = id % 8 == 7 ? null : "c" + id % 7;
                work.add(new WorkQueue.NewWork("chat-work", "chat-work:" + id, id, chat));
                if (id % 5 == 0) {
                    work.add(new WorkQueue.NewWork("chat-work", "chat-work:" + id, id, chat));
                }
            }
            stage(work);
        }
        staging.set(false);
        CompletableFuture.allOf(schedulers).get(60, TimeUnit.SECONDS);

        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_staged")).isZero();
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item")).as("each source once").isEqualTo(id);
        assertThat(Sql.count(dataSource, """
                SELECT count(*) FROM (SELECT source_id, lag(source_id) OVER (PARTITION BY chat_key ORDER BY id) AS before
                                        FROM work_item WHERE chat_key IS NOT NULL) w WHERE before > source_id"""))
                .as("items of a chat whose ids run against their staging order").isZero();
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_lane WHERE due_at IS NOT NULL")).as("every chat's lane due").isEqualTo(7);
    }

    private static List<RunResult> allDone(WorkRun run) {
        return run.items().stream().map(RunResult::done).toList();
    }

    @Test
    void extendingClaimsNeverWaitsForAnItemWhoseOutcomeIsBeingRecorded() throws Exception {
        schedule("chat-work", "c1", 1, 2, 3);
        WorkRun run = queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS);
        long recorded = run.items().get(1).id();
        String expiries = "SELECT string_agg(claim_expires_at::text, ',' ORDER BY id) FROM work_item WHERE id <> " + recorded;
        String before = Sql.string(dataSource, expiries);
        try (Connection recording = dataSource.getConnection()) {
            // As the recording of an outcome holds the item, in the order its statement takes them.
            recording.setAutoCommit(false);
            recording.createStatement().execute("SELECT 1 FROM work_item WHERE id = " + recorded + " FOR UPDATE");
            List<Long> held = CompletableFuture.supplyAsync(() -> {
                try {
                    return queue.extend("process-a", List.of(run.token()), CLAIM);
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            }).get(10, TimeUnit.SECONDS);
            assertThat(held).as("the run is still held").containsExactly(run.token());
            recording.rollback();
        }
        assertThat(Sql.string(dataSource, expiries)).as("the other items' claims extended").isNotEqualTo(before);
    }

    /** Silence counts from the database's start: a test database started just now has seen no process silent that long. */
    private void databaseUpFor(Duration silence) {
        Await.until("the database up for " + silence, silence.plusSeconds(5), () -> "t".equals(Sql.string(dataSource,
                "SELECT pg_postmaster_start_time() < now() - make_interval(secs => " + silence.toSeconds() + ")")));
    }

    @Test
    void anOutcomeWithAStaleTokenIsDroppedAndTheNewClaimsOutcomeCounts() throws Exception {
        schedule("chat-work", "c1", 1, 2, 3);
        WorkRun first = queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS);
        assertThat(first.items()).extracting(WorkItem::sourceId).containsExactly(1L, 2L, 3L);

        // process-a never beat: process-b releases its claims, then claims the chat itself.
        databaseUpFor(Duration.ofSeconds(8));
        assertThat(queue.releaseClaimsOfDeadProcesses("process-b", Duration.ofSeconds(8))).isEqualTo(3);
        WorkRun second = queue.claimLane("process-b", CLAIM, 100, ORDERED, KINDS);
        assertThat(second.token()).isNotEqualTo(first.token());
        assertThat(second.items()).extracting(WorkItem::id).isEqualTo(first.items().stream().map(WorkItem::id).toList());

        assertThat(queue.finish(first, allDone(first), List.of())).as("the stale claim's outcome").isFalse();
        assertThat(queue.extend("process-a", List.of(first.token()), CLAIM)).isEmpty();
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'running' AND claim_token = " + second.token()))
                .isEqualTo(3);

        assertThat(queue.extend("process-b", List.of(second.token()), CLAIM)).containsExactly(second.token());
        assertThat(queue.finish(second, allDone(second), List.of())).isTrue();
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'done' AND claim_token IS NULL")).isEqualTo(3);
        assertThat(Sql.string(dataSource, "SELECT claimed_by IS NULL AND due_at IS NULL FROM work_lane"))
                .as("the lane the run emptied is idle, not due for a claim that would find nothing").isEqualTo("t");
        assertThat(queue.claimLane("process-b", CLAIM, 100, ORDERED, KINDS)).as("nothing left").isNull();
        schedule("chat-work", "c1", 4);
        assertThat(Sql.string(dataSource, "SELECT due_at <= now() FROM work_lane")).as("new work makes it due").isEqualTo("t");
        assertThat(queue.claimLane("process-b", CLAIM, 100, ORDERED, KINDS).items()).extracting(WorkItem::sourceId).containsExactly(4L);
    }

    @Test
    void claimsOfSilentProcessesNamedEitherSideOfThisOneAreReleasedItsOwnAreNot() throws Exception {
        schedule("chat-work", "c1", 1);
        schedule("chat-work", "c2", 2);
        schedule("chat-work", "c3", 3);
        for (String process : List.of("process-a", "process-m", "process-z")) {
            assertThat(queue.claimLane(process, CLAIM, 100, ORDERED, KINDS)).isNotNull();
        }

        databaseUpFor(Duration.ofSeconds(8));
        assertThat(queue.releaseClaimsOfDeadProcesses("process-m", Duration.ofSeconds(8))).isEqualTo(2);
        assertThat(Sql.string(dataSource, "SELECT string_agg(claimed_by, ',') FROM work_item WHERE state = 'running'"))
                .isEqualTo("process-m");
        assertThat(Sql.string(dataSource, "SELECT string_agg(claimed_by, ',') FROM work_lane WHERE claimed_by IS NOT NULL"))
                .isEqualTo("process-m");
    }

    @Test
    void aProcessThatBeatsKeepsItsClaims() throws Exception {
        schedule("chat-work", "c1", 1);
        new RunnerHeartbeat(dataSource, "process-a", () -> null).beat();
        WorkRun run = queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS);

        assertThat(queue.releaseClaimsOfDeadProcesses("process-b", Duration.ofSeconds(8))).isZero();
        assertThat(queue.claimLane("process-b", CLAIM, 100, ORDERED, KINDS)).isNull();
        assertThat(queue.finish(run, allDone(run), List.of())).isTrue();
    }

    @Test
    void anOrderedRunStoppedByAFailureHoldsItsChatUntilTheRetryAndOtherChatsGoOn() throws Exception {
        schedule("chat-work", "c1", 1, 2, 3);
        schedule("chat-work", "c2", 4);
        WorkRun run = queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS);
        WorkRun other = queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS);
        assertThat(other.chatKey()).isNotEqualTo(run.chatKey());
        WorkRun c1 = "c1".equals(run.chatKey()) ? run : other;
        List<WorkItem> items = c1.items();

        Instant retryAt = Instant.now().plusSeconds(3600);
        assertThat(queue.finish(c1, List.of(RunResult.done(items.get(0)),
                RunResult.failed(items.get(1), "boom", retryAt)), List.of(items.get(2)))).isTrue();

        assertThat(Sql.string(dataSource, "SELECT string_agg(state || '/' || attempts, ',' ORDER BY id) FROM work_item WHERE chat_key = 'c1'"))
                .isEqualTo("done/1,failed/1,pending/0");
        schedule("chat-work", "c1", 5);
        assertThat(queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS)).as("c1 waits for item 2's retry").isNull();
        assertThat(Sql.string(dataSource, "SELECT head_id = " + items.get(1).id() + " AND due_at > now() + interval '50 minutes'"
                + " FROM work_lane WHERE chat_key = 'c1'")).isEqualTo("t");

        assertThat(queue.retry(items.get(1).id())).isEqualTo(1);
        WorkRun again = queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS);
        assertThat(again.items()).extracting(WorkItem::sourceId).containsExactly(2L, 3L, 5L);
    }

    @Test
    void aRetriedItemBelowTheHeadMovesTheHeadBack() throws Exception {
        schedule("chat-work", "c1", 1, 2);
        WorkRun run = queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS);
        assertThat(queue.finish(run, List.of(RunResult.parked(run.items().get(0), "bad"),
                RunResult.done(run.items().get(1))), List.of())).isTrue();
        assertThat(queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS)).isNull();

        assertThat(queue.retry(null)).isEqualTo(1);
        assertThat(queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS).items()).extracting(WorkItem::sourceId).containsExactly(1L);
    }

    @Test
    void itemsWithoutAChatAreClaimedOneByOneAndAnUnorderedChatIsNotHeldByAFailure() throws Exception {
        schedule("loose", null, 1, 2);
        WorkRun a = queue.claimUnlaned("process-a", CLAIM, KINDS);
        WorkRun b = queue.claimUnlaned("process-a", CLAIM, KINDS);
        assertThat(List.of(a.items().size(), b.items().size())).containsExactly(1, 1);
        assertThat(a.token()).isNotEqualTo(b.token());
        assertThat(queue.claimUnlaned("process-a", CLAIM, KINDS)).isNull();

        schedule("unordered", "c9", 3, 4);
        WorkRun run = queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS);
        assertThat(queue.finish(run, List.of(RunResult.failed(run.items().get(0), "boom", Instant.now().plusSeconds(3600)),
                RunResult.done(run.items().get(1))), List.of())).isTrue();
        schedule("unordered", "c9", 5);
        assertThat(queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS).items()).extracting(WorkItem::sourceId).containsExactly(5L);
    }

    @Test
    void aRunFinishedWhileIntakeHoldsItsLaneLeavesTheLaneDueForWhatThatIntakeStored() throws Exception {
        schedule("chat-work", "c1", 1);
        WorkRun run = queue.claimLane("process-a", CLAIM, 100, ORDERED, KINDS);
        CompletableFuture<Boolean> finishing;
        try (Connection intake = dataSource.getConnection()) {
            intake.setAutoCommit(false);
            WorkQueue.schedule(intake, List.of(new WorkQueue.NewWork("chat-work", "chat-work:2", 2, "c1")));
            // The lane is skipped by the commit of the outcome, then released on its own: that waits for intake.
            finishing = CompletableFuture.supplyAsync(() -> {
                try {
                    return queue.finish(run, allDone(run), List.of());
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            Await.until("the release waits for intake's lock", Duration.ofSeconds(10), () -> Sql.count(dataSource,
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE OF l%'") == 1);
            intake.commit();
        }
        assertThat(finishing.get(10, TimeUnit.SECONDS)).isTrue();
        assertThat(Sql.string(dataSource, "SELECT claimed_by IS NULL AND due_at <= now() FROM work_lane"))
                .as("the item intake committed while the run ended keeps its lane due").isEqualTo("t");
        assertThat(queue.claimLane("process-b", CLAIM, 100, ORDERED, KINDS).items()).extracting(WorkItem::sourceId).containsExactly(2L);
    }

    @Test
    void finishingALaneStaysALookupWhenItsPlanWasCachedWhileTheQueueWasSmall() throws Exception {
        try (Connection c = dataSource.getConnection()) {
            CachedPlan.Explained finish = CachedPlan.afterGrowth(c, List.of("work_item", "work_lane"), """
                    INSERT INTO work_lane (kind, chat_key, due_at, head_id, claim_token) VALUES ('chat-work', 'c1', now(), 1, 7);
                    INSERT INTO work_item (id, kind, source_key, source_id, chat_key, state)
                    SELECT g, 'chat-work', 'k' || g, g, 'c1', 'done' FROM generate_series(1, 10) g""",
                    FinishRuns.FINISH_LANES, List.of("text[]", "text[]", "bigint[]", "bigint[]", "float8[]", "bigint[]"),
                    "'{chat-work}', '{c1}', '{7}', '{1}', '{NULL}', '{11}'", """
                    UPDATE work_lane SET claim_token = 8, head_id = 11;
                    INSERT INTO work_item (id, kind, source_key, source_id, chat_key, state)
                    SELECT g, 'chat-work', 'k' || g, g, 'c1', 'done' FROM generate_series(11, 25000) g;
                    INSERT INTO work_item (id, kind, source_key, source_id, chat_key)
                    SELECT g, 'chat-work', 'k' || g, g, 'c' || (g % 100 + 2) FROM generate_series(25001, 50000) g""",
                    "'{chat-work}', '{c1}', '{8}', '{11}', '{NULL}', '{25001}'");
            // One lane and one probe of the unfinished items' index; walking the 50,000 items would take ~750 blocks.
            assertThat(finish.blocks()).as(finish.plan()).isLessThan(150);
        }
    }

    @Test
    void claimingItemsStaysALookupByIdWhenItsPlanWasCachedWhileTheQueueWasSmall() throws Exception {
        try (Connection c = dataSource.getConnection()) {
            CachedPlan.Explained claim = CachedPlan.afterGrowth(c, List.of("work_item", "work_lane"), """
                    INSERT INTO work_lane (kind, chat_key, due_at, claim_token) VALUES ('chat-work', 'c1', now(), 7);
                    INSERT INTO work_item (id, kind, source_key, source_id, chat_key)
                    SELECT g, 'chat-work', 'k' || g, g, 'c1' FROM generate_series(1, 10) g""",
                    WorkItemRepository.CLAIM_ITEMS, List.of("bigint[]", "text[]", "text[]", "bigint[]", "bigint[]", "text", "float8", "float8"),
                    "'{7}', '{chat-work}', '{c1}', '{1,2}', '{7,7}', 'w', 60, 60", """
                    INSERT INTO work_item (id, kind, source_key, source_id, chat_key)
                    SELECT g, 'chat-work', 'k' || g, g, 'c1' FROM generate_series(11, 50000) g""",
                    "'{7}', '{chat-work}', '{c1}', '{49990,49991,49992}', '{7,7,7}', 'w', 60, 60");
            // Three items and their index entries; walking the 50,000 items would take ~750 blocks.
            assertThat(claim.blocks()).as(claim.plan()).isLessThan(150);
        }
    }

    @Test
    void takingStagedWorkReadsItsRowsByKeyNotTheDeadRowsEarlierPassesLeftWhenItsPlanWasCachedWhileTheTableWasSmall() throws Exception {
        try (Connection c = dataSource.getConnection()) {
            // Until autovacuum's next round every row a pass took stays in the heap, dead; a later pass has already
            // walked past their index entries, as in a running scheduler.
            CachedPlan.Explained take = CachedPlan.afterGrowth(c, List.of("work_staged", "work_lane", "work_item"), """
                    INSERT INTO work_staged (kind, source_key, source_id) SELECT 'loose', 'first:' || g, g FROM generate_series(1, 10) g""",
                    WorkQueue.SCHEDULE_STAGED, List.of("int"), "100", """
                    INSERT INTO work_staged (kind, source_key, source_id) SELECT 'loose', 'taken:' || g, g FROM generate_series(1, 100000) g;
                    DELETE FROM work_staged;
                    INSERT INTO work_staged (kind, source_key, source_id) SELECT 'loose', 'left:' || g, g FROM generate_series(1, 20) g;
                    COMMIT;
                    SELECT count(*) FROM (SELECT id FROM work_staged ORDER BY id LIMIT 1) first""", "100");
            JsonNode delete = planNode(new ObjectMapper().readTree(take.plan()).get(0).get("Plan"),
                    n -> "Delete".equals(n.path("Operation").asText()));
            // 20 rows through the index (~370 blocks, index pages of dead entries included); a sequential
            // scan reads the ~640 heap pages of dead rows besides (1,250 blocks).
            assertThat(blocks(delete)).as(take.plan()).isLessThan(600);
        }
    }

    /** The first node of a plan, from the top down, that is wanted. */
    private static JsonNode planNode(JsonNode plan, java.util.function.Predicate<JsonNode> wanted) {
        List<JsonNode> todo = new ArrayList<>(List.of(plan));
        while (!todo.isEmpty()) {
            JsonNode n = todo.remove(0);
            if (wanted.test(n)) {
                return n;
            }
            n.path("Plans").forEach(todo::add);
        }
        throw new AssertionError("no such node in " + plan.toPrettyString());
    }

    /** Buffers a plan node and the nodes below it touched (local ones: temporary tables). */
    private static long blocks(JsonNode node) {
        return node.path("Shared Hit Blocks").asLong() + node.path("Shared Read Blocks").asLong()
                + node.path("Local Hit Blocks").asLong() + node.path("Local Read Blocks").asLong();
    }

    @Test
    void lanesWhoseItemsCouldNotBeClaimedAreFreeAgainAtOnceNotWhenTheClaimExpires() throws Exception {
        schedule("chat-work", "c-fail", 1, 2);
        // The item claim fails (as a lost connection would) after the lanes' transaction committed.
        DataSource failingItemClaim = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    Object result = method.invoke(dataSource, args);
                    if (!method.getName().equals("getConnection")) {
                        return result;
                    }
                    Connection real = (Connection) result;
                    return Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class}, (p, m, a) -> {
                        if (m.getName().equals("prepareStatement") && WorkItemRepository.CLAIM_ITEMS.equals(a[0])) {
                            throw new SQLException("injected: connection lost");
                        }
                        try {
                            return m.invoke(real, a);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
                });
        assertThatThrownBy(() -> new WorkQueue(failingItemClaim).claimLane("process-a", CLAIM, 100, ORDERED, KINDS))
                .hasMessageContaining("injected");

        WorkRun next = queue.claimLane("process-b", CLAIM, 100, ORDERED, KINDS);
        assertThat(next).as("the chat's run, claimed by the next worker at once").isNotNull();
        assertThat(next.items()).extracting(WorkItem::sourceId).containsExactly(1L, 2L);
    }
}
