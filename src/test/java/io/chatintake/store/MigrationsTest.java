package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(TestDatabase.class)
class MigrationsTest {
    @Test
    void migratingTwiceIsANoOp(DataSource dataSource) {
        assertThat(Migrations.apply(dataSource)).contains("0 migration(s) applied now");
    }

    @Test
    void theRunnerStartTableExists(DataSource dataSource) throws Exception {
        try (Connection c = dataSource.getConnection();
             ResultSet rs = c.getMetaData().getTables(null, null, "runner_start", null)) {
            assertThat(rs.next()).isTrue();
        }
    }

    @Test
    void urlsAreShownWithoutCredentials() {
        assertThat(Database.redactUrl("jdbc:postgresql://db:5432/x?user=a&password=hunter2&ssl=true"))
                .isEqualTo("jdbc:postgresql://db:5432/x?user=a&password=[redacted]&ssl=true");
        assertThat(Database.redactUrl("jdbc:postgresql://bob:pw@db/x")).isEqualTo("jdbc:postgresql://[redacted]@db/x");
    }
}
