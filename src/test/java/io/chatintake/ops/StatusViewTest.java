package io.chatintake.ops;

import static io.chatintake.ops.StatusPageTest.cells;
import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
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
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * {@link StatusView} on hand-built snapshots, no database: each record lands in its row, what needs
 * a person is counted and said in the overview, stored texts are redacted and every value escaped,
 * and a read-only viewer gets no form.
 */
class StatusViewTest {
    private static final Instant NOW = Instant.parse("2026-12-07T12:00:00Z");
    private static final String BOT_TOKEN = "111:SECRET-view-main-bot-token";
    private static final Settings SETTINGS = Settings.of(Map.of(
            "telegram.bot-token", BOT_TOKEN,
            "telegram.bots.sales.token", "222:SECRET-view-sales-bot-token",
            "telegram.bots.idle.token", "333:SECRET-view-idle-bot-token",
            "unifyport.signing-secrets", "whsec-SECRET-view",
            "unifyport.workspace", "ws-here",
            "slack.allow-unsigned", "true"));
    private static final StatusView VIEW = new StatusView(SETTINGS, Duration.ofSeconds(10), "host-a:1:x", Duration.ofSeconds(30));
    private static final StatusView.Graphs GRAPHS = new StatusView.Graphs(html -> html.raw("<p id=\"overview-graphs-drawn\"></p>"),
            html -> html.section("graphs", "Over time (all processes)"));
    private static final Viewer ACTING = new Viewer("csrf-1", "carol", 0, 0);
    private static final Viewer READING = new Viewer(null, null, 0, 0);

    @Test
    void everyRecordIsShownInItsRowAndWhatNeedsAPersonIsCountedFirst() {
        Map<RecentRefusals.Refusal, Long> refusals = Map.of(new RecentRefusals.Refusal("unifyport", "ws-here", "401", "bad_signature"), 3L);

        String page = VIEW.render(everything(), GRAPHS, Set.of("handled-here"), refusals, ACTING);

        assertThat(page).startsWith("<!DOCTYPE html>").contains("<meta http-equiv=\"refresh\" content=\"10\">")
                .contains("as of 2026-12-07 12:00:00 UTC from process host-a:1:x; this page reloads every 10 s")
                .contains("<style>" + StatusView.STYLE + "</style>");
        String overview = page.substring(page.indexOf("<section id=\"overview\">"), page.indexOf("<section id=\"messages\">"));
        assertThat(overview)
                .contains("id=\"count-parked-items\" class=\"count warn\"><b>2</b> parked items")
                .contains("id=\"count-effects-to-settle\" class=\"count warn\"><b>1</b> effects to settle")
                .contains("id=\"count-albums-needing-a-person\" class=\"count warn\"><b>1</b> albums needing a person")
                .contains("id=\"count-bots-not-polling\" class=\"count warn\"><b>1</b> bots not polling")
                .contains("id=\"count-unmapped-deliveries\" class=\"count warn\"><b>4</b> unmapped deliveries")
                .contains("<section id=\"attention\" class=\"warn\">")
                .contains("<p id=\"overview-graphs-drawn\"></p>");
        assertThat(lines(overview)).containsExactly(
                "2 work item(s) parked",
                "work kind album-child paused by bob since 2026-12-07 11:58:30 UTC (90 s ago)",
                "1 effect(s) started and never recorded: look at the other side, then settle each",
                "1 album(s) need a person (conflicting totals)",
                "1 attachment(s) failed",
                "bot main: 1 possible loss window(s)",
                "bot main: updates 4990..4994 were confirmed outside this store (and 1 earlier gap(s))",
                "bot sales has no active poller",
                "telegram bot main paused by Alice &lt;on call&gt; since 2026-12-07 11:00:00 UTC (60 min ago): Telegram keeps updates 24 h",
                "unifyport/ws-here: 1 kind(s) of refused deliveries in the last hour",
                "process host-d:45:x on host-d is dead (no heartbeat since 2026-12-07 11:00:00 UTC)",
                "database: backend 4711 (application &#39;psql&#39;, idle in transaction) has held a transaction open for 12 min;"
                        + " vacuum is held back until it ends (SELECT pg_terminate_backend(4711) ends it)");

        assertThat(cells(page, "work-telegram-update-pending")).containsExactly("telegram-update", "pending", "7",
                "2026-12-07 11:50:00 UTC (10 min ago)");
        assertThat(cells(page, "work-unifyport-event-parked")).containsExactly("unifyport-event", "parked", "2", "-");
        assertThat(cells(page, "parked-42").subList(0, 4)).containsExactly("42", "unifyport-event", "8", "2026-12-07 11:00:00 UTC (60 min ago)");
        assertThat(page).contains("<button id=\"retry-42\">retry</button>")
                .contains("<button id=\"retry-kind-unifyport-event\">retry all 2 unifyport-event</button>");
        assertThat(cells(page, "effect-send:1").subList(0, 3)).containsExactly("send:1", "", "2026-12-07 10:00:00 UTC (2 h ago)");
        assertThat(page).contains("<button id=\"performed-send:1\">performed</button>")
                .contains("<button id=\"not-performed-send:1\">not performed</button>");
        assertThat(cells(page, "action-9").subList(0, 5)).containsExactly("2026-12-07 11:59:00 UTC (60 s ago)", "bob", "act-on-many",
                "parked", "running");
        assertThat(page).contains("<button id=\"cancel-action-9\">cancel</button>").doesNotContain("cancel-action-8");
        assertThat(cells(page, "albums")).containsExactly("3", "2026-12-07 11:55:00 UTC (5 min ago)", "1");
        assertThat(cells(page, "album-conflict").subList(0, 2)).containsExactly("conflict", "2");
        assertThat(cells(page, "attachments-pending")).containsExactly("pending", "4", "4");
        assertThat(cells(page, "attachments-stored")).containsExactly("stored", "-", "5");
        assertThat(cells(page, "attachments-failed")).containsExactly("failed", "1", "0");

        assertThat(cells(page, "bot-main")).containsExactly("main", "111", "paused", "5001", "2026-12-07 11:59:30 UTC (30 s ago)", "30 s",
                "never", "4321", "host-a:1:x", "1, the last until 2026-12-06 12:00:00 UTC (24 h ago)", "2, the last: updates 4990..4994");
        assertThat(cells(page, "bot-sales").subList(2, 3)).containsExactly("no active poller");
        assertThat(cells(page, "bot-sales").get(8)).isEqualTo("host-b:2:y (expired)");
        assertThat(cells(page, "bot-elsewhere").get(2)).isEqualTo("off (no token here)");
        assertThat(cells(page, "bot-idle")).containsExactly("idle", "-", "configured, not polled yet", "-", "never", "-", "never", "0",
                "none", "none", "none");
        assertThat(cells(page, "bot-pause-main").subList(0, 2)).containsExactly("main", "paused");
        assertThat(cells(page, "kind-pause-handled-here").subList(0, 2)).as("a kind handled here, none stored")
                .containsExactly("handled-here", "not paused");

        assertThat(cells(page, "channel-unifyport-ws-here")).containsExactly("unifyport/ws-here", "on",
                "2026-12-07 11:58:30 UTC (90 s ago)", "401 bad_signature: 3", "1");
        assertThat(cells(page, "channel-slack-ws-b").subList(1, 2)).containsExactly("on, UNSIGNED (insecure)");
        assertThat(cells(page, "channel-line-ws-c")).containsExactly("line/ws-c", "off (set LINE_SIGNING_SECRETS)", "never", "none", "3");
        assertThat(cells(page, "channel-telegram-main")).containsExactly("telegram bot main", "on (token set)", "see Telegram bots", "-", "-");

        assertThat(cells(page, "process-host-c:44:x").get(5))
                .isEqualTo("alive, handling held back for intake since 2026-12-07 11:59:20 UTC (40 s)");
        assertThat(cells(page, "process-host-d:45:x").get(5)).isEqualTo("dead since 2026-12-07 11:00:00 UTC");
        assertThat(page).contains("dead after 30 s of silence").contains("<p id=\"oldest-transaction\" class=\"warn\">");
        assertThat(page.indexOf("<section id=\"graphs\">")).as("every graph last").isGreaterThan(page.indexOf("<section id=\"processes\">"));
        assertThat(page).endsWith("</section></body></html>");
    }

    @Test
    void storedTextsAreRedactedWhereThePageShowsThemAndEveryValueIsEscaped() {
        String page = VIEW.render(everything(), GRAPHS, Set.of(), Map.of(), ACTING);

        assertThat(cells(page, "parked-42").get(4)).isEqualTo("handler said <b>no</b> for [redacted] at https://media.example/f.jpg?[redacted]");
        assertThat(cells(page, "effect-send:1").get(3)).isEqualTo("timed out; token [redacted]");
        assertThat(cells(page, "parked-41").get(4)).as("cut after the redaction").hasSize(StatusRedactor.MAX_LENGTH + 3).endsWith("...");
        assertThat(page).doesNotContain(BOT_TOKEN).doesNotContain("sig=abc").doesNotContain("<b>no</b>")
                .contains("handler said &lt;b&gt;no&lt;/b&gt;").contains("Alice &lt;on call&gt;");
    }

    @Test
    void aReadOnlyViewerGetsThePageWithoutAForm() {
        String acting = VIEW.render(everything(), GRAPHS, Set.of(), Map.of(), ACTING);
        String reading = VIEW.render(everything(), GRAPHS, Set.of(), Map.of(), READING);

        assertThat(acting).contains("<form id=\"operator\"").contains("value=\"carol\"").contains("<form id=\"erase-form\"")
                .contains("<form id=\"act-on-many\"").contains("name=\"csrf\" value=\"csrf-1\"");
        assertThat(reading).doesNotContain("<form").doesNotContain("<button").doesNotContain("csrf")
                .contains("Read only: open /status?token=... in a browser to act from this page.");
        assertThat(cells(reading, "parked-42").subList(0, 5)).isEqualTo(cells(acting, "parked-42").subList(0, 5));
    }

    @Test
    void nothingStoredIsSaidAsSuch() {
        StatusSnapshot empty = new StatusSnapshot(NOW, List.of(), List.of(), new ListPage<>(0, 0, List.of()), Map.of(),
                new ListPage<>(0, 0, List.of()), List.of(), new Albums(0, null, new ListPage<>(0, 0, List.of())),
                new AttachmentCounts(Map.of(), Map.of()), List.of(), Map.of(), List.of(), List.of(), Optional.empty());

        String page = new StatusView(Settings.of(Map.of("unifyport.workspace", "ws-here")), Duration.ofSeconds(10), "p", Duration.ofSeconds(30))
                .render(empty, GRAPHS, Set.of(), Map.of(), READING);

        assertThat(page).contains("<section id=\"attention\" class=\"ok\"><p>Nothing needs attention.</p></section>")
                .contains("None: every side effect that started was recorded.").doesNotContain("class=\"count warn\"")
                .doesNotContain("id=\"parked\"").doesNotContain("id=\"oldest-transaction\"");
        assertThat(cells(page, "work-none")).containsExactly("-", "nothing waiting", "0", "-");
        assertThat(cells(page, "albums")).containsExactly("0", "never", "0");
        assertThat(cells(page, "channel-unifyport-ws-here")).containsExactly("unifyport/ws-here", "off (set UNIFYPORT_SIGNING_SECRETS)",
                "never", "none", "0");
    }

    @Test
    void aLongListShowsItsPageAndLinksToItsNeighbours() {
        StatusSnapshot snapshot = everything();
        List<ParkedItem> second = LongStream.rangeClosed(1, StatusSnapshot.PAGE)
                .mapToObj(i -> new ParkedItem(100 - i, "k", 1, NOW, null)).toList();
        StatusSnapshot secondPage = new StatusSnapshot(NOW, List.of(), List.of(new WorkCount("k", "parked", 45, null)),
                new ListPage<>(1, 45, second), Map.of(), new ListPage<>(1, 0, List.of()), List.of(), snapshot.albums(),
                snapshot.attachments(), List.of(), Map.of(), List.of(), List.of(), Optional.empty());

        String page = VIEW.render(secondPage, GRAPHS, Set.of(), Map.of(), new Viewer("c", "carol", 1, 1));

        assertThat(page).contains("Parked, newest first (21-40 of 45)")
                .contains("<a id=\"parked-page-newer\" href=\"status?parked-page=0\">newer</a>")
                .contains("<a id=\"parked-page-older\" href=\"status?parked-page=2\">older</a>")
                .as("an empty page past the end still links back")
                .contains("<a id=\"effects-page-newer\" href=\"status?effects-page=0\">newer</a>")
                .doesNotContain("effects-page-older");
        assertThat(cells(page, "parked-99").get(4)).as("no text stored").isEmpty();
    }

    /** A snapshot with something in every section. */
    private static StatusSnapshot everything() {
        String longError = "x".repeat(StatusRedactor.MAX_LENGTH + 50);
        Map<String, OperatorPause.Paused> pausedBots = Map.of("main", new OperatorPause.Paused("main", NOW.minusSeconds(3600), "Alice <on call>"));
        Map<String, OperatorPause.Paused> pausedKinds = Map.of("album-child", new OperatorPause.Paused("album-child", NOW.minusSeconds(90), "bob"));
        return new StatusSnapshot(NOW,
                List.of(new ErasureDone(NOW.minusSeconds(600), "carol", "telegram", "111:42", "{\"channel_message\": 2}")),
                List.of(new WorkCount("telegram-update", "pending", 7, NOW.minusSeconds(600)),
                        new WorkCount("unifyport-event", "parked", 2, null)),
                new ListPage<>(0, 2, List.of(
                        new ParkedItem(42, "unifyport-event", 8, NOW.minusSeconds(3600),
                                "handler said <b>no</b> for " + BOT_TOKEN + " at https://media.example/f.jpg?sig=abc"),
                        new ParkedItem(41, "unifyport-event", 8, NOW.minusSeconds(3600), longError))),
                pausedKinds,
                new ListPage<>(0, 1, List.of(new EffectToSettle("send:1", null, NOW.minusSeconds(7200), "timed out; token " + BOT_TOKEN))),
                List.of(new RecentAction(9, NOW.minusSeconds(60), "bob", "act-on-many", "parked", "running", true),
                        new RecentAction(8, NOW.minusSeconds(120), "alice", "retry", "work item 1", "retried", false)),
                new Albums(3, NOW.minusSeconds(300), new ListPage<>(0, 1, List.of(new AlbumNeedingAPerson("conflict", 2, NOW.minusSeconds(60))))),
                new AttachmentCounts(Map.of("pending", 4L, "failed", 1L), Map.of("pending", 4L, "stored", 5L)),
                List.of(new Bot("main", 111, 5001, NOW.minusSeconds(30), null, 4321, "host-a:1:x", true, 1, NOW.minusSeconds(86_400), 2,
                                "4990..4994"),
                        new Bot("sales", 222, 7, null, null, 0, "host-b:2:y", false, 0, null, 0, null),
                        new Bot("elsewhere", 333, 1, null, null, 0, null, false, 0, null, 0, null)),
                pausedBots,
                List.of(new WebhookChannel("unifyport", "ws-here", NOW.minusSeconds(90), 1),
                        new WebhookChannel("slack", "ws-b", NOW.minusSeconds(86_400), 0),
                        new WebhookChannel("line", "ws-c", null, 3)),
                List.of(new Process("host-c:44:x", "host-c", 44, NOW.minusSeconds(7200), NOW, false, NOW.minusSeconds(40)),
                        new Process("host-d:45:x", "host-d", 45, NOW.minusSeconds(7200), NOW.minusSeconds(3600), true, null)),
                Optional.of(new OldestTransaction(4711, "psql", "idle in transaction", Duration.ofMinutes(12))));
    }

    /** The lines of the attention list, as written (escaped). */
    private static List<String> lines(String overview) {
        String list = overview.substring(overview.indexOf("<ul>") + 4, overview.indexOf("</ul>"));
        return List.of(list.substring(4, list.length() - 5).split("</li><li>"));
    }
}
