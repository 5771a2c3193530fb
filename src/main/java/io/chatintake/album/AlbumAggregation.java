package io.chatintake.album;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.camel.AggregationStrategy;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/**
 * The aggregation strategy and completion predicate of {@code routes/albums.yaml}. A group's body
 * is the JSON list of the distinct children it holds (id, index, total), never their media. A
 * child brings its album's stored children as it was loaded ({@link AlbumChildSource#STORED_CHILDREN}),
 * children another process stored among them, so the group is what the database holds; a child the
 * group holds already (its work run again) changes nothing.
 */
public final class AlbumAggregation implements AggregationStrategy {
    /**
     * On a group: its album was no group when a child of it was loaded (decided, or being decided),
     * or a completion of it won over this child's, so it is not completed by count.
     */
    static final String CLOSED = "AlbumGroupClosed";
    /**
     * On a child (an {@link AtomicBoolean} set as it is loaded): whether a completion by count of
     * its group lost the removal to another completion, which includes the child. The Aggregator
     * retries the child by aggregating a fresh copy of it, and copies share their property values,
     * so the retry learns it here and the repository sets it through the group.
     */
    static final String REMOVAL_LOST = "AlbumChildRemovalLost";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final TypeReference<List<AlbumState.Child>> CHILDREN = new TypeReference<>() {
    };

    @Override
    public Exchange aggregate(Exchange oldExchange, Exchange newExchange) {
        Exchange group = oldExchange != null ? oldExchange : newExchange;
        Message child = newExchange.getMessage();
        Map<Long, AlbumState.Child> children = new LinkedHashMap<>();
        if (oldExchange != null) {
            children(oldExchange).forEach(c -> children.put(c.id(), c));
        }
        List<?> stored = child.getHeader(AlbumChildSource.STORED_CHILDREN, List.class);
        if (stored != null) {
            stored.forEach(c -> children.putIfAbsent(((AlbumState.Child) c).id(), (AlbumState.Child) c));
        }
        AlbumState.Child own = new AlbumState.Child(child.getHeader(AlbumChildSource.CHILD_ID, Long.class),
                child.getHeader(AlbumChildSource.INDEX, Integer.class), child.getHeader(AlbumChildSource.TOTAL, Integer.class));
        children.putIfAbsent(own.id(), own);
        group.getMessage().setBody(json(children.values()));
        String albumKey = child.getHeader(AlbumChildSource.ALBUM_KEY, String.class);
        group.getMessage().setHeader(AlbumChildSource.ALBUM_KEY, albumKey);
        // The aggregator keeps the last child's exchange id with its open album until it completes:
        // as the key it holds already, it costs nothing more. A completion gets its own id as it is removed.
        newExchange.setExchangeId(albumKey);
        group.getMessage().setHeader(AlbumChildSource.PROVIDER, child.getHeader(AlbumChildSource.PROVIDER));
        AtomicBoolean removalLost = newExchange.getProperty(REMOVAL_LOST, AtomicBoolean.class);
        if (removalLost != null) {
            group.setProperty(REMOVAL_LOST, removalLost);
        }
        if (Boolean.FALSE.equals(child.getHeader(AlbumChildSource.GROUP_OPEN, Boolean.class)) || removalLost != null && removalLost.get()) {
            group.setProperty(CLOSED, true);
        }
        Long quiet = child.getHeader(AlbumChildSource.STORED_QUIET_MILLIS, Long.class);
        if (quiet != null) {
            group.setProperty(AlbumChildSource.STORED_QUIET_MILLIS, quiet);
        }
        return group;
    }

    /** {@code completionPredicate}: an open group whose children agree on one total and are that many distinct children. */
    public boolean isComplete(Exchange group) {
        return !group.getProperty(CLOSED, false, Boolean.class) && AlbumState.of(children(group)).complete();
    }

    /** The children a group (or a completed album's exchange) holds. */
    public static List<AlbumState.Child> children(Exchange group) {
        String body = group.getMessage().getBody(String.class);
        if (body == null || body.isEmpty()) {
            return List.of();
        }
        try {
            return JSON.readValue(body, CHILDREN);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("album group " + group.getMessage().getHeader(AlbumChildSource.ALBUM_KEY)
                    + ": unreadable body, nothing aggregated", e);
        }
    }

    static String json(Collection<AlbumState.Child> children) {
        try {
            return JSON.writeValueAsString(new ArrayList<>(children));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
