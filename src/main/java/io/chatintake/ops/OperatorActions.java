package io.chatintake.ops;

import io.chatintake.album.AlbumDecisions;
import io.chatintake.work.EffectGuard;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * What an operator fixes by hand, the same calls for the CLI ({@code work retry},
 * {@code work resolve-effect}, {@code albums resolve}) and the status page's buttons. Each answers
 * with one sentence saying what changed, or that nothing did; the page also keeps that sentence in
 * {@code operator_action} with who and when ({@link #record}).
 */
final class OperatorActions {
    private final DataSource dataSource;
    private final WorkQueue queue;

    OperatorActions(DataSource dataSource) {
        this.dataSource = dataSource;
        this.queue = new WorkQueue(dataSource);
    }

    /** Whether anything changed, and the sentence that says what. */
    record Outcome(boolean changed, String sentence) {
    }

    /** One parked (or failed) item back to pending, due now. */
    Outcome retry(long id) throws SQLException {
        return queue.retry(id) == 1 ? new Outcome(true, "work item " + id + " back to pending")
                : new Outcome(false, "work item " + id + " is not parked or failed (unknown, or retried already); nothing changed");
    }

    /** Every parked item of one kind back to pending, one by one, as {@code work retry --id} would. */
    Outcome retryParked(String kind) throws SQLException {
        List<Long> ids = new ArrayList<>();
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT id FROM work_item WHERE state = 'parked' AND kind = ? ORDER BY id")) {
            ps.setString(1, kind);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                }
            }
        }
        int back = 0;
        for (long id : ids) {
            back += queue.retry(id);
        }
        return new Outcome(back > 0, back + " parked item(s) of kind " + kind + " back to pending");
    }

    /**
     * A person looked at the other side: the effect happened (recorded done) or did not (recorded
     * failed). Either way its item goes back to pending: the guard then skips a performed effect
     * and performs one that was not.
     */
    Outcome settleEffect(String key, boolean performed, String by) throws SQLException {
        Optional<EffectGuard.Resolved> resolved = new EffectGuard(dataSource).resolve(key, performed, by);
        if (resolved.isEmpty()) {
            return new Outcome(false, "effect " + key + " is not awaiting reconciliation (unknown, or settled already); nothing changed");
        }
        Long itemId = resolved.get().workItemId();
        boolean back = itemId != null && queue.retry(itemId) == 1;
        return new Outcome(true, "effect " + key + " recorded " + (performed ? "performed (done)" : "not performed (failed)")
                + " by " + by + "; " + (back ? "work item " + itemId + " back to pending: "
                + (performed ? "the guard skips the effect" : "the effect runs again") : "no parked work item to put back"));
    }

    /** A person settled an album's conflicting totals. */
    Outcome resolveAlbum(String albumKey, String by) throws SQLException {
        return new AlbumDecisions(dataSource).resolve(albumKey, by)
                ? new Outcome(true, "album " + albumKey + " resolved by " + by + ": needs_person cleared")
                : new Outcome(false, "album " + albumKey + " is not awaiting a person (unknown, or resolved already); nothing changed");
    }

    /** Keeps what was done from the page: by whom, to what, and the sentence it answered. */
    void record(String by, String action, String target, String outcome) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "INSERT INTO operator_action (acted_by, action, target, outcome) VALUES (?, ?, ?, ?)")) {
            ps.setString(1, by);
            ps.setString(2, action);
            ps.setString(3, target);
            ps.setString(4, outcome);
            ps.executeUpdate();
        }
    }
}
