package io.chatintake.work;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;

/** Binding and reading shared by the work tables' statements. */
final class WorkSql {
    private WorkSql() {
    }

    /** A duration bound as fractional seconds, for {@code make_interval(secs => ?)}. */
    static void setSeconds(PreparedStatement ps, int index, Duration duration) throws SQLException {
        ps.setDouble(index, duration.toMillis() / 1000.0);
    }

    /**
     * Seconds from now until {@code at}, both by this process's clock: bound for
     * {@code now() + make_interval(secs => ?)}, so that a due time is on the database's clock, as
     * every deadline runners share is, whatever this process's clock says.
     */
    static double secondsUntil(Instant at) {
        return Duration.between(Instant.now(), at).toMillis() / 1000.0;
    }

    /** Rows per token of a statement returning one token per row it changed. */
    static Map<Long, Integer> tokens(PreparedStatement ps) throws SQLException {
        Map<Long, Integer> counts = new HashMap<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                counts.merge(rs.getLong(1), 1, Integer::sum);
            }
        }
        return counts;
    }
}
