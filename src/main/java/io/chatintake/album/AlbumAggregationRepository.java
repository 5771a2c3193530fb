package io.chatintake.album;

import java.io.IOException;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.processor.aggregate.AggregateProcessor;
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
 * timeout, in the same transaction as the group, so every process's sweep finds it.</li>
 * <li>{@link #get}: one read, without the read-only transaction camel-sql wraps it in: the Aggregator
 * reads the group for every child and every completion, holding its lock for completions.</li>
 * <li>{@link #scan}: recovery takes completed groups older than a grace only. The plain repository
 * hands every process's in-flight completions to every process's recovery (CAMEL-4271).</li>
 * </ul>
 * {@code PostgresAggregationRepository} is not used: 4.18.0 binds a version its SQL lacks (CAMEL-24044).
 * <p>
 * The repository's own transactions commit without waiting for the disk ({@code synchronous_commit
 * off}, theirs only): everything a group holds is durable elsewhere first (the children and the
 * deadline in the intake transaction, the decision in its own). A commit lost to a power cut costs
 * a group its latest child (the decision reads the stored children) or undoes a removal (the group
 * completes again, and the decision sees nothing new); it never loses a child or a decision.
 */
public final class AlbumAggregationRepository extends org.apache.camel.processor.aggregate.jdbc.JdbcAggregationRepository {
    public static final String NAME = "album_aggregation";

    private static final String MOVE_DEADLINE = """
            UPDATE album SET decide_after = last_child_at + make_interval(secs => ?) WHERE album_key = ?""";
    private static final String GET = "SELECT exchange, version FROM " + NAME + " WHERE id = ?";
    // The group leaves at the version read (and, completed by timeout or force, once its album's
    // deadline has passed), and becomes a completed row naming its album, in one statement: a
    // completed row exists exactly when this removal happened.
    private static final String CHECKED_REMOVE = """
            WITH removed AS (
                DELETE FROM %1$s g WHERE g.id = ? AND g.version = ?
                   AND NOT (? AND EXISTS (SELECT 1 FROM album a WHERE a.album_key = g.id AND a.decide_after > now()))
                RETURNING g.id)
            INSERT INTO %1$s_completed (id, exchange, version, album_key) SELECT ?, ?, ?, id FROM removed""".formatted(NAME);
    private static final String NO_WAIT_FOR_DISK = "SET LOCAL synchronous_commit TO OFF";

    /**
     * How old a completed group must be before recovery resubmits it: far longer than recording a
     * decision takes, so recovery takes what a dead process left, not what a live one is recording.
     */
    private static final double RECOVERY_GRACE_SECONDS = 10;

    private final AlbumAggregateController controller;

    public AlbumAggregationRepository(DataSource dataSource, AlbumAggregateController controller) {
        super(new DataSourceTransactionManager(dataSource), NAME, dataSource);
        this.controller = controller;
        setUseRecovery(true);
    }

    @Override
    public Exchange add(CamelContext camelContext, String correlationId, Exchange exchange) {
        return transactionTemplate.execute(status -> {
            jdbcTemplate.execute(NO_WAIT_FOR_DISK);
            Exchange previous = super.add(camelContext, correlationId, exchange);
            jdbcTemplate.update(MOVE_DEADLINE, controller.completionTimeoutMillis(exchange) / 1000.0, correlationId);
            return previous;
        });
    }

    /** One statement, no transaction: camel-sql's own opens a read-only transaction around this one read. */
    @Override
    public Exchange get(CamelContext camelContext, String correlationId) {
        List<Map<String, Object>> rows = jdbcTemplate.queryForList(GET, correlationId);
        if (rows.isEmpty()) {
            return null;
        }
        try {
            Exchange group = jdbcCamelCodec.unmarshallExchange(camelContext, (byte[]) rows.get(0).get("exchange"), getDeserializationFilter());
            group.setProperty(VERSION_PROPERTY, ((Number) rows.get(0).get("version")).longValue());
            return group;
        } catch (IOException | ClassNotFoundException e) {
            throw new IllegalStateException("album " + correlationId + ": unreadable aggregation group, not completed", e);
        }
    }

    @Override
    public void remove(CamelContext camelContext, String correlationId, Exchange exchange) {
        Long version = exchange.getProperty(VERSION_PROPERTY, Long.class);
        String completedBy = exchange.getProperty(Exchange.AGGREGATED_COMPLETED_BY, String.class);
        boolean byDeadline = AggregateProcessor.COMPLETED_BY_TIMEOUT.equals(completedBy) || AggregateProcessor.COMPLETED_BY_FORCE.equals(completedBy);
        byte[] completed;
        try {
            completed = jdbcCamelCodec.marshallExchange(exchange, isAllowSerializedHeaders());
        } catch (IOException e) {
            throw new IllegalStateException("album " + correlationId + ": completed group not serialisable, group kept", e);
        }
        int removed = version == null ? 0 : transactionTemplate.execute(status -> {
            jdbcTemplate.execute(NO_WAIT_FOR_DISK);
            return jdbcTemplate.update(CHECKED_REMOVE, correlationId, version, byDeadline, exchange.getExchangeId(), completed, version);
        });
        if (removed != 1) {
            throw new OptimisticLockingException();
        }
    }

    @Override
    public boolean confirmWithResult(CamelContext camelContext, String exchangeId) {
        return Boolean.TRUE.equals(transactionTemplate.execute(status -> {
            jdbcTemplate.execute(NO_WAIT_FOR_DISK);
            return super.confirmWithResult(camelContext, exchangeId);
        }));
    }

    @Override
    public Set<String> scan(CamelContext camelContext) {
        return new LinkedHashSet<>(jdbcTemplate.queryForList("SELECT id FROM " + NAME + "_completed"
                + " WHERE completed_at < now() - make_interval(secs => ?)", String.class, RECOVERY_GRACE_SECONDS));
    }
}
