package io.chatintake.album;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;

/**
 * Open albums and the age of the oldest, read at most every few seconds, not per scrape, through
 * the partial index on open albums: the cost follows the open albums, not every album ever seen.
 */
public final class AlbumMetrics {
    /** Open: never decided, or a child arrived after the last decision (a late snapshot is coming): it has a deadline. */
    public static final String OPEN = "decide_after IS NOT NULL";
    static final String QUERY = "SELECT count(*), COALESCE(extract(epoch FROM now() - min(first_child_at)), 0) FROM album WHERE " + OPEN;
    private static final Duration REFRESH = Duration.ofSeconds(5);
    private final DataSource dataSource;
    private Instant readAt = Instant.EPOCH;
    private double open;
    private double oldestOpenSeconds;

    private AlbumMetrics(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    public static void register(MeterRegistry registry, DataSource dataSource) {
        // Held strongly: only the gauges keep it, and a gauge holds its object weakly by default.
        AlbumMetrics metrics = new AlbumMetrics(dataSource);
        Gauge.builder("chat_intake_albums_open", metrics, m -> m.read().open).strongReference(true).register(registry);
        Gauge.builder("chat_intake_albums_oldest_open_seconds", metrics, m -> m.read().oldestOpenSeconds).strongReference(true)
                .register(registry);
    }

    private synchronized AlbumMetrics read() {
        if (Duration.between(readAt, Instant.now()).compareTo(REFRESH) < 0) {
            return this;
        }
        readAt = Instant.now();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(QUERY);
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            open = rs.getLong(1);
            oldestOpenSeconds = rs.getDouble(2);
        } catch (Exception e) {
            // keep the last values; the database health check reports the outage
        }
        return this;
    }
}
