package io.chatintake.content;

import io.chatintake.attachment.MediaStore;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Content expires before the books ({@code retention.content-days}; 0 keeps it as long as its
 * row): raw updates and event bodies, message texts and captions, attachment URLs and files, and
 * effect results older than that lose their content ({@link ContentRemoval}); the rows stay, with
 * their ids, times, kinds, states and counts, until {@code retention.metadata-days}. So the graphs,
 * the audit and the dedupe keys (an event's key is its row's) keep working.
 * <p>
 * Content that unfinished work still reads (pending, running, retrying) is kept until that work
 * ends. Batches as retention's: one statement and commit each, rows claimed with
 * {@code FOR UPDATE SKIP LOCKED}, so every runner may expire at once. Ages are the database's
 * ({@code now()}), never this process's clock. The channels name their own tables
 * ({@link ExpiringContent}, registered by each channel).
 */
public final class ContentExpiry {
    private static final Logger LOG = LoggerFactory.getLogger(ContentExpiry.class);
    public static final String CONTENT_DAYS = "retention.content-days";
    private static final String UNFINISHED = "('pending', 'running', 'failed')";
    /** Kinds whose source rows are the engine's own tables (channel_message, message_attachment, album_decision). */
    private static final List<String> ENGINE_KINDS = List.of("album-child", "attachment", "album-decision");

    /** One table's old content: which rows ({@code x}), and how it is removed. */
    private record Rule(String table, String candidates, Remover remover) {
    }

    private interface Remover {
        long remove(ContentRemoval removal, List<Object> keys) throws SQLException;
    }

    @SuppressWarnings("unchecked")
    private static <T> List<T> as(List<Object> keys) {
        return (List<T>) (List<?>) keys;
    }

    /** The channels' tables first, then the engine's own. */
    private static List<Rule> rules(List<ExpiringContent> channelTables) {
        List<String> otherKinds = new ArrayList<>();
        channelTables.stream().map(ExpiringContent::workKind).filter(Objects::nonNull).forEach(otherKinds::add);
        otherKinds.addAll(ENGINE_KINDS);
        String others = otherKinds.stream().map(k -> "'" + k + "'").collect(Collectors.joining(", ", "(", ")"));
        List<Rule> rules = new ArrayList<>();
        for (ExpiringContent t : channelTables) {
            String unread = t.workKind() != null
                    ? "NOT EXISTS (SELECT 1 FROM work_item w WHERE w.kind = '%s' AND w.source_id = x.id AND w.state IN %s)"
                    .formatted(t.workKind(), UNFINISHED)
                    : """
                    NOT EXISTS (SELECT 1 FROM work_item w WHERE w.kind NOT IN %2$s AND w.source_id = x.id AND w.state IN %1$s)
                       AND NOT EXISTS (SELECT 1 FROM work_staged s WHERE s.kind NOT IN %2$s AND s.source_id = x.id)"""
                    .formatted(UNFINISHED, others);
            rules.add(new Rule(t.table(), """
                    SELECT x.id FROM %s x
                     WHERE x.%s < now() - make_interval(days => ?) AND x.content_removed_at IS NULL
                       AND %s%s""".formatted(t.table(), t.ageColumn(), unread, t.waiting() == null ? "" : " AND NOT (" + t.waiting() + ")"),
                    (r, k) -> r.rows(t, as(k))));
        }
        rules.addAll(List.of(
            new Rule("channel_message", """
                    SELECT x.id FROM channel_message x
                     WHERE x.updated_at < now() - make_interval(days => ?) AND x.content_removed_at IS NULL
                       AND NOT EXISTS (SELECT 1 FROM work_item w WHERE w.kind = 'album-child' AND w.source_id = x.id
                                          AND w.state IN %s)""".formatted(UNFINISHED), (r, k) -> r.messages(as(k))),
            new Rule("message_attachment", """
                    SELECT x.id FROM message_attachment x
                     WHERE x.created_at < now() - make_interval(days => ?) AND x.content_removed_at IS NULL AND x.status <> 'pending'
                       AND NOT EXISTS (SELECT 1 FROM work_item w WHERE w.kind = 'attachment' AND w.source_id = x.id
                                          AND w.state IN %s)""".formatted(UNFINISHED), (r, k) -> r.attachments(as(k))),
            new Rule("outbound_effect", """
                    SELECT x.effect_key FROM outbound_effect x
                     WHERE x.started_at < now() - make_interval(days => ?) AND x.content_removed_at IS NULL
                       AND x.result IS NOT NULL AND x.state <> 'started'""", (r, k) -> r.effects(as(k)))));
        return List.copyOf(rules);
    }

    private final List<Rule> rules = rules(ExpiringContent.registered());
    private final DataSource dataSource;
    private final Supplier<MediaStore> media;
    private final int days;
    private final int batchSize;

    /** @param media opens the media store for a pass (closed after it) */
    public ContentExpiry(DataSource dataSource, Supplier<MediaStore> media, int days, int batchSize) {
        this.dataSource = dataSource;
        this.media = media;
        this.days = days;
        this.batchSize = batchSize;
    }

    public static ContentExpiry from(Settings settings, DataSource dataSource) {
        return new ContentExpiry(dataSource, () -> MediaStore.configured(settings), settings.getInt(CONTENT_DAYS),
                settings.getInt("retention.batch-size"));
    }

    public int days() {
        return days;
    }

    /** Rows per table whose content a pass now would remove (dry run: nothing changes). */
    public Map<String, Long> dryRun() throws SQLException {
        Map<String, Long> rows = new LinkedHashMap<>();
        try (Connection c = dataSource.getConnection()) {
            c.setReadOnly(true);
            for (Rule rule : rules) {
                rows.put(rule.table(), days <= 0 ? 0 : count(c, rule));
            }
        }
        return rows;
    }

    /** One pass over every table, in batches, until no old content is left (or another runner holds the rest). */
    public Map<String, Long> expire() throws SQLException, IOException {
        Map<String, Long> rows = new LinkedHashMap<>();
        if (days <= 0) {
            rules.forEach(rule -> rows.put(rule.table(), 0L));
            return rows;
        }
        try (MediaStore store = media.get(); Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            for (Rule rule : rules) {
                long total = 0;
                int batch;
                do {
                    batch = expireBatch(c, store, rule);
                    total += batch;
                } while (batch == batchSize);
                rows.put(rule.table(), total);
            }
        }
        if (rows.values().stream().anyMatch(n -> n > 0)) {
            LOG.info("retention: content older than {} day(s) removed: {}", days, rows);
        }
        return rows;
    }

    /** The background job's step ({@code routes/retention.yaml}). */
    public void expireQuietly() {
        try {
            expire();
        } catch (SQLException | IOException | ConfigurationException e) {
            // ConfigurationException: the S3 bucket did not answer its check; files and rows stay together.
            LOG.warn("retention: content expiry stopped ({}); the next pass carries on", e.getMessage());
        }
    }

    private int expireBatch(Connection c, MediaStore store, Rule rule) throws SQLException, IOException {
        try {
            List<Object> keys = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(rule.candidates() + " ORDER BY 1 LIMIT ? FOR UPDATE OF x SKIP LOCKED")) {
                ps.setInt(1, days);
                ps.setInt(2, batchSize);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        keys.add(rs.getObject(1));
                    }
                }
            }
            if (keys.isEmpty()) {
                c.rollback();
                return 0;
            }
            ContentRemoval removal = new ContentRemoval(c, store, false);
            rule.remover().remove(removal, keys);
            removal.deleteFiles();
            c.commit();
            return keys.size();
        } catch (SQLException | IOException | RuntimeException e) {
            c.rollback();
            throw e;
        }
    }

    private long count(Connection c, Rule rule) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM (" + rule.candidates() + ") doomed")) {
            ps.setInt(1, days);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
