package io.chatintake.channel.webhook;

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
import java.util.concurrent.ConcurrentHashMap;
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
 * alone and the rest of its group is stored, each in a transaction of its own.
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

    @BeforeEach
    void setUp(DataSource dataSource) throws SQLException {
        this.dataSource = dataSource;
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS public.group_commit_probe (name text PRIMARY KEY, txid bigint NOT NULL)");
            s.execute("TRUNCATE public.group_commit_probe");
        }
        crowded.set(0);
        SELF_COMMITTED.clear();
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
     * The group's work: "blocker" holds its transaction for half a second, "bad" fails after its
     * insert, "single-bad" fails in its one statement, "multi-statement" runs two; batch-* units
     * are inserted together by one statement.
     */
    private static List<Long> insertAll(Connection c, List<String> names) throws SQLException {
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
            txids.add(insert(c, name));
            if (name.equals("bad")) {
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
