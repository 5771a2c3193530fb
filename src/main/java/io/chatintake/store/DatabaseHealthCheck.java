package io.chatintake.store;

import java.sql.Connection;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.camel.health.HealthCheckResultBuilder;
import org.apache.camel.impl.health.AbstractHealthCheck;

/**
 * Readiness only: without the database nothing can be acknowledged, so the runner must not take
 * traffic; it is still alive, since the database may come back.
 */
public final class DatabaseHealthCheck extends AbstractHealthCheck {
    private static final int VALIDATION_TIMEOUT_SECONDS = 2;
    private final DataSource dataSource;

    public DatabaseHealthCheck(DataSource dataSource) {
        super("chat-intake", "database");
        this.dataSource = dataSource;
    }

    @Override
    public boolean isLiveness() {
        return false;
    }

    @Override
    protected void doCall(HealthCheckResultBuilder builder, Map<String, Object> options) {
        try (Connection connection = dataSource.getConnection()) {
            if (connection.isValid(VALIDATION_TIMEOUT_SECONDS)) {
                builder.up();
            } else {
                builder.message("database did not answer within " + VALIDATION_TIMEOUT_SECONDS + " s").down();
            }
        } catch (Exception e) {
            builder.message("database unreachable: " + EmbeddedDatabase.rootMessage(e)).down();
        }
    }
}
