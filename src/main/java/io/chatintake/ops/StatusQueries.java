package io.chatintake.ops;

import static io.chatintake.ops.StatusSnapshot.PAGE;

import io.chatintake.album.AlbumMetrics;
import io.chatintake.ops.StatusSnapshot.AlbumNeedingAPerson;
import io.chatintake.ops.StatusSnapshot.Albums;
import io.chatintake.ops.StatusSnapshot.AttachmentCounts;
import io.chatintake.ops.StatusSnapshot.Bot;
import io.chatintake.ops.StatusSnapshot.EffectToSettle;
import io.chatintake.ops.StatusSnapshot.ErasureDone;
import io.chatintake.ops.StatusSnapshot.ListPage;
import io.chatintake.ops.StatusSnapshot.ParkedItem;
import io.chatintake.ops.StatusSnapshot.Process;
import io.chatintake.ops.StatusSnapshot.RecentAction;
import io.chatintake.ops.StatusSnapshot.WebhookChannel;
import io.chatintake.ops.StatusSnapshot.WorkCount;
import io.chatintake.store.OldestTransaction;
import io.chatintake.store.OperatorPause;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The status page's figures read from the database into a {@link StatusSnapshot}. Every query is
 * bounded by an index or by what is unfinished (never by history). Nothing secret is read: no
 * token, URL, body or payload; the stored error and result texts it reads are redacted where they
 * are shown.
 */
final class StatusQueries {
    private static final String ERASURES = "SELECT erased_at, erased_by, subject, key, counts::text FROM erasure ORDER BY id DESC LIMIT "
            + PAGE;

    /** A stored event not derived yet counts as a pending item of its kind, due since it was stored (V41's partial index). */
    private static final String WORK = """
            SELECT kind, state, sum(n), min(due) FROM (
                SELECT kind, state, count(*) AS n,
                       min(next_attempt_at) FILTER (WHERE state IN ('pending', 'failed') AND next_attempt_at <= now()) AS due
                  FROM work_item WHERE state IN ('pending', 'failed', 'running', 'parked')
                 GROUP BY kind, state
                UNION ALL
                SELECT work_kind, 'pending', count(*), min(received_at) FROM webhook_event WHERE derived_at IS NULL GROUP BY work_kind) w
             GROUP BY kind, state ORDER BY kind, state""";

    private static final String PARKED = """
            SELECT id, kind, attempts, updated_at, last_error FROM work_item WHERE state = 'parked' ORDER BY id DESC LIMIT\s""" + PAGE
            + " OFFSET ?";

    /** Started, never recorded, and no live run of its item performing it now: a person must look at the other side. */
    private static final String EFFECTS_TO_SETTLE = """
            SELECT e.effect_key, e.work_item_id, e.started_at, e.result, count(*) OVER () FROM outbound_effect e
             WHERE e.state = 'started'
               AND NOT EXISTS (SELECT 1 FROM work_item w WHERE w.id = e.work_item_id AND w.state = 'running')
             ORDER BY e.started_at, e.effect_key LIMIT\s""" + PAGE + " OFFSET ?";

    private static final String RECENT_ACTIONS = """
            SELECT acted_at, acted_by, action, target, outcome, id, state = 'running' AND cancel_requested_at IS NULL
              FROM operator_action ORDER BY id DESC LIMIT\s""" + PAGE;

    private static final String OPEN_ALBUMS = "SELECT count(*), min(first_child_at) FROM album WHERE " + AlbumMetrics.OPEN;

    private static final String ALBUMS_NEEDING_A_PERSON = """
            SELECT album_key, decided_version, last_child_at, count(*) OVER () FROM album WHERE needs_person
             ORDER BY album_key LIMIT\s""" + PAGE;

    private static final String UNFINISHED_ATTACHMENTS = """
            SELECT status, count(*) FROM message_attachment WHERE status IN ('pending', 'failed') GROUP BY status""";

    private static final String RECENT_ATTACHMENTS = """
            SELECT status, count(*) FROM message_attachment WHERE created_at > now() - interval '24 hours' GROUP BY status""";

    private static final String BOTS = """
            SELECT c.bot_id, c.bot_name, c.next_offset, c.last_poll_at, c.last_batch_at, c.stored_count,
                   l.holder, l.expires_at > now() AS lease_active,
                   (SELECT count(*) FROM telegram_loss_window w WHERE w.bot_id = c.bot_id) AS loss_windows,
                   (SELECT max(w.to_time) FROM telegram_loss_window w WHERE w.bot_id = c.bot_id) AS last_loss_until,
                   (SELECT count(*) FROM telegram_gap g WHERE g.bot_id = c.bot_id) AS gaps,
                   (SELECT g.from_update_id || '..' || g.to_update_id FROM telegram_gap g WHERE g.bot_id = c.bot_id
                     ORDER BY g.detected_at DESC LIMIT 1) AS last_gap
              FROM telegram_checkpoint c LEFT JOIN telegram_poll_lease l ON l.bot_id = c.bot_id
             ORDER BY c.bot_name""";

    /** Each (channel, workspace) once, by skipping along the index, then its newest delivery: cost per channel, not per event. */
    private static final String WEBHOOK_CHANNELS = """
            WITH RECURSIVE pairs AS (
                (SELECT channel, workspace FROM webhook_event ORDER BY channel, workspace LIMIT 1)
                UNION ALL
                SELECT n.channel, n.workspace FROM pairs p, LATERAL (
                    SELECT channel, workspace FROM webhook_event
                     WHERE (channel, workspace) > (p.channel, p.workspace)
                     ORDER BY channel, workspace LIMIT 1) n)
            SELECT p.channel, p.workspace,
                   (SELECT max(e.last_received_at) FROM webhook_event e WHERE e.channel = p.channel AND e.workspace = p.workspace)
              FROM pairs p""";

    /** Through V33's partial index: only the unmapped rows are read. */
    private static final String UNMAPPED = """
            SELECT channel, workspace, count(*) FROM webhook_event WHERE parse_error = 'unmapped' GROUP BY channel, workspace""";

    /** Processes sharing the database, from their heartbeats (V11's runner_heartbeat): the live first. */
    private static final String PROCESSES = """
            SELECT process_id, host, pid, started_at, beat_at, beat_at < now() - make_interval(secs => ?) AS dead, held_back_since
              FROM runner_heartbeat ORDER BY beat_at DESC LIMIT\s""" + PAGE;

    private final Duration deadAfter;
    private final Duration openTransactionWarn;

    /**
     * @param deadAfter           the silence after which a process's heartbeat says it is dead
     * @param openTransactionWarn the age from which an open transaction is reported
     */
    StatusQueries(Duration deadAfter, Duration openTransactionWarn) {
        this.deadAfter = deadAfter;
        this.openTransactionWarn = openTransactionWarn;
    }

    /** @param parkedPage which page of the parked items, {@code effectsPage} of the effects to settle (0: the first) */
    StatusSnapshot read(Connection c, int parkedPage, int effectsPage) throws SQLException {
        Instant now = now(c);
        List<WorkCount> work = work(c);
        long parked = work.stream().filter(w -> w.state().equals("parked")).mapToLong(WorkCount::items).sum();
        return new StatusSnapshot(now, erasures(c), work,
                new ListPage<>(parkedPage, parked, parked > 0 ? parked(c, parkedPage) : List.of()),
                OperatorPause.list(c, OperatorPause.Subject.WORK_KIND), effects(c, effectsPage), actions(c), albums(c),
                new AttachmentCounts(counts(c, UNFINISHED_ATTACHMENTS), counts(c, RECENT_ATTACHMENTS)), bots(c),
                OperatorPause.list(c, OperatorPause.Subject.TELEGRAM_BOT), webhookChannels(c), processes(c),
                OldestTransaction.olderThan(c, openTransactionWarn));
    }

    private static List<ErasureDone> erasures(Connection c) throws SQLException {
        List<ErasureDone> erasures = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(ERASURES); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                erasures.add(new ErasureDone(instant(rs, 1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5)));
            }
        }
        return erasures;
    }

    private static List<WorkCount> work(Connection c) throws SQLException {
        List<WorkCount> work = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(WORK); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                work.add(new WorkCount(rs.getString(1), rs.getString(2), rs.getLong(3), instant(rs, 4)));
            }
        }
        return work;
    }

    private static List<ParkedItem> parked(Connection c, int page) throws SQLException {
        List<ParkedItem> parked = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(PARKED)) {
            ps.setInt(1, page * PAGE);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    parked.add(new ParkedItem(rs.getLong(1), rs.getString(2), rs.getInt(3), instant(rs, 4), rs.getString(5)));
                }
            }
        }
        return parked;
    }

    private static ListPage<EffectToSettle> effects(Connection c, int page) throws SQLException {
        List<EffectToSettle> effects = new ArrayList<>();
        long total = 0;
        try (PreparedStatement ps = c.prepareStatement(EFFECTS_TO_SETTLE)) {
            ps.setInt(1, page * PAGE);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    total = rs.getLong(5);
                    effects.add(new EffectToSettle(rs.getString(1), rs.getObject(2, Long.class), instant(rs, 3), rs.getString(4)));
                }
            }
        }
        return new ListPage<>(page, total, effects);
    }

    private static List<RecentAction> actions(Connection c) throws SQLException {
        List<RecentAction> actions = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(RECENT_ACTIONS); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                actions.add(new RecentAction(rs.getLong(6), instant(rs, 1), rs.getString(2), rs.getString(3), rs.getString(4),
                        rs.getString(5), rs.getBoolean(7)));
            }
        }
        return actions;
    }

    private static Albums albums(Connection c) throws SQLException {
        long open;
        Instant oldest;
        try (PreparedStatement ps = c.prepareStatement(OPEN_ALBUMS); ResultSet rs = ps.executeQuery()) {
            rs.next();
            open = rs.getLong(1);
            oldest = instant(rs, 2);
        }
        List<AlbumNeedingAPerson> needing = new ArrayList<>();
        long total = 0;
        try (PreparedStatement ps = c.prepareStatement(ALBUMS_NEEDING_A_PERSON); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                total = rs.getLong(4);
                needing.add(new AlbumNeedingAPerson(rs.getString(1), rs.getInt(2), instant(rs, 3)));
            }
        }
        return new Albums(open, oldest, new ListPage<>(0, total, needing));
    }

    private static List<Bot> bots(Connection c) throws SQLException {
        List<Bot> bots = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(BOTS); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                bots.add(new Bot(rs.getString("bot_name"), rs.getLong("bot_id"), rs.getLong("next_offset"), instant(rs, "last_poll_at"),
                        instant(rs, "last_batch_at"), rs.getLong("stored_count"), rs.getString("holder"), rs.getBoolean("lease_active"),
                        rs.getLong("loss_windows"), instant(rs, "last_loss_until"), rs.getLong("gaps"), rs.getString("last_gap")));
            }
        }
        return bots;
    }

    /** Every channel and workspace with a delivery stored, in the order of the index. */
    private static List<WebhookChannel> webhookChannels(Connection c) throws SQLException {
        Map<List<String>, Instant> lastDelivery = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(WEBHOOK_CHANNELS); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                lastDelivery.put(List.of(rs.getString(1), rs.getString(2)), instant(rs, 3));
            }
        }
        Map<List<String>, Long> unmapped = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(UNMAPPED); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                List<String> pair = List.of(rs.getString(1), rs.getString(2));
                unmapped.put(pair, rs.getLong(3));
                // Stored between the two reads: listed all the same, its newest delivery not seen yet.
                lastDelivery.putIfAbsent(pair, null);
            }
        }
        List<WebhookChannel> channels = new ArrayList<>();
        lastDelivery.forEach((pair, last) -> channels.add(new WebhookChannel(pair.get(0), pair.get(1), last, unmapped.getOrDefault(pair, 0L))));
        return channels;
    }

    private List<Process> processes(Connection c) throws SQLException {
        List<Process> processes = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(PROCESSES)) {
            ps.setDouble(1, deadAfter.toMillis() / 1000.0);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    processes.add(new Process(rs.getString(1), rs.getString(2), rs.getLong(3), instant(rs, 4), instant(rs, 5),
                            rs.getBoolean(6), instant(rs, 7)));
                }
            }
        }
        return processes;
    }

    private static Map<String, Long> counts(Connection c, String sql) throws SQLException {
        Map<String, Long> counts = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                counts.put(rs.getString(1), rs.getLong(2));
            }
        }
        return counts;
    }

    private static Instant now(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT now()"); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getTimestamp(1).toInstant();
        }
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    static Instant instant(ResultSet rs, int column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}
