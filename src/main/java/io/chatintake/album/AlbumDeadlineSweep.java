package io.chatintake.album;

import io.chatintake.store.PlannedEachTime;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.apache.camel.Exchange;
import org.apache.camel.spi.OptimisticLockingAggregationRepository.OptimisticLockingException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sweep every process runs ({@code routes/albums.yaml}, a timer): albums whose deadline in the
 * database has passed are completed through the aggregator's {@link AlbumAggregateController},
 * whichever process aggregated their children, so an album whose process died is decided on time
 * by another. The aggregator keeps completion timeouts in the memory of the process that saw the
 * children; this is what makes them shared.
 * <p>
 * Two processes forcing one group: the repository's versioned removal lets one through, the other
 * gets {@link OptimisticLockingException} and moves on. An overdue album that no group holds (open
 * when the Aggregator came back, or its children's aggregation still queued) is decided from its
 * stored children ({@link AlbumDecisions#decideOverdue()}).
 */
public final class AlbumDeadlineSweep {
    private static final Logger LOG = LoggerFactory.getLogger(AlbumDeadlineSweep.class);
    /** Groups completed per look, so one look ends even while albums keep falling due. */
    private static final int BATCH = 500;

    // Planned at each execution: the tables may have grown from empty since the last tick.
    private static final String OVERDUE_GROUPS = """
            SELECT a.album_key FROM album a JOIN %s g ON g.id = a.album_key
             WHERE a.decide_after <= now() ORDER BY a.decide_after LIMIT %d""".formatted(AlbumAggregationRepository.NAME, BATCH);

    private final DataSource dataSource;
    private final AlbumAggregateController controller;
    private final AlbumDecisions decisions;
    private volatile boolean failing;

    public AlbumDeadlineSweep(DataSource dataSource, AlbumAggregateController controller, AlbumDecisions decisions) {
        this.dataSource = dataSource;
        this.controller = controller;
        this.decisions = decisions;
    }

    /** The timer's step. A failing database is reported once, not at every tick; the deadlines wait in the database. */
    public void sweep(Exchange tick) {
        try {
            completeOverdueGroups();
            decisions.announce(tick.getContext(), decisions.decideOverdue());
            if (failing) {
                failing = false;
                LOG.info("albums: completing overdue albums again");
            }
        } catch (SQLException | RuntimeException e) {
            if (!failing) {
                failing = true;
                LOG.warn("albums: cannot complete overdue albums ({}); their deadlines stay stored, retrying every tick", e.getMessage());
            }
        }
    }

    /** @return the groups this process completed (the others were completed by another, or got a new child) */
    public int completeOverdueGroups() throws SQLException {
        if (!controller.running()) {
            return 0;
        }
        int completed = 0;
        for (String albumKey : overdueGroups()) {
            try {
                completed += controller.forceCompletionOfGroup(albumKey);
            } catch (OptimisticLockingException e) {
                LOG.debug("album {}: completed by another process, or its deadline moved", albumKey);
            }
        }
        return completed;
    }

    private List<String> overdueGroups() throws SQLException {
        List<String> keys = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = PlannedEachTime.prepare(c, OVERDUE_GROUPS);
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                keys.add(rs.getString(1));
            }
        }
        return keys;
    }
}
