package io.chatintake.album;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.camel.AggregationStrategy;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/**
 * The aggregation strategy and completion predicate of {@code routes/albums.yaml}. A group's body
 * is the JSON list of the children it holds (id, index, total), never their media: the JDBC
 * repository serialises the body, and a text body stays readable in the table. A child the group
 * holds already (its work run again) leaves the group unchanged.
 */
public final class AlbumAggregation implements AggregationStrategy {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final TypeReference<List<AlbumState.Child>> CHILDREN = new TypeReference<>() {
    };

    @Override
    public Exchange aggregate(Exchange oldExchange, Exchange newExchange) {
        AlbumState.Child child = child(newExchange.getMessage());
        if (oldExchange == null) {
            newExchange.getMessage().setBody(json(List.of(child)));
            return newExchange;
        }
        List<AlbumState.Child> children = new ArrayList<>(children(oldExchange));
        if (children.stream().noneMatch(c -> c.id() == child.id())) {
            children.add(child);
        }
        oldExchange.getMessage().setBody(json(children));
        return oldExchange;
    }

    /** {@code completionPredicate}: the children agree on one total and that many distinct children are in. */
    public boolean isComplete(Exchange group) {
        return AlbumState.of(children(group)).complete();
    }

    /** The children a group (or a completed album's exchange) holds. */
    public static List<AlbumState.Child> children(Exchange group) {
        try {
            return JSON.readValue(group.getMessage().getBody(String.class), CHILDREN);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("album group " + group.getMessage().getHeader(AlbumChildSource.ALBUM_KEY)
                    + ": unreadable body, nothing aggregated", e);
        }
    }

    private static AlbumState.Child child(Message child) {
        return new AlbumState.Child(child.getHeader(AlbumChildSource.CHILD_ID, Long.class), child.getHeader(AlbumChildSource.INDEX, Integer.class),
                child.getHeader(AlbumChildSource.TOTAL, Integer.class));
    }

    private static String json(Collection<AlbumState.Child> children) {
        try {
            return JSON.writeValueAsString(children);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
