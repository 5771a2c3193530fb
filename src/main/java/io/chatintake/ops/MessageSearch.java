package io.chatintake.ops;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * Searches stored messages: Telegram updates ({@code telegram_update}) and webhook events
 * ({@code webhook_event}, with the child message the route mapped), newest first, a page at a
 * time. Pages are keyset-paginated on (received_at, source, id), so a page deep in a million rows
 * costs what the first one does. Queries only: {@link MessagesView} renders, {@link MessagesCommand}
 * prints.
 */
public final class MessageSearch {
    public static final int MAX_LIMIT = 500;
    private static final String TELEGRAM = "telegram";
    private static final String WEBHOOK = "webhook";

    /**
     * What to look for; null or blank fields do not filter. {@code channel} is {@code telegram} or a
     * webhook channel's name (slack, unifyport, ...); {@code bot} a Telegram bot's configured name;
     * {@code event} a webhook event id or a Telegram update id; {@code after} the cursor of the page
     * before ({@link Page#next}).
     */
    public record Filter(String channel, String bot, String conversation, String sender, String text, String event,
                         Instant since, Instant until, int limit, String after) {
        public Filter {
            channel = blankToNull(channel);
            bot = blankToNull(bot);
            conversation = blankToNull(conversation);
            sender = blankToNull(sender);
            text = blankToNull(text);
            event = blankToNull(event);
            after = blankToNull(after);
            limit = Math.max(1, Math.min(limit, MAX_LIMIT));
        }

        private boolean telegram() {
            return (channel == null || channel.equals(TELEGRAM)) && (event == null || event.matches("-?\\d{1,18}"));
        }

        private boolean webhook() {
            return bot == null && (channel == null || !channel.equals(TELEGRAM));
        }
    }

    /**
     * One stored message. {@code key} opens its timeline ({@link MessageTimeline}); {@code source}
     * is the Telegram bot or the webhook workspace; {@code event} the update or event id.
     */
    public record Found(String key, String channel, String source, String conversation, String sender, String event, String type,
                        String text, Instant receivedAt) {
    }

    /** A page of results, and the cursor of the next one (null: this is the last). */
    public record Page(List<Found> rows, String next) {
    }

    /** A message's key: which table, which row. */
    public record Key(String table, long id) {
        public static Optional<Key> parse(String key) {
            if (key != null && key.matches("(telegram|webhook)-\\d{1,18}")) {
                int dash = key.indexOf('-');
                return Optional.of(new Key(key.substring(0, dash), Long.parseLong(key.substring(dash + 1))));
            }
            return Optional.empty();
        }

        boolean telegram() {
            return table.equals(TELEGRAM);
        }

        @Override
        public String toString() {
            return table + "-" + id;
        }
    }

    /** Where a page ends: the last row's time, its table's rank (telegram 1, webhook 0) and id. */
    private record Cursor(Instant at, int rank, long id) {
        static Cursor parse(String text) {
            String[] parts = text.split("_");
            try {
                if (parts.length == 3) {
                    return new Cursor(Instant.parse(parts[0]), Integer.parseInt(parts[1]), Long.parseLong(parts[2]));
                }
            } catch (RuntimeException e) {
                // falls through: a cursor that is not ours is refused below
            }
            throw new IllegalArgumentException("not a page cursor: " + (text.length() > 40 ? text.substring(0, 40) + "..." : text));
        }

        @Override
        public String toString() {
            return at + "_" + rank + "_" + id;
        }
    }

    private static final String TELEGRAM_ROWS = """
            SELECT u.id, COALESCE(c.bot_name, 'bot ' || u.bot_id), telegram_chat_id(u.payload), telegram_sender_id(u.payload),
                   u.update_id::text, u.update_type, telegram_text(u.payload), u.received_at
              FROM telegram_update u LEFT JOIN telegram_checkpoint c ON c.bot_id = u.bot_id
             WHERE true""";

    private static final String WEBHOOK_ROWS = """
            SELECT e.id, e.channel, e.workspace, m.conversation_id, webhook_sender_id(e.payload), e.event_id, e.event_type,
                   COALESCE(m.text, m.caption), e.received_at
              FROM webhook_event e %s JOIN channel_message m ON m.first_event_id = e.event_id AND m.workspace = e.workspace
             WHERE true""";

    private MessageSearch() {
    }

    /** Runs the search on {@code c} (read-only is enough). */
    public static Page find(Connection c, Filter filter) throws SQLException {
        Cursor after = filter.after() == null ? null : Cursor.parse(filter.after());
        List<Ranked> rows = new ArrayList<>();
        if (filter.telegram()) {
            rows.addAll(telegram(c, filter, after));
        }
        if (filter.webhook()) {
            rows.addAll(webhook(c, filter, after));
        }
        rows.sort(Comparator.comparing((Ranked r) -> r.found.receivedAt()).thenComparingInt(r -> r.rank)
                .thenComparingLong(r -> r.id).reversed());
        List<Ranked> page = rows.subList(0, Math.min(filter.limit(), rows.size()));
        String next = rows.size() > filter.limit()
                ? new Cursor(page.get(page.size() - 1).found.receivedAt(), page.get(page.size() - 1).rank, page.get(page.size() - 1).id).toString()
                : null;
        return new Page(page.stream().map(r -> r.found).toList(), next);
    }

    private record Ranked(Found found, int rank, long id) {
    }

    private static List<Ranked> telegram(Connection c, Filter f, Cursor after) throws SQLException {
        Query q = new Query(TELEGRAM_ROWS);
        q.where(f.bot(), " AND u.bot_id IN (SELECT bot_id FROM telegram_checkpoint WHERE bot_name = ?)");
        q.where(f.conversation(), " AND telegram_chat_id(u.payload) = ?");
        q.where(f.sender(), " AND telegram_sender_id(u.payload) = ?");
        q.where(f.text() == null ? null : contains(f.text()), " AND u.id IN (SELECT t.update_row_id FROM telegram_update_text t WHERE t.text ILIKE ?)");
        q.where(f.event() == null ? null : Long.parseLong(f.event()), " AND u.update_id = ?");
        return q.page("u", f, after, 1, rs -> new Found(TELEGRAM + "-" + rs.getLong(1), TELEGRAM, rs.getString(2), rs.getString(3),
                rs.getString(4), rs.getString(5), rs.getString(6), rs.getString(7), rs.getTimestamp(8).toInstant()), c);
    }

    private static List<Ranked> webhook(Connection c, Filter f, Cursor after) throws SQLException {
        // An inner join when the child is filtered on: the planner then starts from the child's index.
        Query q = new Query(WEBHOOK_ROWS.formatted(f.conversation() == null && f.text() == null ? "LEFT" : ""));
        q.where(f.channel(), " AND e.channel = ?");
        q.where(f.conversation(), " AND m.conversation_id = ?");
        q.where(f.sender(), " AND webhook_sender_id(e.payload) = ?");
        q.where(f.text() == null ? null : contains(f.text()), " AND COALESCE(m.text, m.caption) ILIKE ?");
        q.where(f.event(), " AND e.event_id = ?");
        return q.page("e", f, after, 0, rs -> new Found(WEBHOOK + "-" + rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4),
                rs.getString(5), rs.getString(6), rs.getString(7), rs.getString(8), rs.getTimestamp(9).toInstant()), c);
    }

    /** ILIKE's pattern for "contains": its own wildcards in the text are matched literally. */
    static String contains(String text) {
        return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%";
    }

    private interface RowReader {
        Found read(ResultSet rs) throws SQLException;
    }

    /** A statement built from the filters given, its parameters in order. */
    private static final class Query {
        private final StringBuilder sql;
        private final List<Object> parameters = new ArrayList<>();

        Query(String select) {
            sql = new StringBuilder(select);
        }

        void where(Object value, String condition) {
            if (value != null) {
                sql.append(condition);
                parameters.add(value);
            }
        }

        List<Ranked> page(String alias, Filter f, Cursor after, int rank, RowReader reader, Connection c) throws SQLException {
            where(f.since() == null ? null : Timestamp.from(f.since()), " AND " + alias + ".received_at >= ?");
            where(f.until() == null ? null : Timestamp.from(f.until()), " AND " + alias + ".received_at < ?");
            if (after != null) {
                // Rows of a lower rank come after the cursor's at its very time; of a higher rank, only before it.
                Timestamp at = Timestamp.from(after.at());
                if (after.rank() == rank) {
                    sql.append(" AND (").append(alias).append(".received_at, ").append(alias).append(".id) < (?, ?)");
                    parameters.add(at);
                    parameters.add(after.id());
                } else {
                    where(at, " AND " + alias + ".received_at " + (rank < after.rank() ? "<=" : "<") + " ?");
                }
            }
            sql.append(" ORDER BY ").append(alias).append(".received_at DESC, ").append(alias).append(".id DESC LIMIT ?");
            parameters.add(f.limit() + 1);
            List<Ranked> rows = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql.toString())) {
                for (int i = 0; i < parameters.size(); i++) {
                    ps.setObject(i + 1, parameters.get(i));
                }
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        rows.add(new Ranked(reader.read(rs), rank, rs.getLong(1)));
                    }
                }
            }
            return rows;
        }
    }

    /** An ISO instant, or an age back from {@code now} (15m, 2h, 3d); null for blank. */
    public static Instant time(String value, Instant now) {
        if (value == null || value.isBlank()) {
            return null;
        }
        String v = value.strip();
        if (v.matches("\\d{1,6}[smhd]")) {
            long n = Long.parseLong(v.substring(0, v.length() - 1));
            return now.minus(switch (v.charAt(v.length() - 1)) {
                case 's' -> Duration.ofSeconds(n);
                case 'm' -> Duration.ofMinutes(n);
                case 'h' -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            });
        }
        try {
            return Instant.parse(v);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("'" + (v.length() > 40 ? v.substring(0, 40) : v)
                    + "' is not a time: give an ISO time (2026-01-31T10:02:00Z) or an age (15m, 2h, 3d)");
        }
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value.strip();
    }
}
