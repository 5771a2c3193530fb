package io.chatintake.album;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.work.WorkDispatcher;
import io.chatintake.work.WorkQueue;
import io.micrometer.core.instrument.Counter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import javax.sql.DataSource;
import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records a decision when an album's aggregation completes (seed 003, rule 6): its kind, its
 * version and exactly which children it included, read from the stored children rather than
 * from the aggregator, so a decision never misses a stored child.
 * <p>
 * Serialised per album by a row lock, and a decision is only made when the stored children differ
 * from those of the last one: a completion delivered twice (recovery after a crash, two processes
 * whose timeouts both fire) makes one version, never two. The first decision is {@code complete},
 * {@code conflict} or {@code provisional}; every later one is {@code late}, which by default only
 * updates the display and never re-sends anything to a customer.
 */
public final class AlbumDecisions {
    private static final Logger LOG = LoggerFactory.getLogger(AlbumDecisions.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    public static final String DECISION_KIND = "AlbumDecisionKind";
    public static final String DECISION_VERSION = "AlbumDecisionVersion";

    private final DataSource dataSource;

    public AlbumDecisions(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    public record Decision(String albumKey, int version, String kind, List<Long> childIds) {
    }

    /** The aggregator's completion step: {@code bean: albumDecisions, method: decide}. */
    /** A person settled the album ({@code albums resolve}): needs_person cleared, who and when recorded. */
    public boolean resolve(String albumKey, String by) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE album SET needs_person = false, resolved_by = ?, resolved_at = now() WHERE album_key = ? AND needs_person")) {
            ps.setString(1, by);
            ps.setString(2, albumKey);
            return ps.executeUpdate() == 1;
        }
    }

    public void decide(Exchange exchange) throws SQLException {
        String albumKey = exchange.getMessage().getHeader(AlbumChildSource.ALBUM_KEY, String.class);
        String completedBy = exchange.getProperty(Exchange.AGGREGATED_COMPLETED_BY, "unknown", String.class);
        Optional<Decision> decision = decide(albumKey, completedBy);
        if (decision.isEmpty()) {
            LOG.debug("album {}: completion ({}) brought no child beyond the last decision", albumKey, completedBy);
            return;
        }
        Decision d = decision.get();
        LOG.info("album {}: decision version {} is {} with {} child(ren) (completed by {})", albumKey, d.version(), d.kind(),
                d.childIds().size(), completedBy);
        Counter.builder("chat_intake_album_decisions").tag("kind", d.kind()).register(MeterRegistryLookup.of(exchange.getContext()))
                .increment();
        exchange.getMessage().setHeader(DECISION_KIND, d.kind());
        exchange.getMessage().setHeader(DECISION_VERSION, d.version());
        WorkDispatcher.nudge(exchange.getContext());
    }

    private static final String LOCK_ALBUM = """
            SELECT workspace, provider, account_id, conversation_id, album_id, decided_version
              FROM album WHERE album_key = ? FOR UPDATE""";

    private static final String CHILDREN = """
            SELECT id, message_id, album_index, album_total FROM channel_message
             WHERE workspace = ? AND provider = ? AND account_id = ? AND conversation_id = ? AND album_id = ?
             ORDER BY album_index NULLS LAST, sent_at NULLS LAST, id""";

    private static final String INSERT_DECISION = """
            INSERT INTO album_decision (album_key, version, kind, child_ids, message_ids, totals_seen, indexes_seen, completed_by)
            VALUES (?, ?, ?, ?::jsonb, ?::jsonb, ?::jsonb, ?::jsonb, ?) RETURNING id""";

    public Optional<Decision> decide(String albumKey, String completedBy) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                Optional<Decision> decision = decide(c, albumKey, completedBy);
                c.commit();
                return decision;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    private static Optional<Decision> decide(Connection c, String albumKey, String completedBy) throws SQLException {
        String[] scope = new String[5];
        int lastVersion;
        try (PreparedStatement ps = c.prepareStatement(LOCK_ALBUM)) {
            ps.setString(1, albumKey);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("no album row for key " + albumKey);
                }
                for (int i = 0; i < 5; i++) {
                    scope[i] = rs.getString(i + 1);
                }
                lastVersion = rs.getInt(6);
            }
        }
        List<AlbumState.Child> children = new ArrayList<>();
        List<String> messageIds = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(CHILDREN)) {
            for (int i = 0; i < 5; i++) {
                ps.setString(i + 1, scope[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    children.add(new AlbumState.Child(rs.getLong(1), (Integer) rs.getObject(3), (Integer) rs.getObject(4)));
                    messageIds.add(rs.getString(2));
                }
            }
        }
        List<Long> childIds = children.stream().map(AlbumState.Child::id).toList();
        if (lastVersion > 0 && new TreeSet<>(previousChildIds(c, albumKey, lastVersion)).equals(new TreeSet<>(childIds))) {
            return Optional.empty();
        }
        AlbumState state = AlbumState.of(children);
        String kind = lastVersion > 0 ? "late" : state.conflicting() ? "conflict" : state.complete() ? "complete" : "provisional";
        int version = lastVersion + 1;
        long decisionId;
        try (PreparedStatement ps = c.prepareStatement(INSERT_DECISION)) {
            ps.setString(1, albumKey);
            ps.setInt(2, version);
            ps.setString(3, kind);
            ps.setString(4, json(childIds));
            ps.setString(5, json(messageIds));
            ps.setString(6, json(state.totalsSeen()));
            ps.setString(7, json(children.stream().map(AlbumState.Child::index).toList()));
            ps.setString(8, completedBy);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                decisionId = rs.getLong(1);
            }
        }
        try (PreparedStatement ps = c.prepareStatement("UPDATE album SET decided_version = ?, decided_at = now(),"
                + " needs_person = needs_person OR ? WHERE album_key = ?")) {
            ps.setInt(1, version);
            ps.setBoolean(2, state.conflicting());
            ps.setString(3, albumKey);
            ps.executeUpdate();
        }
        WorkQueue.schedule(c, List.of(new WorkQueue.NewWork(AlbumDecisionSource.KIND, albumKey + ":" + version, decisionId, albumKey)));
        return Optional.of(new Decision(albumKey, version, kind, childIds));
    }

    private static List<Long> previousChildIds(Connection c, String albumKey, int version) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT child_ids::text FROM album_decision WHERE album_key = ? AND version = ?")) {
            ps.setString(1, albumKey);
            ps.setInt(2, version);
            try (ResultSet rs = ps.executeQuery()) {
                List<Long> ids = new ArrayList<>();
                if (rs.next()) {
                    JSON.readTree(rs.getString(1)).forEach(n -> ids.add(n.asLong()));
                }
                return ids;
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new SQLException("unreadable child_ids of " + albumKey + " version " + version, e);
            }
        }
    }

    private static String json(Object value) {
        try {
            return JSON.writeValueAsString(value instanceof Set<?> set ? new ArrayList<>(set) : value);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
