package io.chatintake.ops;

import io.chatintake.ops.Html;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The HTML of {@code GET /status/messages} (the search form and a page of results) and
 * {@code GET /status/messages/<key>} (a message's timeline), in the status page's style. Every
 * value is escaped by {@link Html}; the data comes from {@link MessageSearch} and {@link MessageTimeline}.
 */
final class MessagesView {
    /** The form's fields, in order, with their labels; the names are the query parameters. */
    static final Map<String, String> FIELDS = fields();

    private MessagesView() {
    }

    private static Map<String, String> fields() {
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("channel", "channel");
        fields.put("bot", "bot");
        fields.put("conversation", "conversation");
        fields.put("sender", "sender");
        fields.put("text", "text contains");
        fields.put("event", "event or update id");
        fields.put("since", "since");
        fields.put("until", "until");
        return fields;
    }

    /** @param values what the form was filled with (shown again); {@code error} a line about a value that could not be used, or null */
    static String search(Map<String, String> values, MessageSearch.Page page, String error) {
        Html html = start("messages", "..");
        html.raw("<form id=\"search\" method=\"get\" action=\"messages\">");
        FIELDS.forEach((name, label) -> html.raw("<label>").text(label).raw(" <input id=\"find-" + name + "\" name=\"" + name
                + "\" size=\"14\" value=\"").text(values.getOrDefault(name, "")).raw("\"></label> "));
        html.raw("<button id=\"find-button\">find</button></form><p class=\"meta\">")
                .text("since and until: an ISO time (2026-01-31T10:02:00Z) or an age (15m, 2h, 3d); newest first.")
                .raw("</p>");
        if (error != null) {
            html.raw("<p id=\"find-error\" class=\"warn\">").text(error).raw("</p>");
        }
        if (page != null) {
            html.raw("<section id=\"results\">");
            if (page.rows().isEmpty()) {
                html.raw("<p id=\"no-results\">").text("No stored message matches.").raw("</p>");
            } else {
                html.header("received", "channel", "bot or workspace", "conversation", "sender", "event or update", "type", "text");
                for (MessageSearch.Found f : page.rows()) {
                    html.rowStart("message-" + f.key()).raw("<td><a href=\"messages/" + f.key() + "\">").text(f.receivedAt().toString())
                            .raw("</a></td>").cells(f.channel(), f.source(), f.conversation(), f.sender(), f.event(), f.type(),
                                    shorten(f.text())).raw("</tr>");
                }
                html.endTable();
            }
            if (page.next() != null) {
                StringBuilder query = new StringBuilder();
                values.forEach((name, value) -> {
                    if (!value.isEmpty() && !name.equals("after")) {
                        query.append(name).append('=').append(encode(value)).append('&');
                    }
                });
                html.raw("<a id=\"older\" href=\"messages?" + Html.escape(query + "after=" + encode(page.next())) + "\">older</a>");
            }
            html.raw("</section>");
        }
        return end(html);
    }

    static String timeline(MessageTimeline.Timeline t) {
        MessageSearch.Found m = t.message();
        Html html = start("message " + m.key(), "../..");
        html.raw("<p><a id=\"back\" href=\"../messages\">search</a></p>");
        html.section("received", "Received and stored");
        html.header("received", "by process", "channel", "bot or workspace", "conversation", "sender", "event or update", "type",
                "deliveries", "last delivery");
        html.row("stored", m.receivedAt().toString(), t.storedBy(), m.channel(), m.source(), m.conversation(), m.sender(), m.event(),
                m.type(), Integer.toString(t.deliveries()), t.lastReceivedAt().toString());
        html.endTable();
        if (m.text() != null) {
            html.raw("<p id=\"text\">").text(m.text()).raw("</p>");
        }
        html.section("album", "Album");
        if (t.album() == null) {
            html.raw("<p>").text("Not part of an album.").raw("</p>");
        } else {
            MessageTimeline.Album a = t.album();
            html.raw("<p>").text(a.albumKey() + " (album " + a.albumId() + "), children from " + a.firstChildAt() + " to "
                    + a.lastChildAt() + ", decided version " + a.decidedVersion() + (a.needsPerson() ? ", needs a person" : "")).raw("</p>");
            html.header("version", "decision", "children", "completed by", "decided at");
            t.decisions().forEach(d -> html.row("decision-" + d.version(), Integer.toString(d.version()), d.kind(),
                    Integer.toString(d.children()), d.completedBy(), d.decidedAt().toString()));
            html.endTable();
        }
        html.section("work", "Work");
        if (t.items().isEmpty()) {
            html.raw("<p>").text("No work item (none yet, or removed by retention).").raw("</p>");
        } else {
            html.header("item", "kind", "state", "attempts", "last error", "created", "done");
            t.items().forEach(i -> html.row("item-" + i.id(), Long.toString(i.id()), i.kind(), i.state(), Integer.toString(i.attempts()),
                    shorten(i.lastError()), i.createdAt().toString(), i.doneAt() == null ? "" : i.doneAt().toString()));
            html.endTable();
            html.raw("<h3>").text("Runs").raw("</h3>");
            html.header("item", "attempt", "outcome", "line", "process", "claimed", "finished", "duration");
            t.runs().forEach(r -> html.row("run-" + r.itemId() + "-" + r.attempt(), Long.toString(r.itemId()), Integer.toString(r.attempt()),
                    r.state(), shorten(r.line()), r.process(), r.claimedAt() == null ? "" : r.claimedAt().toString(),
                    r.finishedAt().toString(), millis(r.duration())));
            html.endTable();
        }
        html.section("effects", "Effects and replies");
        if (t.effects().isEmpty()) {
            html.raw("<p>").text("No effect recorded.").raw("</p>");
        } else {
            html.header("effect", "item", "state", "started", "done", "result", "resolved by");
            t.effects().forEach(e -> html.row(null, e.key(), Long.toString(e.itemId()), e.state(), e.startedAt().toString(),
                    e.doneAt() == null ? "" : e.doneAt().toString(), shorten(e.result()), e.resolvedBy()));
            html.endTable();
        }
        html.section("payload", "Payload (secret fields masked)");
        html.raw("<pre id=\"payload-text\">").text(t.payload()).raw("</pre>");
        return end(html);
    }

    static String notFound(String key) {
        Html html = start("message", "../..");
        html.raw("<p id=\"not-found\">").text("No stored message " + key + " (removed by retention, or never stored).").raw("</p>")
                .raw("<p><a href=\"../messages\">search</a></p>");
        return end(html);
    }

    /** The page's body: {@link #end} wraps it in the page. */
    private static Html start(String title, String statusLink) {
        Html page = new Html().raw("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>").text("chat-intake " + title)
                .raw("</title><style>" + StatusView.STYLE + "pre{white-space:pre-wrap;max-width:100em}</style></head><body>")
                .raw("<h1>").text(title).raw("</h1><p class=\"meta\"><a id=\"status-link\" href=\"" + statusLink + "/status\">status</a></p>");
        return new Html().raw(page.toString());
    }

    private static String end(Html body) {
        return body + "</body></html>";
    }

    private static String shorten(String text) {
        return text == null || text.length() <= 200 ? text : text.substring(0, 200) + "...";
    }

    private static String millis(Duration d) {
        return d == null ? "" : d.toMillis() + " ms";
    }

    private static String encode(String value) {
        return URLEncoder.encode(value, StandardCharsets.UTF_8);
    }
}
