package io.chatintake.ops;

import io.chatintake.ops.Html;
import io.chatintake.ops.StatusReport.Viewer;

/**
 * The status page's forms, each posting one of its actions ({@link StatusPage.Action}) with the
 * session's CSRF token. A read-only viewer (a bearer client) gets none of them.
 */
final class StatusForms {
    private StatusForms() {
    }

    /** Whom actions are recorded for: the name, typed once and kept in a cookie. */
    static void operator(Html page, Viewer viewer) {
        if (!viewer.mayAct()) {
            page.raw("<p class=\"meta\">").text("Read only: open " + StatusPage.PATH + "?token=... in a browser to act from this page.")
                    .raw("</p>");
            return;
        }
        form(page, "id=\"operator\"", StatusPage.Action.OPERATOR, viewer)
                .raw("<label>").text(viewer.operator() == null || viewer.operator().isEmpty() ? "Your name (recorded with every action): "
                        : "Actions are recorded as done by: ")
                .raw("<input id=\"operator-name\" name=\"name\" maxlength=\"80\" value=\"").text(viewer.operator()).raw("\"></label> ")
                .raw("<button id=\"operator-save\">save</button></form>");
        form(page, "id=\"logout\"", StatusPage.Action.LOGOUT, viewer).raw("<button id=\"logout-button\">sign out</button></form>");
    }

    /** One action's form: a button posting the given fields. */
    static void button(Html html, Viewer viewer, StatusPage.Action action, String id, String label, String... fields) {
        if (!viewer.mayAct()) {
            return;
        }
        form(html, "class=\"act\"", action, viewer);
        for (int i = 0; i + 1 < fields.length; i += 2) {
            html.hidden(fields[i], fields[i + 1]);
        }
        html.raw("<button id=\"").text(id).raw("\">").text(label).raw("</button></form>");
    }

    /** Erasure on request: it counts first, changing nothing; the answer shows what would go and the button that confirms. */
    static void erase(Html html, Viewer viewer) {
        if (!viewer.mayAct()) {
            return;
        }
        form(html, "id=\"erase-form\"", StatusPage.Action.ERASE, viewer)
                .raw("<select id=\"erase-subject\" name=\"subject\"><option value=\"telegram\">Telegram chat BOT:CHAT_ID</option>")
                .raw("<option value=\"conversation\">conversation CHANNEL:WORKSPACE:ACCOUNT:CONVERSATION</option>")
                .raw("<option value=\"sender\">sender CHANNEL:WORKSPACE:ACCOUNT:SENDER</option></select> ")
                .raw("<input id=\"erase-key\" name=\"key\" maxlength=\"400\" size=\"40\"> ")
                .raw("<button id=\"erase-button\">count, then confirm</button></form>");
    }

    /** Act on many: a filter over work items and what to do to them; posting it shows the count to confirm first. */
    static void actOnMany(Html html, Viewer viewer) {
        if (!viewer.mayAct()) {
            return;
        }
        form(html, "id=\"act-on-many\"", StatusPage.Action.ACT_ON_MANY, viewer)
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

    /** A form's opening, posting {@code action} with the session's CSRF token; {@code attributes} name it (id or class). */
    private static Html form(Html html, String attributes, StatusPage.Action action, Viewer viewer) {
        return html.raw("<form " + attributes + " method=\"post\" action=\"status/" + action.path + "\">").hidden("csrf", viewer.csrf());
    }

    /** The confirm step of act on many, a page of its own: the count, and the button that runs it on what the filter then matches. */
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
                page.hidden(field[0], field[1]);
            }
        }
        return page.raw("<button id=\"act-confirm-button\">").text(action + " " + count + " item(s)").raw("</button></form>")
                .raw("<p><a id=\"act-back\" href=\"../" + StatusPage.PATH.substring(1) + "#actions\">back, nothing changed</a></p>")
                .raw("</body></html>").toString();
    }
}
