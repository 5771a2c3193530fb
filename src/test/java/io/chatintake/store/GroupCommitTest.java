package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Group commit against a real PostgreSQL: units that arrive while a transaction is running share
 * the next one; each submitter returns only once its row is committed; a failing unit fails
 * alone and the rest of its group is stored, each in a transaction of its own. Submitted
 * asynchronously, the same, with no submitter waiting for a commit it does not run.
 */
@ExtendWith(TestDatabase.class)
class GroupCommitTest {
    /** One committer, so what queues while it is busy is one group. */
    private GroupCommit<String, Long> commits;
    private ExecutorService submitters;
    private DataSource dataSource;
    private final AtomicInteger crowded = new AtomicInteger();
    /** The units whose work found its connection in autocommit. */
    private static final Set<String> SELF_COMMITTED = ConcurrentHashMap.newKeySet();
    /** The advisory lock a "held" unit waits for: the test holds it to keep that unit's group running. */
    private static final long HOLD = 6301;
    /** Groups being written right now, and the most at once. */
    private static final AtomicInteger WRITING = new AtomicInteger();
    private static final AtomicInteger MOST_WRITING = new AtomicInteger();

    @BeforeEach
    void setUp(DataSource dataSource) throws SQLException {
        this.dataSource = dataSource;
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS public.group_commit_probe (name text PRIMARY KEY, txid bigint NOT NULL)");
            s.execute("TRUNCATE public.group_commit_probe");
        }
        crowded.set(0);
        SELF_COMMITTED.clear();
        MOST_WRITING.set(0);
        commits = new GroupCommit<>(dataSource, Duration.ofSeconds(5), 1, 32, GroupCommitTest::insertAll, GroupCommitTest::oneStatement,
                crowded::incrementAndGet);
        submitters = Executors.newFixedThreadPool(16);
    }

    @AfterEach
    void tearDown() {
        submitters.shutdownNow();
    }

    @Test
    void unitsArrivingTogetherShareOneCommitAndEachReturnsOnlyWhenItsRowIsCommitted() throws Exception {
        Future<Long> blocker = submitters.submit(() -> commits.submit("blocker"));
        awaitRunning("blocker");
        assertThat(crowded).as("a lone unit queued behind nobody").hasValue(0);
        List<Future<Boolean>> units = new ArrayList<>();
        for (int i = 0; i < 15; i++) {
            String name = "unit-" + i;
            units.add(submitters.submit(() -> {
                commits.submit(name);
                // Seen from another connection the moment submit returns: committed, not just written.
                return committedTxid(name) != null;
            }));
        }
        blocker.get();
        Set<Long> transactions = new HashSet<>();
        for (int i = 0; i < units.size(); i++) {
            assertThat(units.get(i).get()).as("unit %d committed when its submit returned", i).isTrue();
            transactions.add(committedTxid("unit-" + i));
        }
        assertThat(transactions).as("the 15 units queued behind the blocker share one transaction").hasSize(1);
        assertThat(crowded).as("their queueing told once, when the group formed").hasValue(1);
        assertThat(transactions).doesNotContain(committedTxid("blocker"));
    }

    @Test
    void aFailingUnitFailsAloneAndTheRestOfItsGroupIsStored() throws Exception {
        Future<Long> blocker = submitters.submit(() -> commits.submit("blocker"));
        awaitRunning("blocker");
        List<Future<Long>> good = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String name = "good-" + i;
            good.add(submitters.submit(() -> commits.submit(name)));
        }
        Future<Long> failing = submitters.submit(() -> commits.submit("bad"));
        for (int i = 3; i < 6; i++) {
            String name = "good-" + i;
            good.add(submitters.submit(() -> commits.submit(name)));
        }
        blocker.get();
        assertThatThrownBy(failing::get).hasRootCauseInstanceOf(SQLException.class).hasMessageContaining("division by zero");
        Set<Long> transactions = new HashSet<>();
        for (int i = 0; i < good.size(); i++) {
            good.get(i).get();
            assertThat(committedTxid("good-" + i)).as("good-%d stored", i).isNotNull();
            transactions.add(committedTxid("good-" + i));
        }
        assertThat(committedTxid("bad")).as("the failing unit's own write is rolled back").isNull();
        assertThat(transactions).as("after the group failed, each good unit in a transaction of its own").hasSize(6);
    }

    @Test
    void aLeaderThatLeavesHandsWhatIsQueuedToAWaitingSubmitterAtOnce() throws Exception {
        // Waiting submitters that never look again by themselves: only a hand-over runs their group.
        GroupCommit<String, Long> patient = new GroupCommit<>(dataSource, Duration.ofMinutes(5), 1, 32, GroupCommitTest::insertAll,
                GroupCommitTest::oneStatement, () -> { }, Duration.ofMinutes(10));
        Future<Long> blocker = submitters.submit(() -> patient.submit("blocker"));
        awaitRunning("blocker");
        List<Future<Long>> queued = new ArrayList<>();
        // They arrive while the blocker holds its transaction for half a second: queued behind it.
        for (int i = 0; i < 5; i++) {
            String name = "queued-" + i;
            queued.add(submitters.submit(() -> patient.submit(name)));
        }
        blocker.get(30, TimeUnit.SECONDS);
        for (int i = 0; i < queued.size(); i++) {
            assertThat(queued.get(i).get(30, TimeUnit.SECONDS)).as("queued-%d committed after the blocker left", i)
                    .isEqualTo(committedTxid("queued-" + i));
        }
    }

    @Test
    void aLoneUnitThatIsOneStatementCommitsByItselfAndOneThatFailsStoresNothing() throws Exception {
        assertThat(commits.submit("single-ok")).isEqualTo(committedTxid("single-ok"));
        assertThat(SELF_COMMITTED).as("its statement ran without a transaction around it").contains("single-ok");
        assertThatThrownBy(() -> commits.submit("single-bad")).isInstanceOf(SQLException.class).hasMessageContaining("division by zero");
        assertThat(committedTxid("single-bad")).isNull();

        commits.submit("multi-statement");
        assertThat(SELF_COMMITTED).as("work of several statements commits in a transaction").doesNotContain("multi-statement");
    }

    @Test
    void unitsThatAreOneStatementEachButNotTogetherShareATransaction() throws Exception {
        assertThat(queuedBehindABlocker("single-")).as("queued behind the blocker, the 5 are one group: one transaction").hasSize(1);
        assertThat(SELF_COMMITTED).as("together they are 5 statements: a transaction holds them").isEmpty();
    }

    @Test
    void aGroupWrittenByOneStatementCommitsAsThatStatementEnds() throws Exception {
        assertThat(queuedBehindABlocker("batch-")).as("one group, one statement, one transaction").hasSize(1);
        assertThat(SELF_COMMITTED).as("no transaction around the statement").hasSize(5).allMatch(name -> name.startsWith("batch-"));
    }

    @Test
    void asyncSubmittersGoOnAtOnceAndWhatQueuedIsWrittenInOneTransactionByTheWriterInPlace() throws Exception {
        GroupCommit<String, Long> async = new GroupCommit<>(dataSource, 1, 32, GroupCommitTest::insertAll, GroupCommitTest::oneStatement);
        List<CompletableFuture<Boolean>> queued = new ArrayList<>();
        Future<CompletableFuture<Long>> writer;
        try (Connection holder = hold()) {
            writer = submitters.submit(() -> async.submitAsync("held"));
            awaitHeld();
            for (int i = 0; i < 5; i++) {
                String name = "async-" + i;
                // Seen from another connection as the future completes: committed, not just written.
                queued.add(async.submitAsync(name).thenApply(txid -> txid.equals(committedTxidUnchecked(name))));
            }
            // The writer's place is taken and held: had a submitter waited, it would not be here.
            assertThat(queued).as("returned at once, before any commit").noneMatch(CompletableFuture::isDone);
            release(holder);
        }
        assertThat(writer.get(30, TimeUnit.SECONDS)).as("the writer in place goes on to write what queued").isDone();
        Set<Long> transactions = new HashSet<>();
        for (int i = 0; i < queued.size(); i++) {
            assertThat(queued.get(i).get(30, TimeUnit.SECONDS)).as("async-%d committed when its future completed", i).isTrue();
            transactions.add(committedTxid("async-" + i));
        }
        assertThat(transactions).as("the 5 queued behind the held one share one transaction").hasSize(1)
                .doesNotContain(committedTxid("held"));
    }

    @Test
    void aFailingAsyncUnitFailsAloneAndTheRestOfItsGroupIsStored() throws Exception {
        GroupCommit<String, Long> async = new GroupCommit<>(dataSource, 1, 32, GroupCommitTest::insertAll, GroupCommitTest::oneStatement);
        List<CompletableFuture<Long>> good = new ArrayList<>();
        CompletableFuture<Long> failing;
        Future<CompletableFuture<Long>> writer;
        try (Connection holder = hold()) {
            writer = submitters.submit(() -> async.submitAsync("held"));
            awaitHeld();
            for (int i = 0; i < 3; i++) {
                good.add(async.submitAsync("good-" + i));
            }
            failing = async.submitAsync("bad");
            for (int i = 3; i < 6; i++) {
                good.add(async.submitAsync("good-" + i));
            }
            release(holder);
        }
        writer.get(30, TimeUnit.SECONDS);
        assertThatThrownBy(() -> failing.get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasRootCauseInstanceOf(SQLException.class).hasMessageContaining("division by zero");
        Set<Long> transactions = new HashSet<>();
        for (int i = 0; i < good.size(); i++) {
            assertThat(good.get(i).get(30, TimeUnit.SECONDS)).as("good-%d stored", i).isEqualTo(committedTxid("good-" + i));
            transactions.add(committedTxid("good-" + i));
        }
        assertThat(committedTxid("bad")).as("the failing unit's own write is rolled back").isNull();
        assertThat(transactions).as("after the group failed, each good unit in a transaction of its own").hasSize(6);
    }

    @Test
    void whatDependsOnAnAsyncResultRunsAfterItsWriterLeftItsPlace() throws Exception {
        GroupCommit<String, Long> async = new GroupCommit<>(dataSource, 1, 32, GroupCommitTest::insertAll, GroupCommitTest::oneStatement);
        CountDownLatch dependentRunning = new CountDownLatch(1);
        CountDownLatch dependentMayEnd = new CountDownLatch(1);
        Future<CompletableFuture<Long>> writer;
        try (Connection holder = hold()) {
            writer = submitters.submit(() -> async.submitAsync("held"));
            awaitHeld();
            async.submitAsync("first").thenRun(() -> {
                dependentRunning.countDown();
                await(dependentMayEnd);
            });
            release(holder);
        }
        await(dependentRunning);
        // The only writer's thread is inside the dependent stage: the place must be free for the next.
        CompletableFuture<Long> next = async.submitAsync("next");
        assertThat(next).as("written by its own submitter in the free place").isDone();
        assertThat(next.get()).isEqualTo(committedTxid("next"));
        dependentMayEnd.countDown();
        writer.get(30, TimeUnit.SECONDS);
    }

    @Test
    void asyncSubmittersUnderContentionEachGetTheirOwnCommitAndFailuresStayWithTheirOwn() throws Exception {
        GroupCommit<String, Long> async = new GroupCommit<>(dataSource, 2, 8, GroupCommitTest::insertAll, GroupCommitTest::oneStatement);
        int threads = 16;
        int each = 40;
        List<Future<List<CompletableFuture<Long>>>> submitted = new ArrayList<>();
        CountDownLatch start = new CountDownLatch(1);
        for (int t = 0; t < threads; t++) {
            int thread = t;
            submitted.add(submitters.submit(() -> {
                await(start);
                List<CompletableFuture<Long>> futures = new ArrayList<>();
                for (int i = 0; i < each; i++) {
                    // Every tenth fails after its insert: its group runs again, input by input.
                    futures.add(async.submitAsync((i % 10 == 9 ? "bad-" : "load-") + thread + "-" + i));
                }
                return futures;
            }));
        }
        start.countDown();
        Set<Long> transactions = new HashSet<>();
        int stored = 0;
        for (int t = 0; t < threads; t++) {
            List<CompletableFuture<Long>> futures = submitted.get(t).get(60, TimeUnit.SECONDS);
            for (int i = 0; i < each; i++) {
                String name = (i % 10 == 9 ? "bad-" : "load-") + t + "-" + i;
                CompletableFuture<Long> future = futures.get(i);
                if (name.startsWith("bad-")) {
                    assertThatThrownBy(() -> future.get(60, TimeUnit.SECONDS)).as(name).hasMessageContaining("division by zero");
                    assertThat(committedTxid(name)).as(name).isNull();
                } else {
                    assertThat(future.get(60, TimeUnit.SECONDS)).as(name).isEqualTo(committedTxid(name));
                    transactions.add(future.get());
                    stored++;
                }
            }
        }
        assertThat(stored).isEqualTo(threads * each * 9 / 10);
        assertThat(count()).as("nothing stored twice, nothing of a failed unit").isEqualTo(stored);
        assertThat(MOST_WRITING).as("never more groups at once than writers").hasValueBetween(1, 2);
        assertThat(transactions).as("submitters arriving together shared commits").hasSizeLessThan(stored);
    }

    @Test
    void eachSubmitterKindHasItsOwnConstructor() {
        GroupCommit<String, Long> async = new GroupCommit<>(dataSource, 1, 32, GroupCommitTest::insertAll, GroupCommitTest::oneStatement);
        assertThatThrownBy(() -> async.submit("waits")).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> commits.submitAsync("goes-on")).isInstanceOf(IllegalStateException.class);
        assertThat(count()).isZero();
    }

    /** 5 units named {@code prefix} + i that queue behind the blocker's transaction; the transactions that stored them. */
    private Set<Long> queuedBehindABlocker(String prefix) throws Exception {
        Future<Long> blocker = submitters.submit(() -> commits.submit("blocker"));
        awaitRunning("blocker");
        List<Future<Long>> units = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String name = prefix + i;
            units.add(submitters.submit(() -> commits.submit(name)));
        }
        blocker.get();
        Set<Long> transactions = new HashSet<>();
        for (int i = 0; i < units.size(); i++) {
            assertThat(units.get(i).get()).isEqualTo(committedTxid(prefix + i));
            transactions.add(units.get(i).get());
        }
        return transactions;
    }

    /** What {@link #insertAll} writes with one statement: a single-* unit alone, or batch-* units together. */
    private static boolean oneStatement(List<String> names) {
        return names.size() == 1 && names.get(0).startsWith("single-") || names.stream().allMatch(name -> name.startsWith("batch-"));
    }

    /**
     * The group's work: "blocker" holds its transaction for half a second, "held" until the test
     * releases {@link #HOLD}, "bad" (and bad-*) fails after its
     * insert, "single-bad" fails in its one statement, "multi-statement" runs two; batch-* units
     * are inserted together by one statement.
     */
    private static List<Long> insertAll(Connection c, List<String> names) throws SQLException {
        MOST_WRITING.accumulateAndGet(WRITING.incrementAndGet(), Math::max);
        try {
            return insertEach(c, names);
        } finally {
            WRITING.decrementAndGet();
        }
    }

    private static List<Long> insertEach(Connection c, List<String> names) throws SQLException {
        if (names.stream().allMatch(name -> name.startsWith("batch-"))) {
            return insertInOneStatement(c, names);
        }
        List<Long> txids = new ArrayList<>();
        for (String name : names) {
            if (c.getAutoCommit()) {
                SELF_COMMITTED.add(name);
            }
            if (name.equals("single-bad")) {
                try (Statement s = c.createStatement()) {
                    s.execute("INSERT INTO public.group_commit_probe (name, txid) VALUES ('single-bad', 1 / 0)");
                }
            }
            if (name.equals("multi-statement")) {
                sleep(c, 0);
            }
            if (name.equals("blocker")) {
                sleep(c, 0.5);
            }
            if (name.equals("held")) {
                try (Statement s = c.createStatement()) {
                    s.execute("SELECT pg_advisory_xact_lock_shared(" + HOLD + ")");
                }
            }
            txids.add(insert(c, name));
            if (name.startsWith("bad")) {
                try (Statement s = c.createStatement()) {
                    s.execute("SELECT 1 / 0");
                }
            }
        }
        return txids;
    }

    private static List<Long> insertInOneStatement(Connection c, List<String> names) throws SQLException {
        if (c.getAutoCommit()) {
            SELF_COMMITTED.addAll(names);
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO public.group_commit_probe (name, txid)"
                + " SELECT name, txid_current() FROM unnest(CAST(? AS text[])) WITH ORDINALITY AS u(name, n) ORDER BY n RETURNING txid")) {
            ps.setArray(1, c.createArrayOf("text", names.toArray()));
            List<Long> txids = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    txids.add(rs.getLong(1));
                }
            }
            return txids;
        }
    }

    private static long insert(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO public.group_commit_probe (name, txid) VALUES (?, txid_current()) RETURNING txid")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static void sleep(Connection c, double seconds) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("SELECT pg_sleep(" + seconds + ")");
        }
    }

    /** Waits until the committer is inside the unit's transaction (its sleep shows in pg_stat_activity). */
    private void awaitRunning(String what) {
        Await.until(what + " running", Duration.ofSeconds(10), () -> {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep%'")) {
                rs.next();
                return rs.getLong(1) > 0;
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /** A connection holding {@link #HOLD}: a "held" unit's group runs until {@link #release}. */
    private Connection hold() throws SQLException {
        Connection c = dataSource.getConnection();
        try (Statement s = c.createStatement()) {
            s.execute("SELECT pg_advisory_lock(" + HOLD + ")");
        }
        return c;
    }

    private static void release(Connection holder) throws SQLException {
        try (Statement s = holder.createStatement()) {
            s.execute("SELECT pg_advisory_unlock(" + HOLD + ")");
        }
    }

    /** Waits until a "held" unit's group waits for {@link #HOLD}. */
    private void awaitHeld() {
        Await.until("held unit waiting", Duration.ofSeconds(10), () -> {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")) {
                rs.next();
                return rs.getLong(1) > 0;
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    private static void await(CountDownLatch latch) {
        try {
            assertThat(latch.await(30, TimeUnit.SECONDS)).as("latch released").isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private long count() {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM public.group_commit_probe")) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private Long committedTxidUnchecked(String name) {
        try {
            return committedTxid(name);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private Long committedTxid(String name) throws SQLException {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT txid FROM public.group_commit_probe WHERE name = ?")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : null;
            }
        }
    }
}
