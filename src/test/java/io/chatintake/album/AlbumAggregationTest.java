package io.chatintake.album;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.apache.camel.support.ExchangeHelper;
import org.junit.jupiter.api.Test;

/**
 * routes/albums.yaml's aggregation strategy on its own: what a group holds, and what the
 * Aggregator keeps in memory for each open album (its timeout entry: the key and the last child's
 * exchange id).
 */
class AlbumAggregationTest {
    private static final String KEY = "[\"default\", \"whatsapp\", \"acc_1\", \"c1\", \"a1\"]";
    private final CamelContext camel = new DefaultCamelContext();
    private final AlbumAggregation aggregation = new AlbumAggregation();

    private Exchange child(String albumKey, long id, int index, List<AlbumState.Child> stored) {
        Exchange child = new DefaultExchange(camel);
        child.getMessage().setHeader(AlbumChildSource.ALBUM_KEY, albumKey);
        child.getMessage().setHeader(AlbumChildSource.CHILD_ID, id);
        child.getMessage().setHeader(AlbumChildSource.INDEX, index);
        child.getMessage().setHeader(AlbumChildSource.TOTAL, 2);
        child.getMessage().setHeader(AlbumChildSource.STORED_CHILDREN, stored);
        child.getMessage().setHeader(AlbumChildSource.GROUP_OPEN, true);
        return child;
    }

    @Test
    void theGroupHoldsEveryDistinctChildOnceAndCompletesAtTheirTotal() {
        Exchange group = aggregation.aggregate(null, child(KEY, 1, 1, List.of(new AlbumState.Child(1, 1, 2))));
        assertThat(aggregation.isComplete(group)).isFalse();

        group = aggregation.aggregate(group, child(KEY, 1, 1, List.of(new AlbumState.Child(1, 1, 2))));
        assertThat(AlbumAggregation.children(group)).as("a child run again").hasSize(1);

        group = aggregation.aggregate(group, child(KEY, 2, 2, List.of(new AlbumState.Child(1, 1, 2), new AlbumState.Child(2, 2, 2))));
        assertThat(AlbumAggregation.children(group)).extracting(AlbumState.Child::id).containsExactly(1L, 2L);
        assertThat(aggregation.isComplete(group)).isTrue();
    }

    @Test
    void aChildWhoseCompletionLostTheRemovalFindsItsGroupClosedWhenCamelRetriesIt() {
        List<AlbumState.Child> complete = List.of(new AlbumState.Child(1, 1, 2), new AlbumState.Child(2, 2, 2));
        Exchange child = child(KEY, 2, 2, complete);
        child.setProperty(AlbumAggregation.REMOVAL_LOST, new AtomicBoolean());

        // each attempt aggregates a fresh copy of the child, as the Aggregator does
        Exchange first = aggregation.aggregate(new DefaultExchange(camel), ExchangeHelper.createCorrelatedCopy(child, false));
        assertThat(aggregation.isComplete(first)).as("the first attempt completes by count").isTrue();
        // what the repository does when that completion loses the removal
        first.getProperty(AlbumAggregation.REMOVAL_LOST, AtomicBoolean.class).set(true);

        Exchange retry = aggregation.aggregate(new DefaultExchange(camel), ExchangeHelper.createCorrelatedCopy(child, false));
        assertThat(AlbumAggregation.children(retry)).hasSize(2);
        assertThat(aggregation.isComplete(retry)).as("the completion that won includes the child").isFalse();
        assertThat(aggregation.isComplete(aggregation.aggregate(new DefaultExchange(camel), child(KEY, 2, 2, complete))))
                .as("another child of the album, not marked").isTrue();
    }

    @Test
    void eachChildIsKnownByItsAlbumKeySoAnOpenAlbumCostsTheAggregatorNoOtherString() {
        Exchange one = child(KEY, 1, 1, List.of());
        Exchange two = child(KEY, 2, 2, List.of());

        Exchange group = aggregation.aggregate(null, one);
        aggregation.aggregate(group, two);

        assertThat(one.getExchangeId()).isSameAs(KEY);
        assertThat(two.getExchangeId()).isSameAs(KEY);
    }
}
