package io.chatintake.album;

import java.sql.SQLException;
import java.util.Map;
import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sweep every process runs ({@code routes/albums.yaml}, a timer): albums whose deadline in the
 * database has passed are completed through the aggregator's {@link AlbumAggregateController},
 * whichever process aggregated their children, so an album whose process died is decided on time
 * by another. The aggregator keeps completion timeouts in the memory of the process that saw the
 * children; this is what makes them shared.
 * <p>
 * Each look removes the overdue groups in one statement that skips rows another process is
 * removing, so two processes never complete one group ({@link AlbumAggregationRepository#removeOverdue}).
 * Every open album is a group, whichever process stored its children and whether or not the
 * aggregator has seen them yet, so every overdue album is found here.
 */
public final class AlbumDeadlineSweep {
    private static final Logger LOG = LoggerFactory.getLogger(AlbumDeadlineSweep.class);
    /** Groups removed per statement; a look takes more statements while albums keep falling due. */
    private static final int BATCH = 500;
    /** Statements per look, so one look ends even while albums keep falling due. */
    private static final int MAX_BATCHES = 20;

    private final AlbumAggregationRepository repository;
    private final AlbumAggregateController controller;
    private volatile boolean failing;

    public AlbumDeadlineSweep(AlbumAggregationRepository repository, AlbumAggregateController controller) {
        this.repository = repository;
        this.controller = controller;
    }

    /** The timer's step. A failing database is reported once, not at every tick; the deadlines wait in the database. */
    public void sweep(Exchange tick) {
        try {
            completeOverdueGroups();
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

    /**
     * Removes the overdue groups in one statement and completes each through the aggregator's
     * {@code forceCompletionOfGroup}, whose removal by force takes the group as this statement removed it.
     * @return the groups this process completed (the others were being completed by another)
     */
    public int completeOverdueGroups() throws SQLException {
        if (!controller.running()) {
            return 0;
        }
        int completed = 0;
        for (int batch = 0; batch < MAX_BATCHES; batch++) {
            Map<String, AlbumAggregationRepository.Removal> removed = repository.removeOverdue(BATCH);
            completed += repository.completeRemoved(removed, controller::forceCompletionOfGroup);
            if (removed.size() < BATCH) {
                break;
            }
        }
        return completed;
    }
}
