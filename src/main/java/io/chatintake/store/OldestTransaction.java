package io.chatintake.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;

/**
 * The backend holding this database's oldest open transaction, found when it has been open longer
 * than a threshold: while it stays open, vacuum removes no row version deleted after it began, so
 * the inbox and work tables bloat and every claim and scan slows down. Often a session left idle in
 * transaction by a person or a tool, which only whoever runs the database can end.
 * <p>
 * Sessions only: autovacuum's own long transactions are vacuum at work, not held back.
 * <p>
 * PostgreSQL shows another role's session without its state and query to a role without
 * {@code pg_read_all_stats}; its pid and age are shown all the same.
 */
public record OldestTransaction(int pid, String applicationName, String state, Duration age) {
    private static final String OLDEST = """
            SELECT pid, application_name, state, extract(epoch FROM clock_timestamp() - xact_start)
              FROM pg_stat_activity
             WHERE xact_start < clock_timestamp() - make_interval(secs => ?) AND datname = current_database()
               AND pid <> pg_backend_pid() AND backend_type = 'client backend'
             ORDER BY xact_start LIMIT 1""";

    /** The oldest open transaction if it began more than {@code threshold} ago. */
    public static Optional<OldestTransaction> olderThan(Connection c, Duration threshold) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(OLDEST)) {
            ps.setDouble(1, threshold.toMillis() / 1000.0);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(new OldestTransaction(rs.getInt(1), rs.getString(2), rs.getString(3),
                        Duration.ofMillis((long) (rs.getDouble(4) * 1000))));
            }
        }
    }

    /** E.g. "backend 4711 (application 'psql', idle in transaction) has held a transaction open for 12 min". */
    public String describe() {
        String application = applicationName == null || applicationName.isEmpty() ? "no application name" : "application '" + applicationName + "'";
        String minutes = age.toMinutes() > 0 ? age.toMinutes() + " min" : age.toSeconds() + " s";
        return "backend " + pid + " (" + application + ", " + (state == null ? "state not visible to this role" : state)
                + ") has held a transaction open for " + minutes;
    }
}
