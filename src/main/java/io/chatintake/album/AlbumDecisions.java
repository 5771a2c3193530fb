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
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides albums (seed 003, rules 4 to 6) and records each decision: its kind, its version and
 * exactly which children it included, read from the stored children, so a decision never misses
 * a stored child.
 * <p>
 * Two ways to a decision, both from the database, so no process holds an album in memory:
 * <ul>
 * <li>{@link #childArrived}: a child was given its album; if the stored children now agree on a
 * total they reach, the album is decided at once ({@code complete}, or {@code late} after an
 * earlier decision);</li>
 * <li>{@link #decideOverdue}: every open album has a deadline on its row ({@code decide_after} =
 * last child + quiet period, set by the transaction that stored the child); any live process
 * claims overdue albums with {@code FOR UPDATE SKIP LOCKED} and decides them, so an album is
 * decided on time whichever process stored its children and whichever process died.</li>
 * </ul>
 * Serialised per album by a row lock, and a decision is only made when the stored children differ
 * from those of the last one: one version, never two, however many processes try. The first
 * decision is {@code complete}, {@code conflict} or {@code provisional}; every later one is
 * {@code late}, which only updates the display and never re-sends anything to a customer.
 * <p>
 * Camel's Aggregator used to do this with a JDBC aggregation repository; its completion timeouts
 * lived in the memory of the process that saw the children, and it kept a second copy of the
 * child set. The stored children and the deadline column are the whole state now.
 */
public final class AlbumDecisions {
    private static final Logger LOG = LoggerFactory.getLogger(AlbumDecisions.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    public static final String DECISION_KIND = "AlbumDecisionKind";
    public static final String DECISION_VERSION = "AlbumDecisionVersion";
    /** How the decision came about, as recorded in {@code album_decision.completed_by}. */
    static final String BY_COUNT = "predicate";
    static final String BY_DEADLINE = "timeout";
    /** Overdue albums decided per transaction: one commit for many decisions, locks held briefly. */
    private static final int SWEEP_BATCH = 100;
    /** Batches per sweep, so one sweep ends even while albums keep falling due. */
    private static final int SWEEP_MAX_BATCHES = 50;

    private final DataSource dataSource;

    public AlbumDecisions(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    public record Decision(String albumKey, int version, String kind, List<Long> childIds, String completedBy) {
    }

    /** {@code direct:album-child}: decides the child's album now if its stored children are complete. */
    public void childArrived(Exchange exchange) throws SQLException {
        decideIfComplete(exchange.getMessage().getHeader(AlbumChildSource.ALBUM_KEY, String.class))
                .ifPresent(d -> announce(exchange.getContext(), List.of(d)));
    }

    /** Decides the album now if its stored children agree on a total they reach (and differ from the last decision). */
    public Optional<Decision> decideIfComplete(String albumKey) throws SQLException {
        return inTransaction(c -> decide(c, albumKey, BY_COUNT));
    }

    /** The sweep ({@code routes/albums.yaml}, a timer): decides every album whose deadline has passed. */
    public void decideOverdue(Exchange exchange) throws SQLException {
        announce(exchange.getContext(), decideOverdue());
    }

    /** Decides the overdue albums no other process is deciding right now. */
    public List<Decision> decideOverdue() throws SQLException {
        List<Decision> decided = new ArrayList<>();
        for (int batch = 0; batch < SWEEP_MAX_BATCHES; batch++) {
            int[] claimed = new int[1];
            decided.addAll(inTransaction(c -> {
                List<String> keys = claimOverdue(c);
                claimed[0] = keys.size();
                List<Decision> made = new ArrayList<>();
                for (String key : keys) {
                    decide(c, key, BY_DEADLINE).ifPresent(made::add);
                }
                return made;
            }));
            if (claimed[0] < SWEEP_BATCH) {
                break;
            }
        }
        return decided;
    }

    private static void announce(CamelContext context, List<Decision> decisions) {
        if (decisions.isEmpty()) {
            return;
        }
        for (Decision d : decisions) {
            LOG.info("album {}: decision version {} is {} with {} child(ren) (completed by {})", d.albumKey(), d.version(), d.kind(),
                    d.childIds().size(), d.completedBy());
            Counter.builder("chat_intake_album_decisions").tag("kind", d.kind()).register(MeterRegistryLookup.of(context)).increment();
        }
        WorkDispatcher.nudge(context);
    }

    private static final String CLAIM_OVERDUE = """
            SELECT album_key FROM album WHERE decide_after <= now()
             ORDER BY decide_after LIMIT %d FOR UPDATE SKIP LOCKED""".formatted(SWEEP_BATCH);

    private static List<String> claimOverdue(Connection c) throws SQLException {
        List<String> keys = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(CLAIM_OVERDUE); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                keys.add(rs.getString(1));
            }
        }
        return keys;
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

    @FunctionalInterface
    private interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    private <T> T inTransaction(Work<T> work) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                T result = work.run(c);
                c.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    /**
     * Under the album's row lock: by count, decides only when the stored children are complete
     * (the deadline stays otherwise); by deadline, decides with whatever is stored. Either way no
     * decision is made when the children are those of the last one, and a decided album has no
     * deadline until its next child.
     */
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
        AlbumState state = AlbumState.of(children);
        if (BY_COUNT.equals(completedBy) && !state.complete()) {
            return Optional.empty();
        }
        if (lastVersion > 0 && new TreeSet<>(previousChildIds(c, albumKey, lastVersion)).equals(new TreeSet<>(childIds))) {
            closeDeadline(c, albumKey);
            return Optional.empty();
        }
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
        try (PreparedStatement ps = c.prepareStatement("UPDATE album SET decided_version = ?, decided_at = now(), decide_after = NULL,"
                + " needs_person = needs_person OR ? WHERE album_key = ?")) {
            ps.setInt(1, version);
            ps.setBoolean(2, state.conflicting());
            ps.setString(3, albumKey);
            ps.executeUpdate();
        }
        WorkQueue.schedule(c, List.of(new WorkQueue.NewWork(AlbumDecisionSource.KIND, albumKey + ":" + version, decisionId, albumKey)));
        return Optional.of(new Decision(albumKey, version, kind, childIds, completedBy));
    }

    private static void closeDeadline(Connection c, String albumKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("UPDATE album SET decide_after = NULL WHERE album_key = ?")) {
            ps.setString(1, albumKey);
            ps.executeUpdate();
        }
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
