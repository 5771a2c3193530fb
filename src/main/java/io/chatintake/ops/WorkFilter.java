package io.chatintake.ops;

import io.chatintake.config.ConfigurationException;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;
import java.util.function.Function;

/**
 * Which work items an action on many applies to: kind, state, error text contains, and the
 * window of their last change ({@code updated_at}, when they failed or parked). Each part is
 * optional; an empty filter matches everything the action can apply to.
 */
record WorkFilter(String kind, String state, String errorContains, Instant since, Instant until) {
    private static final List<String> STATES = List.of("pending", "failed", "parked", "done");

    WorkFilter {
        if (state != null && !STATES.contains(state)) {
            throw new ConfigurationException("state must be one of " + STATES + ", got '" + state + "'");
        }
    }

    /** The filter named by {@code --kind --state --error --since --until} ({@code lookup} answers null for an absent option). */
    static WorkFilter of(Function<String, String> lookup) {
        return new WorkFilter(blankToNull(lookup.apply("kind")), blankToNull(lookup.apply("state")),
                blankToNull(lookup.apply("error")), instant("since", lookup.apply("since")), instant("until", lookup.apply("until")));
    }

    boolean isEmpty() {
        return kind == null && state == null && errorContains == null && since == null && until == null;
    }

    /** The condition on the work item aliased {@code w}, with its parameters bound by {@link #bind} from index 1. */
    String condition() {
        return "(CAST(? AS text) IS NULL OR w.kind = ?) AND (CAST(? AS text) IS NULL OR w.state = ?)"
                + " AND (CAST(? AS text) IS NULL OR strpos(coalesce(w.last_error, ''), ?) > 0)"
                + " AND (CAST(? AS timestamptz) IS NULL OR w.updated_at >= ?) AND (CAST(? AS timestamptz) IS NULL OR w.updated_at < ?)";
    }

    /** Binds {@link #condition()}'s parameters from {@code first}; answers the next free index. */
    int bind(PreparedStatement ps, int first) throws SQLException {
        List<Object> values = new ArrayList<>();
        for (Object value : new Object[] {kind, state, errorContains, timestamp(since), timestamp(until)}) {
            values.add(value);
            values.add(value);
        }
        int i = first;
        for (Object value : values) {
            ps.setObject(i++, value);
        }
        return i;
    }

    /** How the filter is recorded and shown: {@code kind=K state=S error~"T" since=T until=T}, or {@code everything}. */
    @Override
    public String toString() {
        StringJoiner parts = new StringJoiner(" ");
        if (kind != null) {
            parts.add("kind=" + kind);
        }
        if (state != null) {
            parts.add("state=" + state);
        }
        if (errorContains != null) {
            parts.add("error~\"" + errorContains + "\"");
        }
        if (since != null) {
            parts.add("since=" + since);
        }
        if (until != null) {
            parts.add("until=" + until);
        }
        return parts.length() == 0 ? "everything" : parts.toString();
    }

    private static Timestamp timestamp(Instant instant) {
        return instant == null ? null : Timestamp.from(instant);
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value.trim();
    }

    static Instant instant(String name, String text) {
        if (text == null || text.isBlank()) {
            return null;
        }
        try {
            return Instant.parse(text.trim());
        } catch (DateTimeParseException e) {
            throw new ConfigurationException("--" + name + " must be an ISO-8601 instant such as 2026-11-30T00:00:00Z, got '" + text + "'");
        }
    }
}
