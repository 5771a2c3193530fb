package io.chatintake.album;

import io.chatintake.store.PlannedEachTime;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.ToIntFunction;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.processor.aggregate.AggregateProcessor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * The {@code aggregationRepository} of {@code routes/albums.yaml}: camel-sql's
 * {@link org.apache.camel.processor.aggregate.jdbc.JdbcAggregationRepository} on the
 * {@code album_aggregation} tables, with what 4.18.0 lacks for several processes sharing them.
 * <ul>
 * <li>{@link #remove}: a group is removed only at the version read; another process's removal (or
 * add) makes this one fail with {@link OptimisticLockingException}, so a group completes once.
 * 4.18.0 ignores the DELETE's row count and records the completion anyway (CAMEL-24048).</li>
 * <li>{@link #remove} by timeout or force: only once the album's deadline in the database has
 * passed, so a process that did not see the latest child cannot decide early.</li>
 * <li>{@link #add}: moves the album's deadline to its last stored child + the route's completion
 * timeout, in the statement that stores the group, so every process's sweep finds it.</li>
 * <li>{@link #get}, {@link #add}, {@link #remove}: one statement each, without the transactions
 * camel-sql wraps around its two or three: the Aggregator reads and writes a group for every child.</li>
 * <li>{@link #removeOverdue}: the sweep removes every overdue group in one statement and completes
 * them through the aggregator ({@link #completeRemoved}), whose {@code get} and {@code remove} are
 * then answered from what that statement removed: one round trip for hundreds of albums, not two each.</li>
 * <li>{@link #scan}: recovery takes completed groups older than a grace only. The plain repository
 * hands every process's in-flight completions to every process's recovery (CAMEL-4271).</li>
 * <li>{@link #confirmWithResult}: confirmations of many completed groups in one statement.</li>
 * </ul>
 * {@code PostgresAggregationRepository} is not used: 4.18.0 binds a version its SQL lacks (CAMEL-24044).
 * <p>
 * The repository's statements commit without waiting for the disk ({@code synchronous_commit} off
 * for their own transaction only): everything a group holds is durable elsewhere first (the
 * children and the deadline in the intake transaction, the decision in its own). A commit lost to
 * a power cut costs a group its latest child (the decision reads the stored children) or undoes a
 * removal (the group completes again, and the decision sees nothing new); it never loses a child
 * or a decision.
 */
public final class AlbumAggregationRepository extends org.apache.camel.processor.aggregate.jdbc.JdbcAggregationRepository {
    public static final String NAME = "album_aggregation";
    private static final Logger LOG = LoggerFactory.getLogger(AlbumAggregationRepository.class);

    /**
     * In a statement that commits on its own (evaluated for each row it wrote): this transaction
     * only, without waiting for the disk.
     */
    private static final String NO_WAIT_FOR_DISK = "set_config('synchronous_commit', 'off', true)";
    // Unchanged (the route's timeout is the quiet period intake set it with) it is not written again.
    private static final String MOVE_DEADLINE = """
            timeout AS (SELECT make_interval(secs => ?) AS t),
            deadline AS (UPDATE album SET decide_after = last_child_at + (SELECT t FROM timeout)
                          WHERE album_key IN (SELECT id FROM added)
                            AND decide_after IS DISTINCT FROM last_child_at + (SELECT t FROM timeout))""";
    private static final String ADD_FIRST = """
            WITH added AS (INSERT INTO %s (id, exchange, version) VALUES (?, ?, 1) ON CONFLICT (id) DO NOTHING RETURNING id),
            %s
            SELECT count(*) FROM added WHERE %s IS NOT NULL""".formatted(NAME, MOVE_DEADLINE, NO_WAIT_FOR_DISK);
    private static final String ADD_NEXT = """
            WITH added AS (UPDATE %s SET exchange = ?, version = version + 1 WHERE id = ? AND version = ? RETURNING id),
            %s
            SELECT count(*) FROM added WHERE %s IS NOT NULL""".formatted(NAME, MOVE_DEADLINE, NO_WAIT_FOR_DISK);
    private static final String GET = "SELECT exchange, version FROM " + NAME + " WHERE id = ?";
    // The group leaves at the version read (and, completed by timeout or force, once its album's
    // deadline has passed), and becomes a completed row naming its album, in one statement: a
    // completed row exists exactly when this removal happened.
    private static final String CHECKED_REMOVE = """
            WITH removed AS (
                DELETE FROM %1$s g WHERE g.id = ? AND g.version = ?
                   AND NOT (? AND EXISTS (SELECT 1 FROM album a WHERE a.album_key = g.id AND a.decide_after > now()))
                RETURNING g.id),
            completed AS (INSERT INTO %1$s_completed (id, exchange, version, album_key) SELECT ?, ?, ?, id FROM removed RETURNING id)
            SELECT count(*) FROM completed WHERE %2$s IS NOT NULL""".formatted(NAME, NO_WAIT_FOR_DISK);
    // Every overdue group no other process is removing right now, as it is (its version), into
    // completed rows in the same statement; the completed row's id becomes the exchange's id.
    private static final String REMOVE_OVERDUE = """
            WITH due AS (SELECT g.id FROM %1$s g JOIN album a ON a.album_key = g.id
                          WHERE a.decide_after <= now() ORDER BY a.decide_after LIMIT ? FOR UPDATE OF g SKIP LOCKED),
            removed AS (DELETE FROM %1$s g USING due WHERE g.id = due.id RETURNING g.id, g.exchange, g.version),
            completed AS (INSERT INTO %1$s_completed (id, exchange, version, album_key)
                          SELECT gen_random_uuid()::text, exchange, version, id FROM removed RETURNING id, exchange, version, album_key)
            SELECT id, exchange, version, album_key, %2$s FROM completed""".formatted(NAME, NO_WAIT_FOR_DISK);
    private static final String CONFIRM = """
            WITH confirmed AS (DELETE FROM %s_completed WHERE id = ANY (?::text[]) RETURNING id)
            SELECT id, %s FROM confirmed""".formatted(NAME, NO_WAIT_FOR_DISK);

    /**
     * How old a completed group must be before recovery resubmits it: far longer than recording a
     * decision takes, so recovery takes what a dead process left, not what a live one is recording.
     */
    private static final double RECOVERY_GRACE_SECONDS = 10;
    private static final int CONFIRMS_PER_STATEMENT = 1000;

    private final DataSource dataSource;
    private final AlbumAggregateController controller;
    /** The groups {@link #removeOverdue} removed, while this thread completes them through the aggregator. */
    private final ThreadLocal<Map<String, Exchange>> removedHere = new ThreadLocal<>();
    private final GroupCommit<String, Boolean> confirms;

    public AlbumAggregationRepository(DataSource dataSource, AlbumAggregateController controller) {
        super(new DataSourceTransactionManager(dataSource), NAME, dataSource);
        this.dataSource = dataSource;
        this.controller = controller;
        this.confirms = new GroupCommit<>(2, CONFIRMS_PER_STATEMENT, this::confirmAll);
        setUseRecovery(true);
    }

    @Override
    public Exchange add(CamelContext camelContext, String correlationId, Exchange exchange) {
        Long version = exchange.getProperty(VERSION_PROPERTY, Long.class);
        byte[] group = marshal(correlationId, exchange);
        double timeoutSeconds = controller.completionTimeoutMillis(exchange) / 1000.0;
        Long added = version == null
                ? jdbcTemplate.queryForObject(ADD_FIRST, Long.class, correlationId, group, timeoutSeconds)
                : jdbcTemplate.queryForObject(ADD_NEXT, Long.class, group, correlationId, version, timeoutSeconds);
        if (added == null || added != 1) {
            throw new OptimisticLockingException();
        }
        return null;
    }

    @Override
    public Exchange get(CamelContext camelContext, String correlationId) {
        Map<String, Exchange> removed = removedHere.get();
        if (removed != null && removed.containsKey(correlationId)) {
            return removed.get(correlationId);
        }
        List<Map<String, Object>> rows = jdbcTemplate.queryForList(GET, correlationId);
        if (rows.isEmpty()) {
            return null;
        }
        return unmarshal(camelContext, correlationId, (byte[]) rows.get(0).get("exchange"), ((Number) rows.get(0).get("version")).longValue());
    }

    @Override
    public void remove(CamelContext camelContext, String correlationId, Exchange exchange) {
        Map<String, Exchange> removed = removedHere.get();
        if (removed != null && removed.remove(correlationId, exchange)) {
            return;
        }
        Long version = exchange.getProperty(VERSION_PROPERTY, Long.class);
        String completedBy = exchange.getProperty(Exchange.AGGREGATED_COMPLETED_BY, String.class);
        boolean byDeadline = AggregateProcessor.COMPLETED_BY_TIMEOUT.equals(completedBy) || AggregateProcessor.COMPLETED_BY_FORCE.equals(completedBy);
        byte[] completed = marshal(correlationId, exchange);
        Long done = version == null ? null
                : jdbcTemplate.queryForObject(CHECKED_REMOVE, Long.class, correlationId, version, byDeadline, exchange.getExchangeId(), completed, version);
        if (done == null || done != 1) {
            throw new OptimisticLockingException();
        }
    }

    /**
     * The sweep's removal: up to {@code limit} groups whose album deadline in the database has
     * passed, removed at the version they have and kept as completed rows, in one statement.
     * @return the removed groups by album key, to be completed through {@link #completeRemoved}
     */
    public Map<String, Exchange> removeOverdue(CamelContext camelContext, int limit) throws SQLException {
        Map<String, Exchange> removed = new LinkedHashMap<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = PlannedEachTime.prepare(c, REMOVE_OVERDUE)) {
            ps.setInt(1, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Exchange group = unmarshal(camelContext, rs.getString(4), rs.getBytes(2), rs.getLong(3));
                    group.setExchangeId(rs.getString(1));
                    removed.put(rs.getString(4), group);
                }
            }
        }
        return removed;
    }

    /**
     * Completes groups {@link #removeOverdue} removed, each through {@code complete} (the
     * aggregator's {@code forceCompletionOfGroup}): on this thread meanwhile, the aggregator's read
     * of such a group gets it from memory and its removal is the one already made. A group whose
     * completion fails stays a completed row, which recovery resubmits.
     * @return how many were completed
     */
    public int completeRemoved(Map<String, Exchange> removed, ToIntFunction<String> complete) {
        removedHere.set(new LinkedHashMap<>(removed));
        int completed = 0;
        try {
            for (String albumKey : removed.keySet()) {
                try {
                    completed += complete.applyAsInt(albumKey);
                } catch (RuntimeException e) {
                    LOG.warn("album {}: removed as overdue but not completed ({}); recovery resubmits it", albumKey, e.getMessage(), e);
                }
            }
        } finally {
            removedHere.remove();
        }
        return completed;
    }

    /** The completed row's id is the exchange's: what the aggregator confirms once the decision is recorded. */
    @Override
    public Exchange recover(CamelContext camelContext, String exchangeId) {
        Exchange recovered = super.recover(camelContext, exchangeId);
        if (recovered != null) {
            recovered.setExchangeId(exchangeId);
        }
        return recovered;
    }

    @Override
    public void confirm(CamelContext camelContext, String exchangeId) {
        confirmWithResult(camelContext, exchangeId);
    }

    @Override
    public boolean confirmWithResult(CamelContext camelContext, String exchangeId) {
        try {
            return confirms.submit(exchangeId);
        } catch (SQLException e) {
            LOG.warn("album completion {}: not confirmed ({}); recovery resubmits it and its decision is not made twice", exchangeId,
                    e.getMessage());
            return false;
        }
    }

    private List<Boolean> confirmAll(List<String> exchangeIds) throws SQLException {
        Set<String> confirmed = new LinkedHashSet<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(CONFIRM)) {
            ps.setArray(1, c.createArrayOf("text", exchangeIds.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    confirmed.add(rs.getString(1));
                }
            }
        }
        return exchangeIds.stream().map(confirmed::contains).toList();
    }

    @Override
    public Set<String> scan(CamelContext camelContext) {
        return new LinkedHashSet<>(jdbcTemplate.queryForList("SELECT id FROM " + NAME + "_completed"
                + " WHERE completed_at < now() - make_interval(secs => ?)", String.class, RECOVERY_GRACE_SECONDS));
    }

    private byte[] marshal(String albumKey, Exchange group) {
        try {
            return jdbcCamelCodec.marshallExchange(group, isAllowSerializedHeaders());
        } catch (IOException e) {
            throw new IllegalStateException("album " + albumKey + ": aggregation group not serialisable, not stored", e);
        }
    }

    private Exchange unmarshal(CamelContext camelContext, String albumKey, byte[] stored, long version) {
        try {
            Exchange group = jdbcCamelCodec.unmarshallExchange(camelContext, stored, getDeserializationFilter());
            group.setProperty(VERSION_PROPERTY, version);
            return group;
        } catch (IOException | ClassNotFoundException e) {
            throw new IllegalStateException("album " + albumKey + ": unreadable aggregation group, not completed", e);
        }
    }
}
