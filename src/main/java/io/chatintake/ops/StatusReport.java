package io.chatintake.ops;

import io.chatintake.album.AlbumMetrics;

import io.chatintake.channel.telegram.TelegramBots;
import io.chatintake.config.Settings;
import io.chatintake.store.OldestTransaction;
import io.chatintake.store.OperatorPause;
import io.chatintake.support.Redactor;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The figures of the status page, read from the database with the SQL below, rendered as one
 * HTML page. Every query is bounded by an index or by what is unfinished (never by history), and
 * every value is HTML-escaped. Nothing secret is read: no token, URL, body or payload.
 */
final class StatusReport {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss 'UTC'").withZone(ZoneOffset.UTC);
    private static final int LIST_LIMIT = 20;

    private static final String BOTS = """
            SELECT c.bot_id, c.bot_name, c.next_offset, c.last_poll_at, c.last_batch_at, c.stored_count,
                   l.holder, l.expires_at > now() AS lease_active,
                   (SELECT count(*) FROM telegram_loss_window w WHERE w.bot_id = c.bot_id) AS loss_windows,
                   (SELECT max(w.to_time) FROM telegram_loss_window w WHERE w.bot_id = c.bot_id) AS last_loss_until,
                   (SELECT count(*) FROM telegram_gap g WHERE g.bot_id = c.bot_id) AS gaps,
                   (SELECT g.from_update_id || '..' || g.to_update_id FROM telegram_gap g WHERE g.bot_id = c.bot_id
                     ORDER BY g.detected_at DESC LIMIT 1) AS last_gap,
                   now() AS db_now
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

    private static final String WORK = """
            SELECT kind, state, count(*),
                   min(next_attempt_at) FILTER (WHERE state IN ('pending', 'failed') AND next_attempt_at <= now())
              FROM work_item WHERE state IN ('pending', 'failed', 'running', 'parked')
             GROUP BY kind, state ORDER BY kind, state""";

    private static final String PARKED = """
            SELECT id, kind, attempts, updated_at, last_error FROM work_item WHERE state = 'parked' ORDER BY id DESC LIMIT\s""" + LIST_LIMIT
            + " OFFSET ?";

    /** Started, never recorded, and no live run of its item performing it now: a person must look at the other side. */
    private static final String EFFECTS_TO_SETTLE = """
            SELECT e.effect_key, e.work_item_id, e.started_at, e.result, count(*) OVER () FROM outbound_effect e
             WHERE e.state = 'started'
               AND NOT EXISTS (SELECT 1 FROM work_item w WHERE w.id = e.work_item_id AND w.state = 'running')
             ORDER BY e.started_at, e.effect_key LIMIT\s""" + LIST_LIMIT + " OFFSET ?";

    private static final String RECENT_ACTIONS = """
            SELECT acted_at, acted_by, action, target, outcome, id, state = 'running' AND cancel_requested_at IS NULL
              FROM operator_action ORDER BY id DESC LIMIT\s""" + LIST_LIMIT;

    private static final String OPEN_ALBUMS = "SELECT count(*), min(first_child_at) FROM album WHERE " + AlbumMetrics.OPEN;

    private static final String ALBUMS_NEEDING_A_PERSON = """
            SELECT album_key, decided_version, last_child_at, count(*) OVER () FROM album WHERE needs_person
             ORDER BY album_key LIMIT\s""" + LIST_LIMIT;

    private static final String UNFINISHED_ATTACHMENTS = """
            SELECT status, count(*) FROM message_attachment WHERE status IN ('pending', 'failed') GROUP BY status""";

    private static final String RECENT_ATTACHMENTS = """
            SELECT status, count(*) FROM message_attachment WHERE created_at > now() - interval '24 hours' GROUP BY status""";

    /** Processes sharing the database, from their heartbeats (V11's runner_heartbeat): the live first. */
    private static final String PROCESSES = """
            SELECT process_id, host, pid, started_at, beat_at, beat_at < now() - make_interval(secs => ?) AS dead, held_back_since
              FROM runner_heartbeat ORDER BY beat_at DESC LIMIT\s""" + LIST_LIMIT;

    private static final Pattern URL_QUERY = Pattern.compile("(https?://[^\\s?#\"']+)\\?[^\\s\"']*");

    private static final List<String> ATTACHMENT_STATUSES = List.of("pending", "failed", "stored", "expired", "too_large");

    private final DataSource dataSource;
    private final Settings settings;
    private final Supplier<Set<String>> handledKinds;
    private final Duration refresh;
    private final String processName;
    private final Duration deadAfter;
    private final Duration openTransactionWarn;

    /**
     * Who looks: the session's CSRF token for the action forms (null: a bearer client, the page
     * without buttons), the name actions are recorded under (null until typed), the pages of the
     * long lists asked for (0: the first).
     */
    record Viewer(String csrf, String operator, int parkedPage, int effectsPage) {
        boolean mayAct() {
            return csrf != null;
        }
    }

    /**
     * @param handledKinds the kinds this process runs now (a started {@code work:<kind>} route each), offered for a
     *                     pause even before any item of theirs is stored
     */
    StatusReport(DataSource dataSource, Settings settings, Duration refresh, String processName, Supplier<Set<String>> handledKinds) {
        this.handledKinds = handledKinds;
        this.dataSource = dataSource;
        this.settings = settings;
        this.refresh = refresh;
        this.processName = processName;
        this.deadAfter = StatusHistory.deadAfter(settings);
        this.openTransactionWarn = Duration.ofSeconds(settings.getLong("chat-intake.db.open-transaction-warn-seconds"));
    }

    String render(Map<RecentRefusals.Refusal, Long> refusals, Viewer viewer) throws SQLException {
        Html body = new Html();
        Attention attention = new Attention();
        try (Connection c = dataSource.getConnection()) {
            c.setReadOnly(true);
            Instant now = dbNow(c);
            Map<String, OperatorPause.Paused> pausedBots = OperatorPause.list(c, OperatorPause.Subject.TELEGRAM_BOT);
            // The sections in the order of the nav: Messages, Work, Albums, Bots, Processes, then every graph.
            body.section("messages", "Messages");
            body.raw("<p><a id=\"messages-link\" href=\"status/messages\">Messages</a>: ")
                    .text("find any stored message and what became of it").raw("</p>");
            erasures(c, body, now, viewer);
            Set<String> kinds = work(c, body, attention, now, viewer);
            kinds.addAll(handledKinds.get());
            pauses(body, attention, now, viewer, OperatorPause.Subject.WORK_KIND, kinds, OperatorPause.list(c, OperatorPause.Subject.WORK_KIND));
            effects(c, body, attention, now, viewer);
            actions(c, body, now, viewer);
            albums(c, body, attention, now, viewer);
            attachments(c, body, attention);
            Set<String> bots = bots(c, body, attention, now, pausedBots);
            pauses(body, attention, now, viewer, OperatorPause.Subject.TELEGRAM_BOT, bots, pausedBots);
            channels(c, body, refusals, attention, now);
            processes(c, body, attention, now);
            StatusGraphs graphs = StatusGraphs.read(c, now);
            graphs.all(body);
            Html page = new Html();
            page.raw("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">")
                    .raw("<meta http-equiv=\"refresh\" content=\"" + refresh.toSeconds() + "\">")
                    .raw("<title>chat-intake status</title><style>" + STYLE + "</style></head><body>")
                    .raw("<h1>chat-intake status</h1><p class=\"meta\">")
                    .text("as of " + TIME.format(now) + " from process " + processName + "; this page reloads every "
                            + refresh.toSeconds() + " s")
                    .raw("</p>");
            operator(page, viewer);
            page.raw(NAV).raw("<section id=\"overview\"><h2>Overview</h2>");
            attention.render(page);
            graphs.overview(page);
            page.raw("</section>");
            return page.raw(body.toString()).raw("</body></html>").toString();
        }
    }

    /** @return the bots listed */
    private Set<String> bots(Connection c, Html html, Attention attention, Instant now, Map<String, OperatorPause.Paused> paused)
            throws SQLException {
        html.section("bots", "Telegram bots (polling)");
        Set<String> configured = configuredBots();
        Set<String> seen = new TreeSet<>();
        html.header("bot", "id", "state", "next offset", "last poll", "lag", "last update stored", "updates stored",
                "lease holder", "possible loss windows", "confirmed outside this store");
        try (PreparedStatement ps = c.prepareStatement(BOTS); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                String name = rs.getString("bot_name");
                seen.add(name);
                boolean polling = rs.getBoolean("lease_active");
                String holder = rs.getString("holder");
                Instant lastPoll = instant(rs, "last_poll_at");
                String state = paused.containsKey(name) ? "paused" : polling ? "polling"
                        : configured.contains(name) ? "no active poller" : "off (no token here)";
                if (!polling && configured.contains(name) && !paused.containsKey(name)) {
                    attention.count(Attention.BOTS_NOT_POLLING, 1);
                    attention.add("bot " + name + " has no active poller");
                }
                long lossWindows = rs.getLong("loss_windows");
                if (lossWindows > 0) {
                    attention.add("bot " + name + ": " + lossWindows + " possible loss window(s)");
                }
                long gaps = rs.getLong("gaps");
                String lastGap = rs.getString("last_gap");
                if (gaps > 0) {
                    attention.add("bot " + name + ": updates " + lastGap + " were confirmed outside this store"
                            + (gaps > 1 ? " (and " + (gaps - 1) + " earlier gap(s))" : ""));
                }
                html.row("bot-" + name,
                        name, rs.getString("bot_id"), state, rs.getString("next_offset"), when(lastPoll, now),
                        lastPoll == null ? "-" : seconds(Duration.between(lastPoll, now)),
                        when(instant(rs, "last_batch_at"), now), rs.getString("stored_count"),
                        holder == null ? "none" : holder + (polling ? "" : " (expired)"),
                        lossWindows == 0 ? "none" : lossWindows + ", the last until " + when(instant(rs, "last_loss_until"), now),
                        gaps == 0 ? "none" : gaps + ", the last: updates " + lastGap);
            }
        }
        for (String name : configured) {
            if (!seen.contains(name)) {
                html.row("bot-" + name, name, "-", "configured, not polled yet", "-", "never", "-", "never", "0", "none", "none", "none");
            }
        }
        html.endTable();
        seen.addAll(configured);
        return seen;
    }

    private void channels(Connection c, Html html, Map<RecentRefusals.Refusal, Long> refusals, Attention attention,
                          Instant now) throws SQLException {
        html.section("channels", "Channels");
        Map<String, Instant> lastDelivery = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement(WEBHOOK_CHANNELS); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                lastDelivery.put(rs.getString(1) + "/" + rs.getString(2), instant(rs, 3));
            }
        }
        Map<String, Long> unmapped = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement(UNMAPPED); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                unmapped.put(rs.getString(1) + "/" + rs.getString(2), rs.getLong(3));
                attention.count(Attention.UNMAPPED, rs.getLong(3));
            }
        }
        Set<String> channels = new TreeSet<>(lastDelivery.keySet());
        channels.add("unifyport/" + settings.value("unifyport.workspace"));
        refusals.keySet().forEach(r -> channels.add(r.channel() + "/" + r.workspace()));
        html.header("channel / workspace", "configured", "last delivery stored", "refused in the last hour (this process), by reason",
                "unmapped (verified, no known event; stored whole)");
        for (String key : channels) {
            String channel = key.substring(0, key.indexOf('/'));
            List<String> reasons = new ArrayList<>();
            refusals.forEach((r, count) -> {
                if ((r.channel() + "/" + r.workspace()).equals(key)) {
                    reasons.add(r.status() + " " + r.reason() + ": " + count);
                }
            });
            if (!reasons.isEmpty()) {
                attention.add(key + ": " + reasons.size() + " kind(s) of refused deliveries in the last hour");
            }
            html.row("channel-" + key.replace('/', '-'), key, webhookConfigured(channel), when(lastDelivery.get(key), now),
                    reasons.isEmpty() ? "none" : String.join("; ", reasons), Long.toString(unmapped.getOrDefault(key, 0L)));
        }
        for (String bot : configuredBots()) {
            html.row("channel-telegram-" + bot, "telegram bot " + bot, "on (token set)", "see Telegram bots", "-", "-");
        }
        html.endTable();
    }

    /** @return the kinds listed */
    private Set<String> work(Connection c, Html html, Attention attention, Instant now, Viewer viewer) throws SQLException {
        html.section("work", "Work (stored, not done)");
        html.header("kind", "state", "items", "oldest due since");
        Set<String> kinds = new TreeSet<>();
        long parked = 0;
        Map<String, Long> parkedByKind = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement(WORK); ResultSet rs = ps.executeQuery()) {
            boolean any = false;
            while (rs.next()) {
                any = true;
                String kind = rs.getString(1);
                String state = rs.getString(2);
                kinds.add(kind);
                if (state.equals("parked")) {
                    parked += rs.getLong(3);
                    parkedByKind.put(kind, rs.getLong(3));
                }
                Instant due = instant(rs, 4);
                html.row("work-" + kind + "-" + state, kind, state, rs.getString(3), due == null ? "-" : when(due, now));
            }
            if (!any) {
                html.row("work-none", "-", "nothing waiting", "0", "-");
            }
        }
        html.endTable();
        attention.count(Attention.PARKED, parked);
        if (parked > 0) {
            attention.add(parked + " work item(s) parked");
            int page = viewer.parkedPage();
            html.raw("<h3 id=\"parked\">").text("Parked, newest first (" + (page * LIST_LIMIT + 1) + "-"
                    + Math.min(parked, (page + 1L) * LIST_LIMIT) + " of " + parked + "): retry runs an item again from its first attempt")
                    .raw("</h3>");
            html.header("item", "kind", "attempts", "parked at", "last error (redacted)", "");
            try (PreparedStatement ps = c.prepareStatement(PARKED)) {
                ps.setInt(1, page * LIST_LIMIT);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        String id = rs.getString(1);
                        html.rowStart("parked-" + id).cells(id, rs.getString(2), rs.getString(3), when(instant(rs, 4), now),
                                redacted(rs.getString(5)));
                        html.raw("<td>");
                        button(html, viewer, StatusPage.Action.RETRY, "retry-" + id, "retry", "id", id);
                        html.raw("</td></tr>");
                    }
                }
            }
            html.endTable();
            pages(html, "parked-page", page, parked);
            if (viewer.mayAct()) {
                html.raw("<p>").text("Every parked item of a kind: ");
                parkedByKind.forEach((kind, count) ->
                        button(html, viewer, StatusPage.Action.RETRY_KIND, "retry-kind-" + kind, "retry all " + count + " " + kind, "kind", kind));
                html.raw("</p>");
            }
        }
        return kinds;
    }

    /**
     * What an operator paused, with since when and by whom, and a button to pause or resume each
     * bot or kind there is: {@code names} and the paused ones.
     */
    private static void pauses(Html html, Attention attention, Instant now, Viewer viewer, OperatorPause.Subject subject,
                               Set<String> names, Map<String, OperatorPause.Paused> paused) {
        boolean bots = subject == OperatorPause.Subject.TELEGRAM_BOT;
        html.section("pause-" + subject.word, bots ? "Pause polling (no getUpdates while paused; every process obeys within 2 s)"
                : "Pause work (no item of the kind is claimed while paused; new ones are stored; every process obeys within 2 s)");
        html.header(subject.word, "state", "paused since", "paused by", "");
        Set<String> all = new TreeSet<>(names);
        all.addAll(paused.keySet());
        for (String name : all) {
            OperatorPause.Paused pause = paused.get(name);
            if (pause != null) {
                attention.add(subject.label + " " + name + " paused by " + pause.by() + " since " + when(pause.since(), now)
                        + (bots ? ": Telegram keeps updates 24 h" : ""));
            }
            html.rowStart(subject.word + "-pause-" + name).cells(name, pause == null ? "not paused" : "paused",
                    pause == null ? "-" : when(pause.since(), now), pause == null ? "-" : pause.by());
            html.raw("<td>");
            button(html, viewer, StatusPage.Action.pausing(subject, pause == null), (pause == null ? "pause-" : "resume-") + subject.word
                    + "-" + name, pause == null ? "pause" : "resume", subject.word, name);
            html.raw("</td></tr>");
        }
        html.endTable();
    }

    private void effects(Connection c, Html html, Attention attention, Instant now, Viewer viewer) throws SQLException {
        int page = viewer.effectsPage();
        List<String[]> effects = new ArrayList<>();
        long total = 0;
        try (PreparedStatement ps = c.prepareStatement(EFFECTS_TO_SETTLE)) {
            ps.setInt(1, page * LIST_LIMIT);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    total = rs.getLong(5);
                    effects.add(new String[] {rs.getString(1), rs.getString(2), when(instant(rs, 3), now), redacted(rs.getString(4))});
                }
            }
        }
        html.section("effects", "Effects to settle");
        attention.count(Attention.EFFECTS, total);
        if (effects.isEmpty() && page == 0) {
            html.raw("<p>").text("None: every side effect that started was recorded.").raw("</p>");
            return;
        }
        attention.add(total + " effect(s) started and never recorded: look at the other side, then settle each");
        html.header("effect", "work item", "started", "last result (redacted)", "did it happen on the other side?");
        for (String[] effect : effects) {
            html.rowStart("effect-" + effect[0]).cells(effect);
            html.raw("<td>");
            button(html, viewer, StatusPage.Action.SETTLE_EFFECT, "performed-" + effect[0], "performed", "key", effect[0], "result", "performed");
            button(html, viewer, StatusPage.Action.SETTLE_EFFECT, "not-performed-" + effect[0], "not performed", "key", effect[0],
                    "result", "not-performed");
            html.raw("</td></tr>");
        }
        html.endTable();
        pages(html, "effects-page", page, total);
    }

    private void albums(Connection c, Html html, Attention attention, Instant now, Viewer viewer) throws SQLException {
        html.section("albums", "Albums");
        html.header("open albums", "oldest open since", "needing a person");
        long open;
        Instant oldest;
        try (PreparedStatement ps = c.prepareStatement(OPEN_ALBUMS); ResultSet rs = ps.executeQuery()) {
            rs.next();
            open = rs.getLong(1);
            oldest = instant(rs, 2);
        }
        List<String[]> needing = new ArrayList<>();
        long needingCount = 0;
        try (PreparedStatement ps = c.prepareStatement(ALBUMS_NEEDING_A_PERSON); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                needingCount = rs.getLong(4);
                needing.add(new String[] {rs.getString(1), rs.getString(2), when(instant(rs, 3), now)});
            }
        }
        html.row("albums", Long.toString(open), when(oldest, now), Long.toString(needingCount));
        attention.count(Attention.ALBUMS, needingCount);
        html.endTable();
        if (needingCount > 0) {
            attention.add(needingCount + " album(s) need a person (conflicting totals)");
            html.header("album needing a person", "decided version", "last child at", "");
            for (String[] album : needing) {
                html.rowStart("album-" + album[0]).cells(album);
                html.raw("<td>");
                button(html, viewer, StatusPage.Action.RESOLVE_ALBUM, "resolve-" + album[0], "resolved", "album", album[0]);
                html.raw("</td></tr>");
            }
            html.endTable();
        }
    }

    private void attachments(Connection c, Html html, Attention attention) throws SQLException {
        html.section("attachments", "Attachments by status");
        Map<String, Long> unfinished = counts(c, UNFINISHED_ATTACHMENTS);
        Map<String, Long> recent = counts(c, RECENT_ATTACHMENTS);
        html.header("status", "all unfinished", "received in the last 24 h");
        for (String status : ATTACHMENT_STATUSES) {
            boolean open = status.equals("pending") || status.equals("failed");
            html.row("attachments-" + status, status, open ? Long.toString(unfinished.getOrDefault(status, 0L)) : "-",
                    Long.toString(recent.getOrDefault(status, 0L)));
        }
        html.endTable();
        long failed = unfinished.getOrDefault("failed", 0L);
        if (failed > 0) {
            attention.add(failed + " attachment(s) failed");
        }
    }

    private void processes(Connection c, Html html, Attention attention, Instant now) throws SQLException {
        html.section("processes", "Processes sharing the database (heartbeats; dead after " + seconds(deadAfter) + " of silence)");
        html.header("process", "host", "pid", "started", "last heartbeat", "state");
        try (PreparedStatement ps = c.prepareStatement(PROCESSES)) {
            ps.setDouble(1, deadAfter.toMillis() / 1000.0);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    boolean dead = rs.getBoolean("dead");
                    Instant beat = instant(rs, 5);
                    if (dead) {
                        attention.add("process " + rs.getString(1) + " on " + rs.getString(2) + " is dead (no heartbeat since "
                                + TIME.format(beat.truncatedTo(ChronoUnit.SECONDS)) + ")");
                    }
                    String heldBack = heldBack(instant(rs, 7), now);
                    html.row("process-" + rs.getString(1), rs.getString(1), rs.getString(2), rs.getString(3), when(instant(rs, 4), now),
                            when(beat, now), dead ? "dead since " + TIME.format(beat.truncatedTo(ChronoUnit.SECONDS))
                                    : heldBack == null ? "alive" : "alive, " + heldBack);
                }
            }
        }
        html.endTable();
        Optional<OldestTransaction> oldest = OldestTransaction.olderThan(c, openTransactionWarn);
        if (oldest.isPresent()) {
            String said = "database: " + oldest.get().describe() + "; vacuum is held back until it ends (SELECT pg_terminate_backend("
                    + oldest.get().pid() + ") ends it)";
            html.raw("<p id=\"oldest-transaction\" class=\"warn\">").text(said).raw("</p>");
            attention.add(said);
        }
    }

    private void actions(Connection c, Html html, Instant now, Viewer viewer) throws SQLException {
        html.section("actions", "Recent actions from this page (newest first)");
        actOnManyForm(html, viewer);
        html.header("when", "by", "action", "on", "outcome", "");
        try (PreparedStatement ps = c.prepareStatement(RECENT_ACTIONS); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                String id = rs.getString(6);
                html.rowStart("action-" + id).cells(when(instant(rs, 1), now), rs.getString(2), rs.getString(3), rs.getString(4),
                        rs.getString(5)).raw("<td>");
                if (rs.getBoolean(7)) {
                    button(html, viewer, StatusPage.Action.CANCEL_ACTION, "cancel-action-" + id, "cancel", "id", id);
                }
                html.raw("</td></tr>");
            }
        }
        html.endTable();
    }

    /**
     * Erasure on request: the form (it counts first, changing nothing; the answer shows what would
     * go and the button that confirms) and the erasures recorded, counts only.
     */
    private static void erasures(Connection c, Html html, Instant now, Viewer viewer) throws SQLException {
        html.section("erase", "Erase on request");
        if (viewer.mayAct()) {
            html.raw("<form id=\"erase-form\" method=\"post\" action=\"status/" + StatusPage.Action.ERASE.path + "\">")
                    .raw("<input type=\"hidden\" name=\"csrf\" value=\"").text(viewer.csrf()).raw("\">")
                    .raw("<select id=\"erase-subject\" name=\"subject\"><option value=\"telegram\">Telegram chat BOT:CHAT_ID</option>")
                    .raw("<option value=\"conversation\">conversation CHANNEL:WORKSPACE:ACCOUNT:CONVERSATION</option>")
                    .raw("<option value=\"sender\">sender CHANNEL:WORKSPACE:ACCOUNT:SENDER</option></select> ")
                    .raw("<input id=\"erase-key\" name=\"key\" maxlength=\"400\" size=\"40\"> ")
                    .raw("<button id=\"erase-button\">count, then confirm</button></form>");
        }
        html.header("when", "by", "what", "key", "rows whose content went");
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT erased_at, erased_by, subject, key, counts::text FROM erasure ORDER BY id DESC LIMIT " + LIST_LIMIT);
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                html.row(null, when(instant(rs, 1), now), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5));
            }
        }
        html.endTable();
    }

    /** Act on many: a filter over work items and what to do to them; posting it shows the count to confirm first. */
    private static void actOnManyForm(Html html, Viewer viewer) {
        if (!viewer.mayAct()) {
            return;
        }
        html.raw("<form id=\"act-on-many\" method=\"post\" action=\"status/" + StatusPage.Action.ACT_ON_MANY.path + "\">")
                .raw("<input type=\"hidden\" name=\"csrf\" value=\"").text(viewer.csrf()).raw("\">")
                .raw("Act on many: <select id=\"act-do\" name=\"do\"><option value=\"retry\">retry (parked or failed)</option>")
                .raw("<option value=\"settle-performed\">settle effects: performed</option>")
                .raw("<option value=\"settle-not-performed\">settle effects: not performed</option></select> ")
                .raw("<label>kind <input id=\"act-kind\" name=\"kind\" size=\"14\"></label> ")
                .raw("<label>state <select id=\"act-state\" name=\"state\"><option value=\"\">any</option><option>parked</option><option>failed</option>")
                .raw("</select></label> <label>error contains <input id=\"act-error\" name=\"error\" size=\"18\"></label> ")
                .raw("<label>since <input id=\"act-since\" name=\"since\" size=\"20\" placeholder=\"2026-11-30T00:00:00Z\"></label> ")
                .raw("<label>until <input id=\"act-until\" name=\"until\" size=\"20\"></label> ")
                .raw("<button id=\"act-on-many-count\">count first</button></form>");
    }

    /** The confirm step of act on many: the count, and the button that runs it on what the filter then matches. */
    static String confirmActOnMany(String csrf, String action, WorkFilter filter, long count) {
        Html page = new Html();
        page.raw("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>chat-intake: confirm</title></head><body>")
                .raw("<h1>Confirm</h1><p id=\"act-count\">").text(count + " item(s) match " + filter + ": " + action + " them?").raw("</p>")
                .raw("<form id=\"act-confirm\" method=\"post\" action=\"" + StatusPage.Action.ACT_ON_MANY_RUN.path + "\">");
        String[][] fields = {{"csrf", csrf}, {"do", action}, {"kind", filter.kind()}, {"state", filter.state()},
            {"error", filter.errorContains()}, {"since", filter.since() == null ? null : filter.since().toString()},
            {"until", filter.until() == null ? null : filter.until().toString()}};
        for (String[] field : fields) {
            if (field[1] != null) {
                page.raw("<input type=\"hidden\" name=\"").text(field[0]).raw("\" value=\"").text(field[1]).raw("\">");
            }
        }
        return page.raw("<button id=\"act-confirm-button\">").text(action + " " + count + " item(s)").raw("</button></form>")
                .raw("<p><a id=\"act-back\" href=\"../" + StatusPage.PATH.substring(1) + "#actions\">back, nothing changed</a></p>")
                .raw("</body></html>").toString();
    }

    /** Whom actions are recorded for: the name, typed once and kept in a cookie. */
    private static void operator(Html page, Viewer viewer) {
        if (!viewer.mayAct()) {
            page.raw("<p class=\"meta\">").text("Read only: open " + StatusPage.PATH + "?token=... in a browser to act from this page.")
                    .raw("</p>");
            return;
        }
        page.raw("<form id=\"operator\" method=\"post\" action=\"status/" + StatusPage.Action.OPERATOR.path + "\">")
                .raw("<input type=\"hidden\" name=\"csrf\" value=\"").text(viewer.csrf()).raw("\">")
                .raw("<label>").text(viewer.operator() == null || viewer.operator().isEmpty() ? "Your name (recorded with every action): "
                        : "Actions are recorded as done by: ")
                .raw("<input id=\"operator-name\" name=\"name\" maxlength=\"80\" value=\"").text(viewer.operator()).raw("\"></label> ")
                .raw("<button id=\"operator-save\">save</button></form>")
                .raw("<form id=\"logout\" method=\"post\" action=\"status/" + StatusPage.Action.LOGOUT.path + "\">")
                .raw("<input type=\"hidden\" name=\"csrf\" value=\"").text(viewer.csrf()).raw("\">")
                .raw("<button id=\"logout-button\">sign out</button></form>");
    }

    /** One action's form: a button posting the session's CSRF token and the given fields; nothing for a read-only viewer. */
    private static void button(Html html, Viewer viewer, StatusPage.Action action, String id, String label, String... fields) {
        if (!viewer.mayAct()) {
            return;
        }
        html.raw("<form class=\"act\" method=\"post\" action=\"status/" + action.path + "\">")
                .raw("<input type=\"hidden\" name=\"csrf\" value=\"").text(viewer.csrf()).raw("\">");
        for (int i = 0; i + 1 < fields.length; i += 2) {
            html.raw("<input type=\"hidden\" name=\"").text(fields[i]).raw("\" value=\"").text(fields[i + 1]).raw("\">");
        }
        html.raw("<button id=\"").text(id).raw("\">").text(label).raw("</button></form>");
    }

    /** Links to the neighbouring pages of a long list. */
    private static void pages(Html html, String parameter, int page, long total) {
        if (page == 0 && total <= LIST_LIMIT) {
            return;
        }
        html.raw("<p>");
        if (page > 0) {
            html.raw("<a id=\"" + parameter + "-newer\" href=\"status?" + parameter + "=" + (page - 1) + "\">newer</a> ");
        }
        if ((page + 1L) * LIST_LIMIT < total) {
            html.raw("<a id=\"" + parameter + "-older\" href=\"status?" + parameter + "=" + (page + 1) + "\">older</a>");
        }
        html.raw("</p>");
    }

    /**
     * Stored error texts are redacted when written; this is the net under that: this process's
     * secret values, and the query of any URL (temporary media URLs carry their signature there).
     */
    private String redacted(String text) {
        if (text == null) {
            return "";
        }
        String result = Redactor.redact(text);
        for (String secret : settings.secretValues()) {
            if (secret.length() >= Redactor.MIN_LENGTH) {
                result = result.replace(secret, Redactor.MASK);
            }
        }
        return shorten(URL_QUERY.matcher(result).replaceAll("$1?" + Redactor.MASK));
    }

    /** Bots with a token in this process's configuration: those of telegram.bots, then any other with a token key. */
    private Set<String> configuredBots() {
        return TelegramBots.configured(settings::get, settings.withPrefix("telegram.bots.").keySet());
    }

    /** Whether a signed-webhook channel accepts deliveries here ({@code <channel>.signing-secrets}). */
    private String webhookConfigured(String channel) {
        if (settings.get(channel + ".signing-secrets").isPresent()) {
            return "on";
        }
        if (settings.get(channel + ".allow-unsigned").isPresent() && settings.getBoolean(channel + ".allow-unsigned")) {
            return "on, UNSIGNED (insecure)";
        }
        return "off (set " + Settings.envName(channel + ".signing-secrets") + ")";
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

    private static Instant dbNow(Connection c) throws SQLException {
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

    private static String when(Instant at, Instant now) {
        if (at == null) {
            return "never";
        }
        Duration age = Duration.between(at, now);
        return TIME.format(at.truncatedTo(ChronoUnit.SECONDS)) + " (" + (age.isNegative() ? "in " + seconds(age.negated()) : seconds(age) + " ago") + ")";
    }

    /**
     * What a live process's last heartbeat says of its handlers, e.g. "handling held back for
     * intake since 2026-12-07 12:01:03 UTC (40 s)"; null while they are not held back.
     */
    static String heldBack(Instant since, Instant now) {
        return since == null ? null : "handling held back for intake since " + TIME.format(since.truncatedTo(ChronoUnit.SECONDS)) + " ("
                + seconds(Duration.between(since, now)) + ")";
    }

    private static String seconds(Duration d) {
        long s = Math.max(0, d.toSeconds());
        return s < 120 ? s + " s" : s < 7200 ? s / 60 + " min" : s / 3600 + " h";
    }

    private static String shorten(String text) {
        if (text == null) {
            return "";
        }
        return text.length() <= 200 ? text : text.substring(0, 200) + "...";
    }

    /** What needs a person, shown first: a count of each kind of thing, then every item said in a line. */
    private static final class Attention {
        static final String PARKED = "parked items";
        static final String EFFECTS = "effects to settle";
        static final String ALBUMS = "albums needing a person";
        static final String BOTS_NOT_POLLING = "bots not polling";
        static final String UNMAPPED = "unmapped deliveries";

        private final Map<String, Long> counts = new LinkedHashMap<>();
        private final List<String> items = new ArrayList<>();

        Attention() {
            List.of(PARKED, EFFECTS, ALBUMS, BOTS_NOT_POLLING, UNMAPPED).forEach(kind -> counts.put(kind, 0L));
        }

        void add(String item) {
            items.add(item);
        }

        void count(String kind, long n) {
            counts.merge(kind, n, Long::sum);
        }

        void render(Html page) {
            page.raw("<table id=\"needs-a-person\"><tbody><tr>");
            counts.forEach((kind, n) -> page.raw("<td id=\"count-" + kind.replace(' ', '-') + "\" class=\"" + (n > 0 ? "count warn" : "count")
                    + "\"><b>" + n + "</b> ").text(kind).raw("</td>"));
            page.raw("</tr></tbody></table>");
            page.raw("<section id=\"attention\" class=\"" + (items.isEmpty() ? "ok" : "warn") + "\">");
            if (items.isEmpty()) {
                page.raw("<p>").text("Nothing needs attention.").raw("</p>");
            } else {
                page.raw("<h3>Needs attention</h3><ul>");
                items.forEach(i -> page.raw("<li>").text(i).raw("</li>"));
                page.raw("</ul>");
            }
            page.raw("</section>");
        }
    }

    /** A tiny HTML writer: every text goes through {@link #escape}. */
    static final class Html {
        private final StringBuilder out = new StringBuilder();
        private boolean inSection;

        Html raw(String markup) {
            out.append(markup);
            return this;
        }

        Html text(String text) {
            out.append(escape(text));
            return this;
        }

        void section(String id, String title) {
            if (inSection) {
                out.append("</section>");
            }
            inSection = true;
            out.append("<section id=\"").append(escape(id)).append("\"><h2>").append(escape(title)).append("</h2>");
        }

        void header(String... columns) {
            out.append("<table><thead><tr>");
            for (String c : columns) {
                out.append("<th>").append(escape(c)).append("</th>");
            }
            out.append("</tr></thead><tbody>");
        }

        /** @param id the row's element id (figures a reader or a test can point at), or null */
        void row(String id, String... cells) {
            out.append(id == null ? "<tr>" : "<tr id=\"" + escape(id) + "\">");
            cells(cells);
            out.append("</tr>");
        }

        /** A row whose last cells are written by hand (buttons): {@link #cells} then raw markup, then {@code </tr>}. */
        Html rowStart(String id) {
            out.append("<tr id=\"").append(escape(id)).append("\">");
            return this;
        }

        Html cells(String... cells) {
            for (String c : cells) {
                out.append("<td>").append(escape(c)).append("</td>");
            }
            return this;
        }

        void endTable() {
            out.append("</tbody></table>");
        }

        @Override
        public String toString() {
            return inSection ? out + "</section>" : out.toString();
        }

        static String escape(String text) {
            if (text == null) {
                return "";
            }
            StringBuilder s = new StringBuilder(text.length());
            for (char ch : text.toCharArray()) {
                switch (ch) {
                    case '&' -> s.append("&amp;");
                    case '<' -> s.append("&lt;");
                    case '>' -> s.append("&gt;");
                    case '"' -> s.append("&quot;");
                    case '\'' -> s.append("&#39;");
                    default -> s.append(ch);
                }
            }
            return s.toString();
        }
    }

    /** The sections a person jumps to; each anchor is a section's id. */
    private static final String NAV = "<nav id=\"nav\"><a href=\"#overview\">Overview</a><a href=\"#messages\">Messages</a>"
            + "<a href=\"#work\">Work</a><a href=\"#albums\">Albums</a><a href=\"#bots\">Bots</a>"
            + "<a href=\"#processes\">Processes</a><a href=\"#graphs\">All graphs</a></nav>";

    static final String STYLE = """
            body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
            h1{margin:0 0 .2em}h2{margin:1.2em 0 .4em;font-size:1.15em}h3{font-size:1em}
            .meta{color:#666;margin:0 0 1em}
            table{border-collapse:collapse;margin:.3em 0}
            th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
            th{background:#f3f3f3}
            #attention{padding:.2em 1em;border-radius:4px}
            #attention.ok{background:#e8f5e9}#attention.warn{background:#fff3e0;border:1px solid #f0a030}
            form.act{display:inline;margin-right:.3em}#operator{margin:.6em 0}
            svg{display:block}
            nav{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #ccc;z-index:1}
            nav a{margin-right:1.2em;font-weight:600}
            #needs-a-person td{font-size:1.05em}#needs-a-person td.warn{background:#fff3e0}
            #messages,#work,#albums,#bots,#processes,#graphs{border-top:2px solid #ddd;margin-top:1.5em}
            """;
}
