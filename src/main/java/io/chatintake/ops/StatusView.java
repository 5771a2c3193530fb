package io.chatintake.ops;

import static io.chatintake.ops.StatusSnapshot.PAGE;

import io.chatintake.channel.telegram.TelegramBots;
import io.chatintake.config.Settings;
import io.chatintake.ops.Html;
import io.chatintake.ops.StatusReport.Viewer;
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
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * The status page drawn from a {@link StatusSnapshot}: one HTML page, the overview (what needs a
 * person, then the graphs) first, then the sections in the order of the nav. Every value is
 * HTML-escaped; stored error and result texts are redacted ({@link StatusRedactor}). No SQL: what
 * it shows besides the snapshot is this process's own (its configuration, the kinds it handles,
 * the deliveries it refused).
 */
final class StatusView {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss 'UTC'").withZone(ZoneOffset.UTC);
    private static final List<String> ATTACHMENT_STATUSES = List.of("pending", "failed", "stored", "expired", "too_large");

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

    /** What draws the graphs ({@link StatusGraphs} as read with the snapshot): the overview's, and the section of all of them. */
    record Graphs(Consumer<Html> overview, Consumer<Html> all) {
    }

    private final Settings settings;
    private final StatusRedactor redactor;
    private final Duration refresh;
    private final String processName;
    private final Duration deadAfter;

    /**
     * @param settings  this process's configuration: which bots and channels are configured here, and its secrets to redact
     * @param deadAfter the silence after which a process's heartbeat says it is dead, as the snapshot was read with
     */
    StatusView(Settings settings, Duration refresh, String processName, Duration deadAfter) {
        this.settings = settings;
        this.redactor = new StatusRedactor(settings);
        this.refresh = refresh;
        this.processName = processName;
        this.deadAfter = deadAfter;
    }

    /**
     * @param handledKinds the kinds this process runs now, offered for a pause even before any item of theirs is stored
     * @param refusals     the deliveries this process refused in the last hour
     */
    String render(StatusSnapshot snapshot, Graphs graphs, Set<String> handledKinds, Map<RecentRefusals.Refusal, Long> refusals,
                  Viewer viewer) {
        Instant now = snapshot.now();
        Html body = new Html();
        StatusAttention attention = new StatusAttention();
        // The sections in the order of the nav: Messages, Work, Albums, Bots, Processes, then every graph.
        body.section("messages", "Messages");
        body.raw("<p><a id=\"messages-link\" href=\"status/messages\">Messages</a>: ")
                .text("find any stored message and what became of it").raw("</p>");
        erasures(body, snapshot.erasures(), now, viewer);
        Set<String> kinds = work(body, attention, snapshot.work(), snapshot.parked(), now, viewer);
        kinds.addAll(handledKinds);
        pauses(body, attention, now, viewer, OperatorPause.Subject.WORK_KIND, kinds, snapshot.pausedKinds());
        effects(body, attention, snapshot.effects(), now, viewer);
        actions(body, snapshot.actions(), now, viewer);
        albums(body, attention, snapshot.albums(), now, viewer);
        attachments(body, attention, snapshot.attachments());
        Set<String> bots = bots(body, attention, snapshot.bots(), now, snapshot.pausedBots());
        pauses(body, attention, now, viewer, OperatorPause.Subject.TELEGRAM_BOT, bots, snapshot.pausedBots());
        channels(body, attention, snapshot.webhookChannels(), refusals, now);
        processes(body, attention, snapshot.processes(), snapshot.oldestTransaction().orElse(null), now);
        graphs.all().accept(body);
        Html page = new Html();
        page.raw("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">")
                .raw("<meta http-equiv=\"refresh\" content=\"" + refresh.toSeconds() + "\">")
                .raw("<title>chat-intake status</title><style>" + STYLE + "</style></head><body>")
                .raw("<h1>chat-intake status</h1><p class=\"meta\">")
                .text("as of " + TIME.format(now) + " from process " + processName + "; this page reloads every "
                        + refresh.toSeconds() + " s")
                .raw("</p>");
        StatusForms.operator(page, viewer);
        page.raw(NAV).raw("<section id=\"overview\"><h2>Overview</h2>");
        attention.render(page);
        graphs.overview().accept(page);
        page.raw("</section>");
        return page.raw(body.toString()).raw("</body></html>").toString();
    }

    /** The erasure form and the erasures recorded, counts only. */
    private static void erasures(Html html, List<ErasureDone> erasures, Instant now, Viewer viewer) {
        html.section("erase", "Erase on request");
        StatusForms.erase(html, viewer);
        html.header("when", "by", "what", "key", "rows whose content went");
        for (ErasureDone erasure : erasures) {
            html.row(null, when(erasure.erasedAt(), now), erasure.erasedBy(), erasure.subject(), erasure.key(), erasure.counts());
        }
        html.endTable();
    }

    /** @return the kinds listed */
    private Set<String> work(Html html, StatusAttention attention, List<WorkCount> work, ListPage<ParkedItem> parked, Instant now,
                             Viewer viewer) {
        html.section("work", "Work (stored, not done)");
        html.header("kind", "state", "items", "oldest due since");
        Set<String> kinds = new TreeSet<>();
        Map<String, Long> parkedByKind = new TreeMap<>();
        for (WorkCount count : work) {
            kinds.add(count.kind());
            if (count.state().equals("parked")) {
                parkedByKind.put(count.kind(), count.items());
            }
            html.row("work-" + count.kind() + "-" + count.state(), count.kind(), count.state(), Long.toString(count.items()),
                    count.oldestDue() == null ? "-" : when(count.oldestDue(), now));
        }
        if (work.isEmpty()) {
            html.row("work-none", "-", "nothing waiting", "0", "-");
        }
        html.endTable();
        long total = parked.total();
        attention.count(StatusAttention.PARKED, total);
        if (total > 0) {
            attention.add(total + " work item(s) parked");
            int page = parked.page();
            html.raw("<h3 id=\"parked\">").text("Parked, newest first (" + (page * PAGE + 1) + "-"
                    + Math.min(total, (page + 1L) * PAGE) + " of " + total + "): retry runs an item again from its first attempt")
                    .raw("</h3>");
            html.header("item", "kind", "attempts", "parked at", "last error (redacted)", "");
            for (ParkedItem item : parked.rows()) {
                String id = Long.toString(item.id());
                html.rowStart("parked-" + id).cells(id, item.kind(), Integer.toString(item.attempts()), when(item.parkedAt(), now),
                        redactor.redact(item.lastError()));
                html.raw("<td>");
                StatusForms.button(html, viewer, StatusPage.Action.RETRY, "retry-" + id, "retry", "id", id);
                html.raw("</td></tr>");
            }
            html.endTable();
            pages(html, "parked-page", page, total);
            if (viewer.mayAct()) {
                html.raw("<p>").text("Every parked item of a kind: ");
                parkedByKind.forEach((kind, count) -> StatusForms.button(html, viewer, StatusPage.Action.RETRY_KIND, "retry-kind-" + kind,
                        "retry all " + count + " " + kind, "kind", kind));
                html.raw("</p>");
            }
        }
        return kinds;
    }

    /**
     * What an operator paused, with since when and by whom, and a button to pause or resume each
     * bot or kind there is: {@code names} and the paused ones.
     */
    private static void pauses(Html html, StatusAttention attention, Instant now, Viewer viewer, OperatorPause.Subject subject,
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
            StatusForms.button(html, viewer, StatusPage.Action.pausing(subject, pause == null), (pause == null ? "pause-" : "resume-")
                    + subject.word + "-" + name, pause == null ? "pause" : "resume", subject.word, name);
            html.raw("</td></tr>");
        }
        html.endTable();
    }

    private void effects(Html html, StatusAttention attention, ListPage<EffectToSettle> effects, Instant now, Viewer viewer) {
        html.section("effects", "Effects to settle");
        attention.count(StatusAttention.EFFECTS, effects.total());
        if (effects.rows().isEmpty() && effects.page() == 0) {
            html.raw("<p>").text("None: every side effect that started was recorded.").raw("</p>");
            return;
        }
        attention.add(effects.total() + " effect(s) started and never recorded: look at the other side, then settle each");
        html.header("effect", "work item", "started", "last result (redacted)", "did it happen on the other side?");
        for (EffectToSettle effect : effects.rows()) {
            String key = effect.key();
            html.rowStart("effect-" + key).cells(key, effect.workItemId() == null ? null : effect.workItemId().toString(),
                    when(effect.startedAt(), now), redactor.redact(effect.result()));
            html.raw("<td>");
            StatusForms.button(html, viewer, StatusPage.Action.SETTLE_EFFECT, "performed-" + key, "performed", "key", key,
                    "result", "performed");
            StatusForms.button(html, viewer, StatusPage.Action.SETTLE_EFFECT, "not-performed-" + key, "not performed", "key", key,
                    "result", "not-performed");
            html.raw("</td></tr>");
        }
        html.endTable();
        pages(html, "effects-page", effects.page(), effects.total());
    }

    private static void actions(Html html, List<RecentAction> actions, Instant now, Viewer viewer) {
        html.section("actions", "Recent actions from this page (newest first)");
        StatusForms.actOnMany(html, viewer);
        html.header("when", "by", "action", "on", "outcome", "");
        for (RecentAction action : actions) {
            String id = Long.toString(action.id());
            html.rowStart("action-" + id).cells(when(action.actedAt(), now), action.actedBy(), action.action(), action.target(),
                    action.outcome()).raw("<td>");
            if (action.cancellable()) {
                StatusForms.button(html, viewer, StatusPage.Action.CANCEL_ACTION, "cancel-action-" + id, "cancel", "id", id);
            }
            html.raw("</td></tr>");
        }
        html.endTable();
    }

    private static void albums(Html html, StatusAttention attention, Albums albums, Instant now, Viewer viewer) {
        html.section("albums", "Albums");
        html.header("open albums", "oldest open since", "needing a person");
        long needing = albums.needingAPerson().total();
        html.row("albums", Long.toString(albums.open()), when(albums.oldestOpenSince(), now), Long.toString(needing));
        attention.count(StatusAttention.ALBUMS, needing);
        html.endTable();
        if (needing > 0) {
            attention.add(needing + " album(s) need a person (conflicting totals)");
            html.header("album needing a person", "decided version", "last child at", "");
            for (AlbumNeedingAPerson album : albums.needingAPerson().rows()) {
                html.rowStart("album-" + album.key()).cells(album.key(), Integer.toString(album.decidedVersion()),
                        when(album.lastChildAt(), now));
                html.raw("<td>");
                StatusForms.button(html, viewer, StatusPage.Action.RESOLVE_ALBUM, "resolve-" + album.key(), "resolved", "album", album.key());
                html.raw("</td></tr>");
            }
            html.endTable();
        }
    }

    private static void attachments(Html html, StatusAttention attention, AttachmentCounts counts) {
        html.section("attachments", "Attachments by status");
        html.header("status", "all unfinished", "received in the last 24 h");
        for (String status : ATTACHMENT_STATUSES) {
            boolean open = status.equals("pending") || status.equals("failed");
            html.row("attachments-" + status, status, open ? Long.toString(counts.unfinished().getOrDefault(status, 0L)) : "-",
                    Long.toString(counts.receivedLastDay().getOrDefault(status, 0L)));
        }
        html.endTable();
        long failed = counts.unfinished().getOrDefault("failed", 0L);
        if (failed > 0) {
            attention.add(failed + " attachment(s) failed");
        }
    }

    /** @return the bots listed */
    private Set<String> bots(Html html, StatusAttention attention, List<Bot> rows, Instant now, Map<String, OperatorPause.Paused> paused) {
        html.section("bots", "Telegram bots (polling)");
        Set<String> configured = configuredBots();
        Set<String> seen = new TreeSet<>();
        html.header("bot", "id", "state", "next offset", "last poll", "lag", "last update stored", "updates stored",
                "lease holder", "possible loss windows", "confirmed outside this store");
        for (Bot bot : rows) {
            String name = bot.name();
            seen.add(name);
            boolean polling = bot.leaseActive();
            String state = paused.containsKey(name) ? "paused" : polling ? "polling"
                    : configured.contains(name) ? "no active poller" : "off (no token here)";
            if (!polling && configured.contains(name) && !paused.containsKey(name)) {
                attention.count(StatusAttention.BOTS_NOT_POLLING, 1);
                attention.add("bot " + name + " has no active poller");
            }
            if (bot.lossWindows() > 0) {
                attention.add("bot " + name + ": " + bot.lossWindows() + " possible loss window(s)");
            }
            long gaps = bot.gaps();
            if (gaps > 0) {
                attention.add("bot " + name + ": updates " + bot.lastGap() + " were confirmed outside this store"
                        + (gaps > 1 ? " (and " + (gaps - 1) + " earlier gap(s))" : ""));
            }
            html.row("bot-" + name,
                    name, Long.toString(bot.id()), state, Long.toString(bot.nextOffset()), when(bot.lastPoll(), now),
                    bot.lastPoll() == null ? "-" : seconds(Duration.between(bot.lastPoll(), now)),
                    when(bot.lastBatch(), now), Long.toString(bot.storedCount()),
                    bot.holder() == null ? "none" : bot.holder() + (polling ? "" : " (expired)"),
                    bot.lossWindows() == 0 ? "none" : bot.lossWindows() + ", the last until " + when(bot.lastLossUntil(), now),
                    gaps == 0 ? "none" : gaps + ", the last: updates " + bot.lastGap());
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

    private void channels(Html html, StatusAttention attention, List<WebhookChannel> webhooks, Map<RecentRefusals.Refusal, Long> refusals,
                          Instant now) {
        html.section("channels", "Channels");
        Map<String, Instant> lastDelivery = new TreeMap<>();
        Map<String, Long> unmapped = new TreeMap<>();
        for (WebhookChannel webhook : webhooks) {
            String key = webhook.channel() + "/" + webhook.workspace();
            lastDelivery.put(key, webhook.lastDelivery());
            if (webhook.unmapped() > 0) {
                unmapped.put(key, webhook.unmapped());
                attention.count(StatusAttention.UNMAPPED, webhook.unmapped());
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

    /** @param oldestTransaction a transaction open too long, or null */
    private void processes(Html html, StatusAttention attention, List<Process> processes, OldestTransaction oldestTransaction, Instant now) {
        html.section("processes", "Processes sharing the database (heartbeats; dead after " + seconds(deadAfter) + " of silence)");
        html.header("process", "host", "pid", "started", "last heartbeat", "state");
        for (Process process : processes) {
            Instant beat = process.beatAt();
            if (process.dead()) {
                attention.add("process " + process.id() + " on " + process.host() + " is dead (no heartbeat since "
                        + TIME.format(beat.truncatedTo(ChronoUnit.SECONDS)) + ")");
            }
            String heldBack = heldBack(process.heldBackSince(), now);
            html.row("process-" + process.id(), process.id(), process.host(), Long.toString(process.pid()), when(process.startedAt(), now),
                    when(beat, now), process.dead() ? "dead since " + TIME.format(beat.truncatedTo(ChronoUnit.SECONDS))
                            : heldBack == null ? "alive" : "alive, " + heldBack);
        }
        html.endTable();
        if (oldestTransaction != null) {
            String said = "database: " + oldestTransaction.describe() + "; vacuum is held back until it ends (SELECT pg_terminate_backend("
                    + oldestTransaction.pid() + ") ends it)";
            html.raw("<p id=\"oldest-transaction\" class=\"warn\">").text(said).raw("</p>");
            attention.add(said);
        }
    }

    /** Links to the neighbouring pages of a long list. */
    private static void pages(Html html, String parameter, int page, long total) {
        if (page == 0 && total <= PAGE) {
            return;
        }
        html.raw("<p>");
        if (page > 0) {
            html.raw("<a id=\"" + parameter + "-newer\" href=\"status?" + parameter + "=" + (page - 1) + "\">newer</a> ");
        }
        if ((page + 1L) * PAGE < total) {
            html.raw("<a id=\"" + parameter + "-older\" href=\"status?" + parameter + "=" + (page + 1) + "\">older</a>");
        }
        html.raw("</p>");
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
}
