package io.chatintake.work;

import io.chatintake.config.Settings;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How long finished rows are kept, per table ({@code retention.*-days}; 0 keeps a table forever),
 * and the purge that applies it: small batches (one statement and one commit each, rows claimed
 * with {@code FOR UPDATE SKIP LOCKED}, so every runner may purge at once and intake never waits
 * long), oldest first.
 * <p>
 * Content (payloads, texts, files) goes earlier, by {@code retention.content-days}; these windows
 * keep the books (ids, times, kinds, states, counts). Erased work counts as finished.
 * <p>
 * Never purged: unfinished or parked work, anything whose work item is not done, undecided (open)
 * albums, conflicts waiting for a person, effects not recorded done.
 * <p>
 * Ages are the database's ({@code now()} in each statement), never this process's clock: a runner
 * whose clock is ahead deletes nothing early.
 * <p>
 * A source row and its work item go together, in one statement: the item's {@code source_key} is
 * unique per kind, so an item kept after its source (or a source kept after its item) could make a
 * later arrival with the same key (a Telegram id reused after a restart, a redelivered event) look
 * handled already. Work of kinds whose source is kept (album children, attachments) goes by
 * {@code retention.work-item-days}; an effect goes only once its work item is gone, so it can
 * never be replayed into a repeated side effect.
 * <p>
 * The channels name their own tables ({@link RetainedTable}, registered by each channel): a table
 * whose rows are the sources of a kind of work, or rows a channel keeps after them (the keys that
 * make a replay a duplicate).
 */
public final class Retention {
    private static final Logger LOG = LoggerFactory.getLogger(Retention.class);

    /** One table's rule: which rows are finished and old ({@code x} = the table), and the work items that go with them. */
    private record Policy(String table, String key, String settingKey, String candidates, int cutoffs, String linkedWork,
                          String before) {
    }

    public static final String METADATA_DAYS = "retention.metadata-days";
    private static final String ALBUM_DECISION = "album-decision";

    /** Kinds whose source rows are in the engine's other tables (channel_message, message_attachment, album_decision). */
    private static final List<String> OTHER_TABLES_KINDS = List.of("album-child", "attachment", ALBUM_DECISION);

    /**
     * No unfinished work item names the row: of its own kind, or of a kind not known here (another
     * channel may add kinds whose source is the same table; such an item with the same id as another
     * table's row only keeps that row longer). Nor does staged work, whose item is still to come.
     */
    private static String noUnfinishedWork(String otherTablesKinds) {
        return "NOT EXISTS (SELECT 1 FROM work_item w WHERE w.source_id = x.id AND w.state NOT IN ('done', 'erased') AND w.kind NOT IN ("
                + otherTablesKinds + ")) AND NOT EXISTS (SELECT 1 FROM work_staged s WHERE s.source_id = x.id AND s.kind NOT IN ("
                + otherTablesKinds + "))";
    }

    private static String quoted(List<String> kinds) {
        return kinds.stream().map(k -> "'" + k + "'").collect(Collectors.joining(", "));
    }

    /**
     * The channels' work sources first (each row with its work item), then the engine's own tables,
     * then the channels' plain rows, which outlive the work they came with.
     */
    private static List<Policy> policies(List<RetainedTable> channelTables) {
        List<RetainedTable> sources = channelTables.stream().filter(t -> t.workKind() != null).toList();
        List<String> sourceKinds = sources.stream().map(RetainedTable::workKind).toList();
        List<Policy> policies = new ArrayList<>();
        for (RetainedTable t : sources) {
            List<String> otherKinds = new ArrayList<>(OTHER_TABLES_KINDS);
            sourceKinds.stream().filter(k -> !k.equals(t.workKind())).forEach(otherKinds::add);
            policies.add(new Policy(t.table(), t.key(), t.settingKey(), """
                    SELECT x.id AS k FROM %s x
                     WHERE x.%s < now() - make_interval(days => ?) AND %s%s"""
                    .formatted(t.table(), t.ageColumn(), noUnfinishedWork(quoted(otherKinds)),
                            t.pending() == null ? "" : " AND NOT (" + t.pending() + ")"), 1,
                    "w.kind = '" + t.workKind() + "' AND w.source_id = doomed.k", t.before()));
        }
        List<String> keptWithSources = new ArrayList<>(sourceKinds);
        keptWithSources.add(ALBUM_DECISION);
        policies.addAll(List.of(
            // Decided albums with no child since (no deadline), no person needed, every decision handled.
            new Policy("album", "album_key", "retention.album-days", """
                    SELECT x.album_key AS k FROM album x
                     WHERE x.first_child_at < now() - make_interval(days => ?) AND x.decided_at < now() - make_interval(days => ?)
                       AND x.decide_after IS NULL AND x.decided_version > 0
                       AND NOT x.needs_person
                       AND NOT EXISTS (SELECT 1 FROM album_decision d JOIN work_item w ON w.kind = '%s' AND w.source_id = d.id
                                        WHERE d.album_key = x.album_key AND w.state NOT IN ('done', 'erased'))""".formatted(ALBUM_DECISION), 2,
                    "w.kind = '" + ALBUM_DECISION + "' AND w.source_id IN (SELECT d.id FROM album_decision d WHERE d.album_key = doomed.k)",
                    "decisions AS (DELETE FROM album_decision d USING doomed WHERE d.album_key = doomed.k RETURNING 1), "),
            new Policy("work_item", "id", "retention.work-item-days", """
                    SELECT x.id AS k FROM work_item x
                     WHERE x.created_at < now() - make_interval(days => ?) AND x.done_at < now() - make_interval(days => ?)
                       AND x.state IN ('done', 'erased') AND x.kind NOT IN (%s)"""
                    .formatted(quoted(keptWithSources)), 2, null, null),
            new Policy("outbound_effect", "effect_key", "retention.outbound-effect-days", """
                    SELECT x.effect_key AS k FROM outbound_effect x
                     WHERE x.started_at < now() - make_interval(days => ?) AND x.done_at < now() - make_interval(days => ?)
                       AND x.state = 'done'
                       AND (x.work_item_id IS NULL OR NOT EXISTS (SELECT 1 FROM work_item w WHERE w.id = x.work_item_id))""",
                    2, null, null)));
        channelTables.stream().filter(t -> t.workKind() == null).forEach(t -> policies.add(new Policy(t.table(), t.key(), t.settingKey(), """
                SELECT x.%s AS k FROM %s x
                 WHERE x.%s < now() - make_interval(days => ?)""".formatted(t.key(), t.table(), t.ageColumn()), 1, null, t.before())));
        return List.copyOf(policies);
    }

    /** What one table would lose (dry run) or lost (purge): its rows, and the work items that went with them. */
    public record Outcome(String table, int days, long rows, long workItems) {
    }

    private final DataSource dataSource;
    private final List<Policy> policies;
    private final Map<String, Integer> days;
    private final int batchSize;

    /** With the tables the channels on the class path contribute ({@link RetainedTable#registered()}). */
    public Retention(DataSource dataSource, Map<String, Integer> days, int batchSize) {
        this(dataSource, RetainedTable.registered(), days, batchSize);
    }

    private Retention(DataSource dataSource, List<RetainedTable> channelTables, Map<String, Integer> days, int batchSize) {
        this.dataSource = dataSource;
        this.policies = policies(channelTables);
        this.days = Map.copyOf(days);
        this.batchSize = batchSize;
    }

    /**
     * Each table's window: its own {@code retention.*-days} key when set, else
     * {@code retention.metadata-days} (how long the books are kept; content goes earlier, by
     * {@code retention.content-days}). The dedupe keys have their own window.
     */
    public static Retention from(Settings settings, DataSource dataSource) {
        List<RetainedTable> channelTables = RetainedTable.registered();
        Map<String, Integer> days = new LinkedHashMap<>();
        int metadataDays = settings.getInt(METADATA_DAYS);
        policies(channelTables).forEach(p -> days.put(p.settingKey(),
                settings.get(p.settingKey()).isPresent() ? settings.getInt(p.settingKey()) : metadataDays));
        return new Retention(dataSource, channelTables, days, settings.getInt("retention.batch-size"));
    }

    /**
     * What a purge now would remove, per table, each counted as it stands; changes nothing. (An
     * effect whose work item goes in the same pass is counted by the dry run after it.)
     */
    public List<Outcome> dryRun() throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setReadOnly(true);
            List<Outcome> outcomes = new ArrayList<>();
            for (Policy p : policies) {
                outcomes.add(count(c, p));
            }
            return outcomes;
        }
    }

    /** One pass over every table, in batches until nothing old is left (or another runner holds the rest). */
    public List<Outcome> purge() throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            List<Outcome> outcomes = new ArrayList<>();
            for (Policy p : policies) {
                outcomes.add(purge(c, p));
            }
            if (outcomes.stream().anyMatch(o -> o.rows() > 0)) {
                LOG.info("retention: purged {}", describe(outcomes));
            }
            return outcomes;
        }
    }

    /** The background job's step ({@code routes/retention.yaml}). */
    public void purgeQuietly() {
        try {
            purge();
        } catch (SQLException e) {
            LOG.warn("retention: pass stopped ({}); nothing unfinished was touched, the next pass carries on", e.getMessage());
        }
    }

    public static String describe(List<Outcome> outcomes) {
        StringBuilder text = new StringBuilder();
        for (Outcome o : outcomes) {
            text.append(text.isEmpty() ? "" : ", ").append(o.table()).append(' ').append(o.rows());
            if (o.workItems() > 0) {
                text.append(" (+").append(o.workItems()).append(" work items)");
            }
        }
        return text.toString();
    }

    private Outcome count(Connection c, Policy p) throws SQLException {
        int keep = days.getOrDefault(p.settingKey(), 0);
        if (keep <= 0) {
            return new Outcome(p.table(), keep, 0, 0);
        }
        String sql = "WITH doomed AS (" + p.candidates() + ") SELECT (SELECT count(*) FROM doomed), "
                + (p.linkedWork() == null ? "0" : "(SELECT count(*) FROM work_item w JOIN doomed ON " + p.linkedWork() + ")");
        long[] counts = run(c, sql, p, keep, null);
        return new Outcome(p.table(), keep, counts[0], counts[1]);
    }

    private Outcome purge(Connection c, Policy p) throws SQLException {
        int keep = days.getOrDefault(p.settingKey(), 0);
        long rows = 0;
        long work = 0;
        if (keep > 0) {
            String sql = "WITH doomed AS (" + p.candidates() + " ORDER BY x." + p.key() + " LIMIT ? FOR UPDATE OF x SKIP LOCKED), "
                    + (p.before() == null ? "" : p.before())
                    + (p.linkedWork() == null ? "work AS (SELECT 1 WHERE false), "
                    : "work AS (" + WorkItemRepository.deleteWhere("doomed", p.linkedWork()) + "), ")
                    + "gone AS (" + (p.table().equals("work_item") ? WorkItemRepository.deleteWhere("doomed", "w.id = doomed.k")
                    : "DELETE FROM " + p.table() + " x USING doomed WHERE x." + p.key() + " = doomed.k RETURNING 1") + ") "
                    + "SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM work)";
            long[] batch;
            do {
                batch = run(c, sql, p, keep, batchSize);
                rows += batch[0];
                work += batch[1];
            } while (batch[0] == batchSize);
        }
        return new Outcome(p.table(), keep, rows, work);
    }

    private static long[] run(Connection c, String sql, Policy p, int keep, Integer limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 1; i <= p.cutoffs(); i++) {
                ps.setInt(i, keep);
            }
            if (limit != null) {
                ps.setInt(p.cutoffs() + 1, limit);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new long[] {rs.getLong(1), rs.getLong(2)};
            }
        } catch (SQLException e) {
            throw new SQLException(p.table() + ": " + e.getMessage(), e);
        }
    }
}
