package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;

@ExtendWith(TestDatabase.class)
class MigrationsTest {
    @Test
    void migratingTwiceIsANoOp(DataSource dataSource) {
        assertThat(Migrations.apply(dataSource)).contains("0 migration(s) applied now");
    }

    @Test
    void theMigrationsCommitTogetherWithTheirHistoryRows(DataSource dataSource) throws Exception {
        // Written by two transactions, a kill between their commits left tables whose migration was
        // not recorded, and every later start failed with "relation runner_start already exists".
        PGSimpleDataSource fresh = new PGSimpleDataSource();
        try (Connection c = dataSource.getConnection()) {
            fresh.setUrl(c.getMetaData().getURL());
            fresh.setUser(c.getMetaData().getUserName());
            fresh.setPassword(TestDatabase.password().reveal());
        }
        fresh.setCurrentSchema("migration_commit_check");
        try {
            Migrations.apply(fresh);
            assertThat(Sql.string(dataSource, """
                    SELECT count(DISTINCT h.xmin::text) || ' ' || bool_and(h.xmin::text = t.xmin::text)
                      FROM migration_commit_check.flyway_schema_history h,
                           (SELECT xmin FROM pg_class WHERE oid = 'migration_commit_check.runner_start'::regclass) t
                     WHERE h.type = 'SQL'""")).as("one transaction wrote every migration and its history row").isEqualTo("1 true");
        } finally {
            Sql.execute(dataSource, "DROP SCHEMA IF EXISTS migration_commit_check CASCADE");
        }
    }

    @Test
    void theRunnerStartTableExists(DataSource dataSource) throws Exception {
        try (Connection c = dataSource.getConnection();
             ResultSet rs = c.getMetaData().getTables(null, null, "runner_start", null)) {
            assertThat(rs.next()).isTrue();
        }
    }

    @Test
    void theAppendOnlyInboxOfUpdatesIsVacuumedAtAGentlerPaceThanTheDefault(DataSource dataSource) throws Exception {
        assertThat(Sql.string(dataSource, "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'telegram_update'::regclass"))
                .isEqualTo("autovacuum_vacuum_cost_delay=10");
    }
}
