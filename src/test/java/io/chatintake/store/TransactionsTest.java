package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(TestDatabase.class)
class TransactionsTest {
    @Test
    void onlyARedoableTransactionCommitsWithoutWaitingForTheFlushAndItsConnectionGoesBackAsItWas(DataSource shared) throws Exception {
        String url;
        String user;
        try (Connection c = shared.getConnection()) {
            url = c.getMetaData().getURL();
            user = c.getMetaData().getUserName();
        }
        // One pooled connection, so every transaction below runs on the same session.
        try (Database one = Database.external(url, user, TestDatabase.password(), 1)) {
            DataSource pool = one.dataSource();
            try (Connection c = pool.getConnection()) {
                // As a durable server has it (the test server runs without durability).
                c.createStatement().execute("SET synchronous_commit = on");
            }
            assertThat(Transactions.inRedoableTransaction(pool, TransactionsTest::synchronousCommit)).isEqualTo("off");
            assertThat(Transactions.inTransaction(pool, TransactionsTest::synchronousCommit)).isEqualTo("on");
            try (Connection c = pool.getConnection()) {
                assertThat(synchronousCommit(c)).isEqualTo("on");
            }
        }
    }

    private static String synchronousCommit(Connection c) throws SQLException {
        try (ResultSet rs = c.createStatement().executeQuery("SELECT current_setting('synchronous_commit')")) {
            rs.next();
            return rs.getString(1);
        }
    }
}
