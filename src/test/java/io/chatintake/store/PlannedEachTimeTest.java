package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(TestDatabase.class)
class PlannedEachTimeTest {
    /** The album sweep's look for overdue rows, on a table shaped like album (a temporary one: autovacuum leaves it alone). */
    private static final String OVERDUE = "SELECT album_key FROM sweep_probe WHERE decide_after <= now() ORDER BY decide_after LIMIT 100";

    @Test
    void aStatementFirstRunOnAnEmptyTableUsesItsIndexOnceTheTableHasGrown(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            createEmptyAnalyzedTable(s);
            try (PreparedStatement kept = c.prepareStatement(OVERDUE); PreparedStatement fresh = PlannedEachTime.prepare(c, OVERDUE)) {
                for (int tick = 0; tick < 10; tick++) {
                    run(kept);
                    run(fresh);
                }
                s.execute("INSERT INTO sweep_probe SELECT 'album-' || g, now() + interval '20 seconds' FROM generate_series(1, 20000) g");

                Scans beforeKept = scans(c);
                run(kept);
                Scans afterKept = scans(c);
                run(fresh);
                Scans afterFresh = scans(c);

                assertThat(afterKept.sequential() - beforeKept.sequential())
                        .as("the premise: the driver's server-side statement kept the plan it made on the empty table").isEqualTo(1);
                assertThat(afterFresh.sequential() - afterKept.sequential()).as("planned now, against 20,000 rows").isZero();
                assertThat(afterFresh.index() - afterKept.index()).isEqualTo(1);
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
    }

    @Test
    void theSameTextRunByTheDriversOwnStatementsDoesNotLendItsKeptPlan(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            createEmptyAnalyzedTable(s);
            try {
                // As the album count check runs its one-album look after every child: each statement closed, the driver
                // caches it by its text and makes it a server-side one.
                for (int child = 0; child < 10; child++) {
                    try (PreparedStatement look = c.prepareStatement(OVERDUE)) {
                        run(look);
                    }
                }
                s.execute("INSERT INTO sweep_probe SELECT 'album-' || g, now() + interval '20 seconds' FROM generate_series(1, 20000) g");

                Scans before = scans(c);
                try (PreparedStatement kept = c.prepareStatement(OVERDUE)) {
                    run(kept);
                }
                Scans afterKept = scans(c);
                try (PreparedStatement fresh = PlannedEachTime.prepare(c, OVERDUE)) {
                    run(fresh);
                }
                Scans afterFresh = scans(c);

                assertThat(afterKept.sequential() - before.sequential()).as("the premise: the cached statement kept its plan").isEqualTo(1);
                assertThat(afterFresh.sequential() - afterKept.sequential()).as("planned now, not the cached statement's plan").isZero();
                assertThat(afterFresh.index() - afterKept.index()).isEqualTo(1);
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
    }

    /** A table shaped like album whose statistics say it is empty (an analyze before its rows came), gone at the rollback. */
    private static void createEmptyAnalyzedTable(Statement s) throws SQLException {
        s.execute("CREATE TEMPORARY TABLE sweep_probe (album_key text PRIMARY KEY, decide_after timestamptz)");
        s.execute("CREATE INDEX ON sweep_probe (decide_after) WHERE decide_after IS NOT NULL");
        s.execute("ANALYZE sweep_probe");
    }

    private static void run(PreparedStatement statement) throws SQLException {
        try (ResultSet rs = statement.executeQuery()) {
            while (rs.next()) {
                rs.getString(1);
            }
        }
    }

    private record Scans(long sequential, long index) {
    }

    /** This transaction's scans of the table, counted as they happen. */
    private static Scans scans(Connection c) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT seq_scan, coalesce(idx_scan, 0) FROM pg_stat_xact_all_tables WHERE relid = 'sweep_probe'::regclass")) {
            rs.next();
            return new Scans(rs.getLong(1), rs.getLong(2));
        }
    }
}
