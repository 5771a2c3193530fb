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

}
