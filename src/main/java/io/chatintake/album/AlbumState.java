package io.chatintake.album;

import java.util.Collection;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What is known of an album's children: their ids and the album metadata each one claimed, as
 * read from the stored children. A child held twice counts once.
 * <p>
 * The album rules in one place: complete when the children agree on one {@code total} and
 * that many distinct children are here; a conflict when they claim different totals or two claim
 * one index (every child is kept either way); otherwise nothing is claimed about completeness.
 */
public final class AlbumState {
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
