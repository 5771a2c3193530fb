package io.chatintake.album;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What is known of an album's children: their ids and the album metadata each one claimed. It
 * travels as JSON text, because the JDBC aggregation repository only keeps simple types.
 * <p>
 * The rules of seed 003 in one place: complete when the children agree on one {@code total} and
 * that many distinct children are here; a conflict when they claim different totals or two claim
 * one index (every child is kept either way); otherwise nothing is claimed about completeness.
 */
public final class AlbumState {
    private static final ObjectMapper JSON = new ObjectMapper();

    public record Child(long id, Integer index, Integer total) {
    }

    private final Map<Long, Child> children = new TreeMap<>();

    private AlbumState() {
    }

    public static AlbumState of(Collection<Child> children) {
        AlbumState state = new AlbumState();
        children.forEach(c -> state.children.putIfAbsent(c.id(), c));
        return state;
    }

    /** The state holding one child, as aggregator input. */
    static String child(long id, Integer index, Integer total) {
        return of(List.of(new Child(id, index, total))).toJson();
    }

    static AlbumState parse(String json) {
        try {
            List<Child> children = new ArrayList<>();
            for (JsonNode child : JSON.readTree(json).path("children")) {
                children.add(new Child(child.path("id").asLong(), intOrNull(child.get("index")), intOrNull(child.get("total"))));
            }
            return of(children);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not an album state: " + e.getOriginalMessage(), e);
        }
    }

    private static Integer intOrNull(JsonNode node) {
        return node == null || node.isNull() ? null : node.asInt();
    }

    /** Both states' children; a child already held is not counted again (a redelivery changes nothing). */
    AlbumState with(AlbumState other) {
        AlbumState merged = of(children.values());
        other.children.values().forEach(c -> merged.children.putIfAbsent(c.id(), c));
        return merged;
    }

    String toJson() {
        ObjectNode root = JSON.createObjectNode();
        ArrayNode array = root.putArray("children");
        children.values().forEach(c -> {
            ObjectNode node = array.addObject().put("id", c.id());
            node.set("index", c.index() == null ? null : JSON.getNodeFactory().numberNode(c.index()));
            node.set("total", c.total() == null ? null : JSON.getNodeFactory().numberNode(c.total()));
        });
        return root.toString();
    }

    public int size() {
        return children.size();
    }

    public Set<Integer> totalsSeen() {
        Set<Integer> totals = new TreeSet<>();
        children.values().stream().map(Child::total).filter(Objects::nonNull).forEach(totals::add);
        return totals;
    }

    public boolean indexClash() {
        Set<Integer> seen = new HashSet<>();
        return children.values().stream().map(Child::index).filter(Objects::nonNull).anyMatch(i -> !seen.add(i));
    }

    public boolean conflicting() {
        return totalsSeen().size() > 1 || indexClash();
    }

    /** A consistent total, and that many distinct children: the files may still be downloading. */
    public boolean complete() {
        Set<Integer> totals = totalsSeen();
        return !conflicting() && totals.size() == 1 && children.size() == totals.iterator().next();
    }
}
