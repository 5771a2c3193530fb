package io.chatintake.album;

import io.chatintake.store.Database;
import io.chatintake.store.GroupCommit;
import io.chatintake.store.PlannedEachTime;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ExchangePropertyKey;
import org.apache.camel.processor.aggregate.AggregateProcessor;
import org.apache.camel.processor.aggregate.jdbc.JdbcAggregationRepository;
import org.apache.camel.support.DefaultExchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * The {@code aggregationRepository} of {@code routes/albums.yaml}: camel-sql's
 * {@link JdbcAggregationRepository} (its transaction manager, recovery settings and start-up table
 * check) with its data methods overridden over its tables: the open groups are {@value #NAME} (id =
 * album key, version), the completed ones {@value #COMPLETED} (id = the completion's exchange id,
 * version) until confirmed, and recovery resubmits what stays there. The overrides keep camel-sql
 * from serialising each group into its row and writing it back for every child, and from
 * completing one group twice in 4.18.0 (below); its Postgres variants fail every add (CAMEL-24044).
 * An open album (a deadline on its row) is a group; its children are the
 * {@code channel_message} rows the channels stored, in the transaction that also moved the
 * deadline, before the aggregator saw them. So a group never waits for the aggregator to be
 * written, every process sees the same groups, and adding a child writes nothing more.
 * <ul>
 * <li>{@link #get}: reads nothing. The children come with each child, which the work dispatcher
 * loaded with its album's stored children (one statement for a run of children); a removal reads
 * them as it removes the group.</li>
 * <li>{@link #add}: writes only when the route's completion timeout is not the quiet period the
 * deadline was set with (the YAML changed): the deadline becomes last child + the route's timeout.</li>
 * <li>{@link #remove}: a completed row for the album, only if none exists and the album is open
 * (and, completed by timeout or force, only once its deadline in the database has passed), in one
 * statement whose row count is checked: another process's removal makes this one fail with
 * {@link OptimisticLockingException}, so a group completes once. camel-sql 4.18.0 ignores its
 * DELETE's row count and records the completion anyway (CAMEL-24048).</li>
 * <li>{@link #removeOverdue}: the sweep removes every overdue group in one statement and completes
 * them through the aggregator ({@link #completeRemoved}).</li>
 * <li>{@link #scan}: recovery takes completed rows older than a grace only. camel-sql's hands every
 * process's in-flight completions to every process's recovery (CAMEL-4271).</li>
 * <li>{@link #confirmWithResult}: confirmations of many completed groups in one statement.</li>
 * </ul>
 * Nothing is kept per thread, and no call counts on another having come before it on the same
 * thread: a child whose completion by count lost the removal is marked on the child
 * ({@link AlbumAggregation#REMOVAL_LOST}), which the Aggregator's retry of that child aggregates
 * again; a group the sweep removed is handed to its forced completion by album key, and only a
 * removal by force takes it (a child's or a timeout's removal of that album meanwhile goes to the
 * database and loses).
 * <p>
 * The repository's statements commit without waiting for the disk ({@code synchronous_commit} off
 * for their own transaction only): a lost removal leaves the album overdue, which the sweep
 * completes again; a lost confirmation is resubmitted by recovery. The decision is made once
 * either way (it is recorded under the album's lock, once per version).
 */
public final class AlbumAggregationRepository extends JdbcAggregationRepository {
    /** The view of open groups ({@code getKeys}). */
    public static final String NAME = "album_aggregation";
    /** The completed groups until their decision is confirmed: camel-sql's {@code <name>_completed}. */
    static final String COMPLETED = NAME + "_completed";
    private static final Logger LOG = LoggerFactory.getLogger(AlbumAggregationRepository.class);

    /** In a statement that commits on its own: this transaction only, without waiting for the disk. */
    private static final String NO_WAIT_FOR_DISK = "set_config('synchronous_commit', 'off', true)";
    /** The children of album {@code a}, as arrays: the group's body. */
    static final String CHILDREN_OF_ALBUM = """
            SELECT array_agg(c.id ORDER BY c.id) AS ids, array_agg(c.album_index ORDER BY c.id) AS indexes,
                   array_agg(c.album_total ORDER BY c.id) AS totals
              FROM channel_message c
             WHERE c.workspace = a.workspace AND c.provider = a.provider AND c.account_id = a.account_id
               AND c.conversation_id = a.conversation_id AND c.album_id = a.album_id""";
    /** Whether album {@code a} is a group (see the view): open, and no removal of it in flight. */
    static final String IS_GROUP = "EXISTS (SELECT 1 FROM " + NAME + " g WHERE g.id = a.album_key)";
    /** Its deadline's distance from its last child, in milliseconds. */
    static final String QUIET_MILLIS = "(extract(epoch FROM a.decide_after - a.last_child_at) * 1000)::bigint";

    private static final String MOVE_DEADLINE = """
            WITH moved AS (UPDATE album SET decide_after = last_child_at + make_interval(secs => ?)
                            WHERE album_key = ? AND decide_after IS NOT NULL
                              AND decide_after IS DISTINCT FROM last_child_at + make_interval(secs => ?) RETURNING 1)
            SELECT count(*) FROM moved WHERE %s IS NOT NULL""".formatted(NO_WAIT_FOR_DISK);
    // One completed row per album at a time: the unique album_key makes the removal once. The album
    // row is locked, so its deadline is read as committed last (a decision made meanwhile closed it).
    // It reads the children it removed the group with.
    private static final String CHECKED_REMOVE = """
            WITH removed AS (
                INSERT INTO %s (id, album_key, version, completed_by)
                SELECT ?, a.album_key, a.decided_version, ? FROM album a
                 WHERE a.album_key = ? AND a.decide_after IS NOT NULL AND NOT (? AND a.decide_after > now()) FOR UPDATE OF a
                ON CONFLICT (album_key) DO NOTHING RETURNING album_key)
            SELECT a.provider, s.ids, s.indexes, s.totals, %s
              FROM removed r JOIN album a ON a.album_key = r.album_key CROSS JOIN LATERAL (%s) s""".formatted(COMPLETED, NO_WAIT_FOR_DISK,
            CHILDREN_OF_ALBUM);
    // Every overdue group no other process is removing right now; the completed row's id becomes the exchange's.
    private static final String REMOVE_OVERDUE = """
            WITH due AS (SELECT a.album_key, a.decided_version FROM album a
                          WHERE a.decide_after <= now()
                            AND NOT EXISTS (SELECT 1 FROM %1$s k WHERE k.album_key = a.album_key)
                          ORDER BY a.decide_after LIMIT ? FOR UPDATE SKIP LOCKED),
            completed AS (INSERT INTO %1$s (id, album_key, version, completed_by)
                          SELECT gen_random_uuid()::text, album_key, decided_version, '%2$s' FROM due
                          ON CONFLICT (album_key) DO NOTHING RETURNING id, album_key)
            SELECT k.id, k.album_key, a.provider, s.ids, s.indexes, s.totals, %3$s
              FROM completed k JOIN album a ON a.album_key = k.album_key CROSS JOIN LATERAL (%4$s) s""".formatted(
            COMPLETED, AggregateProcessor.COMPLETED_BY_FORCE, NO_WAIT_FOR_DISK, CHILDREN_OF_ALBUM);
    private static final String RECOVER = """
            SELECT k.album_key, a.provider, s.ids, s.indexes, s.totals, k.completed_by
              FROM %s k JOIN album a ON a.album_key = k.album_key CROSS JOIN LATERAL (%s) s
             WHERE k.id = ?""".formatted(COMPLETED, CHILDREN_OF_ALBUM);
    private static final String CONFIRM = """
            WITH confirmed AS (DELETE FROM %s WHERE id = ANY (?::text[]) RETURNING id)
            SELECT count(*) FROM confirmed WHERE %s IS NOT NULL""".formatted(COMPLETED, NO_WAIT_FOR_DISK);
    private static final String KEYS = "SELECT id FROM " + NAME;
    private static final String SCAN = "SELECT id FROM " + COMPLETED + " WHERE completed_at < now() - make_interval(secs => ?)";
    private static final String COUNTS = "SELECT (SELECT count(*) FROM " + NAME + ") || ' open, ' || (SELECT count(*) FROM " + COMPLETED
            + ") || ' completed'";

    /**
     * How old a completed group must be before recovery resubmits it: far longer than recording a
     * decision takes, so recovery takes what a dead process left, not what a live one is recording.
     */
    private static final double RECOVERY_GRACE_SECONDS = 10;
    private static final int CONFIRMS_PER_STATEMENT = 1000;

    /** A group as its removal left it: the completion's id (its completed row's), its channel and its children. */
    record Removal(String completionId, String provider, List<AlbumState.Child> children) {
        /** The group completes as this removal: under its id, with its channel, its children as the body (never media). */
        void into(Exchange group) {
            group.setExchangeId(completionId);
            group.getMessage().setHeader(AlbumChildSource.PROVIDER, provider);
            group.getMessage().setBody(AlbumAggregation.json(children));
        }
    }

    private final DataSource dataSource;
    private final JdbcTemplate jdbc;
    private final AlbumAggregateController controller;
    /** The groups {@link #completeRemoved} is completing by force, by album key: their removal is made already. */
    private final Map<String, Removal> removedBySweep = new ConcurrentHashMap<>();
    private final GroupCommit<String, Boolean> confirms;

    public AlbumAggregationRepository(DataSource dataSource, AlbumAggregateController controller) {
        super(new DataSourceTransactionManager(dataSource), NAME, dataSource);
        this.dataSource = dataSource;
        this.jdbc = new JdbcTemplate(dataSource);
        this.controller = controller;
        this.confirms = new GroupCommit<>(dataSource, 2, CONFIRMS_PER_STATEMENT, AlbumAggregationRepository::confirmAll, ids -> true);
        setUseRecovery(true);
    }

    /**
     * The group, without reading it: its children come with each child (loaded with it) or with
     * the removal, which reads them as it removes the group.
     */
    @Override
    public Exchange get(CamelContext camelContext, String correlationId) {
        Exchange group = new DefaultExchange(camelContext);
        group.getMessage().setHeader(AlbumChildSource.ALBUM_KEY, correlationId);
        return group;
    }

    @Override
    public Exchange add(CamelContext camelContext, String key, Exchange oldExchange, Exchange newExchange) {
        return add(camelContext, key, newExchange);
    }

    /** The child is stored and the deadline moved already; only a changed completion timeout is written. */
    @Override
    public Exchange add(CamelContext camelContext, String correlationId, Exchange group) {
        long routeMillis = controller.completionTimeoutMillis(group);
        Long storedMillis = group.getProperty(AlbumChildSource.STORED_QUIET_MILLIS, Long.class);
        if (storedMillis == null || storedMillis != routeMillis) {
            jdbc.queryForObject(MOVE_DEADLINE, Long.class, routeMillis / 1000.0, correlationId, routeMillis / 1000.0);
            group.setProperty(AlbumChildSource.STORED_QUIET_MILLIS, routeMillis);
        }
        return null;
    }

    /**
     * The group's one removal, which gives the completion its own id (the group's is its album
     * key), its completed row's, confirmed and recovered by it. A group the sweep removed already
     * is taken as it removed it when the completion is by force (the sweep's), and from the
     * database otherwise. A completion by count that loses marks its child, whose retry then finds
     * the group closed: the completion that won includes the child, stored before it.
     */
    @Override
    public void remove(CamelContext camelContext, String correlationId, Exchange group) {
        String completedBy = group.getProperty(ExchangePropertyKey.AGGREGATED_COMPLETED_BY, String.class);
        AtomicBoolean removalLost = (AtomicBoolean) group.removeProperty(AlbumAggregation.REMOVAL_LOST);
        Removal removed = AggregateProcessor.COMPLETED_BY_FORCE.equals(completedBy) ? removedBySweep.remove(correlationId) : null;
        if (removed == null) {
            boolean byDeadline = AggregateProcessor.COMPLETED_BY_TIMEOUT.equals(completedBy)
                    || AggregateProcessor.COMPLETED_BY_FORCE.equals(completedBy);
            String completionId = camelContext.getUuidGenerator().generateUuid();
            removed = jdbc.query(CHECKED_REMOVE, rs -> rs.next()
                    ? new Removal(completionId, rs.getString(1), children(rs.getArray(2), rs.getArray(3), rs.getArray(4)))
                    : null, completionId, completedBy, correlationId, byDeadline);
        }
        if (removed == null) {
            if (removalLost != null) {
                removalLost.set(true);
            }
            throw new OptimisticLockingException();
        }
        removed.into(group);
    }

    /**
     * The sweep's removal: up to {@code limit} groups whose album deadline in the database has
     * passed, each a completed row now, in one statement.
     * @return the removed groups by album key, to be completed through {@link #completeRemoved}
     */
    Map<String, Removal> removeOverdue(int limit) throws SQLException {
        Map<String, Removal> removed = new LinkedHashMap<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = PlannedEachTime.prepare(c, REMOVE_OVERDUE)) {
            ps.setInt(1, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    removed.put(rs.getString(2), new Removal(rs.getString(1), rs.getString(3), children(rs.getArray(4), rs.getArray(5),
                            rs.getArray(6))));
                }
            }
        }
        return removed;
    }

    /**
     * Completes groups {@link #removeOverdue} removed, each through {@code complete} (the
     * aggregator's {@code forceCompletionOfGroup}), whose removal by force takes the group as
     * removed. A group whose completion fails stays a completed row, which recovery resubmits.
     * @return how many were completed
     */
    int completeRemoved(Map<String, Removal> removed, ToIntFunction<String> complete) {
        int completed = 0;
        for (Map.Entry<String, Removal> group : removed.entrySet()) {
            String albumKey = group.getKey();
            removedBySweep.put(albumKey, group.getValue());
            try {
                completed += complete.applyAsInt(albumKey);
            } catch (RuntimeException e) {
                LOG.warn("album {}: removed as overdue but not completed ({}); recovery resubmits it", albumKey, e.getMessage(), e);
            } finally {
                removedBySweep.remove(albumKey, group.getValue());
            }
        }
        return completed;
    }

    /** A completed group a process left: its album and children, under the completed row's id. */
    @Override
    public Exchange recover(CamelContext camelContext, String exchangeId) {
        return jdbc.query(RECOVER, rs -> {
            if (!rs.next()) {
                return null;
            }
            Exchange recovered = new DefaultExchange(camelContext);
            recovered.getMessage().setHeader(AlbumChildSource.ALBUM_KEY, rs.getString(1));
            recovered.setProperty(ExchangePropertyKey.AGGREGATED_CORRELATION_KEY, rs.getString(1));
            new Removal(exchangeId, rs.getString(2), children(rs.getArray(3), rs.getArray(4), rs.getArray(5))).into(recovered);
            // The Aggregator's statistics count recovered completions by how they completed.
            recovered.setProperty(ExchangePropertyKey.AGGREGATED_COMPLETED_BY, rs.getString(6));
            return recovered;
        }, exchangeId);
    }

    @Override
    public void confirm(CamelContext camelContext, String exchangeId) {
        confirmWithResult(camelContext, exchangeId);
    }

    /**
     * Queues the confirmation, written with others in one statement, and answers at once: the
     * decision's own transaction removed the completed row already, and a confirmation lost with
     * its process leaves a row that recovery resubmits, whose decision is not made twice.
     */
    @Override
    public boolean confirmWithResult(CamelContext camelContext, String exchangeId) {
        confirms.submitAsync(exchangeId).whenComplete((confirmed, failure) -> {
            if (failure != null) {
                LOG.warn("album completion {}: not confirmed ({}); recovery resubmits it and its decision is not made twice", exchangeId,
                        failure.getMessage());
            }
        });
        return true;
    }

    private static List<Boolean> confirmAll(Connection c, List<String> exchangeIds) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(CONFIRM)) {
            ps.setArray(1, c.createArrayOf("text", exchangeIds.toArray()));
            ps.execute();
        }
        return exchangeIds.stream().map(id -> true).toList();
    }

    /** Recovery every 5 s: a database away means nothing to recover yet; the next scan after its return recovers. */
    @Override
    public Set<String> scan(CamelContext camelContext) {
        return unlessAway(() -> new LinkedHashSet<>(jdbc.queryForList(SCAN, String.class, RECOVERY_GRACE_SECONDS)), Set.of());
    }

    /**
     * Read by the route's start (to time the open groups out): a runner that starts while its
     * database is away starts without them, as the deadline sweep completes every overdue album
     * from its row anyway.
     */
    @Override
    public Set<String> getKeys() {
        return unlessAway(() -> new LinkedHashSet<>(jdbc.queryForList(KEYS, String.class)), Set.of());
    }

    /**
     * camel-sql's start (it checks its table) and a line counting the groups, both of which a
     * database away at start does without: recovery and the sweep find the groups once it is back.
     */
    @Override
    protected void doStart() throws Exception {
        boolean reachable = unlessAway(() -> {
            try {
                super.doStart();
            } catch (Exception e) {
                throw e instanceof RuntimeException runtime ? runtime : new IllegalStateException(e);
            }
            return true;
        }, false);
        String counts = reachable ? unlessAway(() -> jdbc.queryForObject(COUNTS, String.class), null) : null;
        if (counts != null) {
            LOG.info("album groups at start: {}", counts);
        }
    }

    private static <T> T unlessAway(Supplier<T> read, T whenAway) {
        try {
            return read.get();
        } catch (RuntimeException e) {
            // Spring's DataAccessException around the driver's
            if (!Database.isUnreachable(e)) {
                throw e;
            }
            LOG.debug("album groups: database away ({}); read again once it is back", e.getMessage());
            return whenAway;
        }
    }

    static List<AlbumState.Child> children(Array ids, Array indexes, Array totals) throws SQLException {
        if (ids == null) {
            return List.of();
        }
        Long[] id = (Long[]) ids.getArray();
        Integer[] index = (Integer[]) indexes.getArray();
        Integer[] total = (Integer[]) totals.getArray();
        List<AlbumState.Child> children = new ArrayList<>(id.length);
        for (int i = 0; i < id.length; i++) {
            children.add(new AlbumState.Child(id[i], index[i], total[i]));
        }
        return children;
    }
}
