package io.chatintake.album;

import org.apache.camel.Exchange;
import org.apache.camel.processor.aggregate.AggregateProcessor;
import org.apache.camel.processor.aggregate.DefaultAggregateController;

/**
 * The {@code aggregateController} of {@code routes/albums.yaml}: the sweep completes overdue
 * groups through it ({@code forceCompletionOfGroup}), and the repository asks it the completion
 * timeout the route gives a group, so the deadline in the database is the one the route's YAML
 * says. A reloaded route starts a new aggregator, which this controller follows.
 */
public final class AlbumAggregateController extends DefaultAggregateController {
    private volatile AggregateProcessor aggregator;

    @Override
    public void onStart(AggregateProcessor processor) {
        // A retry Camel schedules on its background thread completes the child's exchange only
        // once it succeeds: retries of many albums there never settle, and the workers wait for good.
        if (processor.isOptimisticLocking() && processor.getOptimisticLockRetryPolicy().getDelay(1) > 0) {
            throw new IllegalStateException("the album aggregator must retry a lost race at once, on the same thread:"
                    + " give its aggregate optimisticLockRetryPolicy retryDelay: 0 and exponentialBackOff: false (routes/albums.yaml)");
        }
        super.onStart(processor);
        aggregator = processor;
    }

    @Override
    public void onStop(AggregateProcessor processor) {
        super.onStop(processor);
        if (aggregator == processor) {
            aggregator = null;
        }
    }

    /** Whether an aggregator runs here (a process without the route has no groups to complete). */
    boolean running() {
        return aggregator != null;
    }

    /**
     * The route's completion timeout for this group, as the aggregator reckons it: the
     * {@code completionTimeoutExpression} when it gives a positive value, else {@code completionTimeout}.
     */
    long completionTimeoutMillis(Exchange group) {
        AggregateProcessor now = aggregator;
        if (now == null) {
            throw new IllegalStateException("no album aggregator runs: the group's deadline is unknown");
        }
        if (now.getCompletionTimeoutExpression() != null) {
            Long millis = now.getCompletionTimeoutExpression().evaluate(group, Long.class);
            if (millis != null && millis > 0) {
                return millis;
            }
        }
        return now.getCompletionTimeout();
    }
}
