package io.chatintake.ops;

import io.chatintake.config.Settings;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * The status page as one piece of HTML: its figures read by {@link StatusQueries} into a
 * {@link StatusSnapshot}, the graphs by {@link StatusGraphs}, both on one read-only connection,
 * then drawn by {@link StatusView}.
 */
final class StatusReport {
    private final DataSource dataSource;
    private final Supplier<Set<String>> handledKinds;
    private final StatusQueries queries;
    private final StatusView view;

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
        this.dataSource = dataSource;
        this.handledKinds = handledKinds;
        Duration deadAfter = StatusHistory.deadAfter(settings);
        this.queries = new StatusQueries(deadAfter, Duration.ofSeconds(settings.getLong("chat-intake.db.open-transaction-warn-seconds")));
        this.view = new StatusView(settings, refresh, processName, deadAfter);
    }

    String render(Map<RecentRefusals.Refusal, Long> refusals, Viewer viewer) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setReadOnly(true);
            StatusSnapshot snapshot = queries.read(c, viewer.parkedPage(), viewer.effectsPage());
            StatusGraphs graphs = StatusGraphs.read(c, snapshot.now());
            return view.render(snapshot, new StatusView.Graphs(graphs::overview, graphs::all), handledKinds.get(), refusals, viewer);
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

        /** A form's hidden field. */
        Html hidden(String name, String value) {
            return raw("<input type=\"hidden\" name=\"").text(name).raw("\" value=\"").text(value).raw("\">");
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
}
