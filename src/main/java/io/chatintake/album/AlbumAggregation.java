package io.chatintake.album;

import org.apache.camel.AggregationStrategy;
import org.apache.camel.Exchange;

/**
 * The aggregation strategy and completion predicate of {@code routes/albums.yaml}: merges each
 * child into the album's {@link AlbumState}, and completes the group early only when the state is
 * complete; otherwise the quiet-period timeout closes it.
 */
public final class AlbumAggregation implements AggregationStrategy {
    @Override
    public Exchange aggregate(Exchange oldExchange, Exchange newExchange) {
        if (oldExchange == null) {
            return newExchange;
        }
        AlbumState merged = AlbumState.parse(oldExchange.getMessage().getBody(String.class))
                .with(AlbumState.parse(newExchange.getMessage().getBody(String.class)));
        oldExchange.getMessage().setBody(merged.toJson());
        // The quiet period of the newest child applies (the same for every child of one provider).
        oldExchange.getMessage().setHeader(AlbumChildSource.QUIET_PERIOD_MILLIS,
                newExchange.getMessage().getHeader(AlbumChildSource.QUIET_PERIOD_MILLIS));
        return oldExchange;
    }

    /** The completion predicate: a consistent total reached by that many distinct children. */
    public boolean isComplete(Exchange aggregated) {
        return AlbumState.parse(aggregated.getMessage().getBody(String.class)).complete();
    }
}
