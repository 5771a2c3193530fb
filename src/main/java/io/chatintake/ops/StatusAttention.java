package io.chatintake.ops;

import io.chatintake.ops.Html;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What needs a person, shown first on the status page: a count of each kind of thing, then every
 * item said in a line. The sections add to it as they are drawn, so its lines come in their order.
 */
final class StatusAttention {
    static final String PARKED = "parked items";
    static final String EFFECTS = "effects to settle";
    static final String ALBUMS = "albums needing a person";
    static final String BOTS_NOT_POLLING = "bots not polling";
    static final String UNMAPPED = "unmapped deliveries";

    private final Map<String, Long> counts = new LinkedHashMap<>();
    private final List<String> items = new ArrayList<>();

    StatusAttention() {
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
