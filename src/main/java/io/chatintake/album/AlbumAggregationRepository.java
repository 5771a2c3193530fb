package io.chatintake.album;

import java.util.LinkedHashSet;
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
 * <li>{@link #scan}: recovery takes completed groups older than a grace only. The plain repository
 * hands every process's in-flight completions to every process's recovery (CAMEL-4271).</li>
 * </ul>
 * {@code PostgresAggregationRepository} is not used: 4.18.0 binds a version its SQL lacks (CAMEL-24044).
 */
public final class AlbumAggregationRepository extends org.apache.camel.processor.aggregate.jdbc.JdbcAggregationRepository {
    public static final String NAME = "album_aggregation";

    private static final String MOVE_DEADLINE = """
            UPDATE album SET decide_after = last_child_at + make_interval(secs => ?) WHERE album_key = ?""";
    private static final String CHECKED_REMOVE = "DELETE FROM " + NAME + " WHERE id = ? AND version = ?";
    private static final String DUE = "SELECT count(*) FROM album WHERE album_key = ? AND decide_after > now()";
    private static final String NAME_COMPLETED = "UPDATE " + NAME + "_completed SET album_key = ? WHERE id = ?";

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
            Exchange previous = super.add(camelContext, correlationId, exchange);
            jdbcTemplate.update(MOVE_DEADLINE, controller.completionTimeoutMillis(exchange) / 1000.0, correlationId);
            return previous;
        });
    }

    @Override
    public void remove(CamelContext camelContext, String correlationId, Exchange exchange) {
        Long version = exchange.getProperty(VERSION_PROPERTY, Long.class);
        String completedBy = exchange.getProperty(Exchange.AGGREGATED_COMPLETED_BY, String.class);
        boolean removed = Boolean.TRUE.equals(transactionTemplate.execute(status -> {
            boolean byDeadline = AggregateProcessor.COMPLETED_BY_TIMEOUT.equals(completedBy)
                    || AggregateProcessor.COMPLETED_BY_FORCE.equals(completedBy);
            if (byDeadline && jdbcTemplate.queryForObject(DUE, Integer.class, correlationId) > 0) {
                return false;
            }
            if (version == null || jdbcTemplate.update(CHECKED_REMOVE, correlationId, version) != 1) {
                return false;
            }
            try {
                insert(camelContext, exchange.getExchangeId(), exchange, getRepositoryNameCompleted(), version);
            } catch (Exception e) {
                throw new IllegalStateException("album " + correlationId + ": completed group not recorded, group kept", e);
            }
            jdbcTemplate.update(NAME_COMPLETED, correlationId, exchange.getExchangeId());
            return true;
        }));
        if (!removed) {
            throw new OptimisticLockingException();
        }
    }

    @Override
    public Set<String> scan(CamelContext camelContext) {
        return new LinkedHashSet<>(jdbcTemplate.queryForList("SELECT id FROM " + NAME + "_completed"
                + " WHERE completed_at < now() - make_interval(secs => ?)", String.class, RECOVERY_GRACE_SECONDS));
    }
}
