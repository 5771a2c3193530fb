package io.chatintake.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an operator paused ({@code operator_pause}, V32): a Telegram bot's polling or a kind of
 * work, while a route is being fixed. The CLI and the status page change it in a transaction of
 * theirs, which also records the action; the pollers and the work claim of every process read it
 * through a {@link Watch}, which looks again at most once a second.
 */
public final class OperatorPause {
    private static final Logger LOG = LoggerFactory.getLogger(OperatorPause.class);

    /** What can be paused, and what a pause of it means. */
    public enum Subject {
        TELEGRAM_BOT("telegram-bot", "telegram bot", "bot",
                "no getUpdates until `telegram resume --bot %s`; the offset stays as it is"),
        WORK_KIND("work-kind", "work kind", "kind",
                "no item of it is claimed until `work resume --kind %s`; new items are still stored");

        /** As stored in {@code operator_pause.subject}. */
        public final String key;
        /** As a person reads it before the name: "telegram bot main". */
        public final String label;
        /** One word, as in the CLI option ({@code --bot}, {@code --kind}) and the recorded action ({@code pause-bot}). */
        public final String word;
        private final String meaning;

        Subject(String key, String label, String word, String meaning) {
            this.key = key;
            this.label = label;
            this.word = word;
            this.meaning = meaning;
        }

        /** What a pause of {@code name} means, in one clause. */
        public String meaning(String name) {
            return meaning.formatted(name);
        }
    }

    /** A pause in force: since when (the database's time) and by whom. */
    public record Paused(String name, Instant since, String by) {
    }

    /** What a pause or a resume came to: whether it changed anything, and the pause it set or ended (or found). */
    public record Change(boolean changed, Paused pause) {
    }

    // The no-op update returns the row that is there: one statement, whether it was paused already or not.
    private static final String PAUSE = """
            INSERT INTO operator_pause (subject, name, paused_by) VALUES (?, ?, ?)
            ON CONFLICT (subject, name) DO UPDATE SET subject = excluded.subject
            RETURNING paused_at, paused_by, xmax = 0""";
    private static final String RESUME = "DELETE FROM operator_pause WHERE subject = ? AND name = ? RETURNING paused_at, paused_by";
    private static final String LIST = "SELECT name, paused_at, paused_by FROM operator_pause WHERE subject = ? ORDER BY name";

    private OperatorPause() {
    }

    /** Pauses {@code name} in the caller's transaction; a pause in force already is kept as it was (changed: false). */
    public static Change pause(Connection transaction, Subject subject, String name, String by) throws SQLException {
        try (PreparedStatement ps = transaction.prepareStatement(PAUSE)) {
            ps.setString(1, subject.key);
            ps.setString(2, name);
            ps.setString(3, by);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Change(rs.getBoolean(3), new Paused(name, rs.getTimestamp(1).toInstant(), rs.getString(2)));
            }
        }
    }

    /** Ends the pause of {@code name} in the caller's transaction; empty when it was not paused. */
    public static Optional<Paused> resume(Connection transaction, Subject subject, String name) throws SQLException {
        try (PreparedStatement ps = transaction.prepareStatement(RESUME)) {
            ps.setString(1, subject.key);
            ps.setString(2, name);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(new Paused(name, rs.getTimestamp(1).toInstant(), rs.getString(2))) : Optional.empty();
            }
        }
    }

    /** The pauses of one subject in force now, by name. */
    public static Map<String, Paused> list(Connection c, Subject subject) throws SQLException {
        Map<String, Paused> paused = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(LIST)) {
            ps.setString(1, subject.key);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    paused.put(rs.getString(1), new Paused(rs.getString(1), rs.getTimestamp(2).toInstant(), rs.getString(3)));
                }
            }
        }
        return paused;
    }

    /**
     * One process's view of a subject's pauses: read again when asked and older than
     * {@link #LOOK_EVERY}, so a pause or a resume reaches every replica within about a second
     * and costs each one query a second at most, however many bots or workers ask. Each change
     * seen is logged once.
     */
    public static final class Watch {
        public static final Duration LOOK_EVERY = Duration.ofSeconds(1);
        private final DataSource dataSource;
        private final Subject subject;
        // Guarded by this.
        private Map<String, Paused> paused = Map.of();
        private long lookedAt;
        private boolean looked;

        public Watch(DataSource dataSource, Subject subject) {
            this.dataSource = dataSource;
            this.subject = subject;
        }

        /** The pauses in force, by name, as of at most {@link #LOOK_EVERY} ago. */
        public synchronized Map<String, Paused> paused() throws SQLException {
            if (!looked || System.nanoTime() - lookedAt >= LOOK_EVERY.toNanos()) {
                Map<String, Paused> now;
                try (Connection c = dataSource.getConnection()) {
                    now = list(c, subject);
                }
                now.forEach((name, pause) -> {
                    if (!pause.equals(paused.get(name))) {
                        LOG.info("{} '{}' is paused (by {} since {}): {}", subject.label, name, pause.by(), pause.since(), subject.meaning(name));
                    }
                });
                paused.keySet().stream().filter(name -> !now.containsKey(name))
                        .forEach(name -> LOG.info("{} '{}' resumed", subject.label, name));
                paused = now;
                lookedAt = System.nanoTime();
                looked = true;
            }
            return paused;
        }
    }
}
