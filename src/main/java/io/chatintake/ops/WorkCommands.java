package io.chatintake.ops;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.store.Database;
import io.chatintake.store.Migrations;
import io.chatintake.store.OperatorPause;
import io.chatintake.work.WorkQueue;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@code work status}, {@code work retry}, {@code work replay}, {@code work resolve-effect},
 * {@code work pause|resume --kind K} ({@link PauseCommand}): the stored work as an operator sees it.
 */
public final class WorkCommands {
    private final Settings settings;
    private final PrintStream out;

    public WorkCommands(Settings settings, PrintStream out) {
        this.settings = settings;
        this.out = out;
    }

    public int run(List<String> args) {
        String sub = args.isEmpty() ? "status" : args.get(0);
        if (sub.equals("pause") || sub.equals("resume")) {
            return PauseCommand.run(settings, out, OperatorPause.Subject.WORK_KIND, args);
        }
        try (Database database = Database.openForCommand(settings)) {
            if (sub.equals("status")) {
                Migrations.requireCurrent(database.dataSource());
            } else {
                Migrations.apply(database.forMigrations());
            }
            WorkQueue queue = new WorkQueue(database.dataSource());
            return switch (sub) {
                case "status" -> status(database);
                case "retry" -> {
                    WorkFilter filter = filter(args);
                    if (!filter.isEmpty() || args.contains("--dry-run")) {
                        yield bulk(database, BulkWorkAction.Kind.RETRY, filter, args);
                    }
                    Long id = option(args, "--id").map(Long::parseLong).orElse(null);
                    if (id == null && !args.contains("--all-parked")) {
                        throw new ConfigurationException("work retry needs --id N (one item), --all-parked, or a filter:"
                                + " --kind K --state S --error TEXT --since T --until T [--dry-run]");
                    }
                    OperatorActions actions = new OperatorActions(database.dataSource());
                    if (id == null) {
                        out.println(actions.retryAllParked(OperatorActions.by(args)).sentence());
                    } else {
                        OperatorActions.ActionResult retried = actions.retry(id, OperatorActions.by(args));
                        if (retried.sentence().equals(OperatorActions.contentGone(id))) {
                            out.println(retried.sentence());
                            yield 1;
                        }
                        out.printf("%d item(s) back to pending%n", retried.changed() ? 1 : 0);
                    }
                    yield 0;
                }
                case "replay" -> {
                    String kind = option(args, "--kind").orElseThrow(() -> new ConfigurationException("work replay needs --kind K --since T"));
                    Instant since = option(args, "--since").map(WorkCommands::instant)
                            .orElseThrow(() -> new ConfigurationException("work replay needs --since T (e.g. 2026-11-30T00:00:00Z)"));
                    out.printf("%d done item(s) of kind %s since %s will run again%n", queue.replay(kind, since), kind, since);
                    yield 0;
                }
                case "resolve-effect", "settle" -> resolveEffect(database, args);
                default -> throw new ConfigurationException("unknown work command '" + sub
                        + "' (status, retry, replay, resolve-effect (or settle), pause, resume)");
            };
        } catch (SQLException e) {
            throw new ConfigurationException((sub.equals("status") ? "cannot read the work tables: "
                    : "work " + sub + " failed; nothing changed: ") + e.getMessage(), e);
        }
    }

    /** {@link OperatorActions#settleEffect}, with the name given by --by (or the user's); with a filter, every match's effects. */
    private int resolveEffect(Database database, List<String> args) throws SQLException {
        boolean performed = args.contains("--performed");
        WorkFilter filter = filter(args);
        if (!filter.isEmpty() || args.contains("--dry-run")) {
            if (performed == args.contains("--not-performed")) {
                throw new ConfigurationException("work " + args.get(0) + " with a filter needs one of --performed | --not-performed");
            }
            return bulk(database, performed ? BulkWorkAction.Kind.SETTLE_PERFORMED : BulkWorkAction.Kind.SETTLE_NOT_PERFORMED, filter, args);
        }
        if (args.size() < 2 || args.get(1).startsWith("--") || performed == args.contains("--not-performed")) {
            throw new ConfigurationException("work resolve-effect needs KEY and one of --performed | --not-performed [--by NAME]");
        }
        OperatorActions.ActionResult settled = new OperatorActions(database.dataSource()).settleEffect(args.get(1), performed,
                OperatorActions.by(args));
        out.println(settled.sentence());
        return settled.changed() ? 0 : 1;
    }

    /**
     * An action on every item {@code filter} matches: with {@code --dry-run} only the count; without,
     * it runs in chunks of {@code --chunk N} (500), printing a line per chunk. Ctrl-C stops it after
     * the current chunk, and its one operator_action row then says so.
     */
    private int bulk(Database database, BulkWorkAction.Kind kind, WorkFilter filter, List<String> args) throws SQLException {
        int chunk = option(args, "--chunk").map(Integer::parseInt).orElse(BulkWorkAction.CHUNK);
        BulkWorkAction action = new BulkWorkAction(database.dataSource(), chunk);
        if (args.contains("--dry-run")) {
            out.printf("%d item(s) match %s (dry run: nothing changed; without --dry-run the action runs)%n", action.count(kind, filter), filter);
            return 0;
        }
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch finished = new CountDownLatch(1);
        Thread ctrlC = new Thread(() -> {
            stop.set(true);
            try {
                finished.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "stop-after-chunk");
        Runtime.getRuntime().addShutdownHook(ctrlC);
        try {
            BulkWorkAction.Progress last = action.run(kind, filter, OperatorActions.by(args), stop::get, p -> {
                if (!p.finished()) {
                    out.printf("%d of %d item(s) done (operator_action #%d)%n", p.changed(), p.counted(), p.actionId());
                }
            });
            out.printf("%s%d item(s) %s (filter: %s; operator_action #%d)%n", last.cancelled() ? "cancelled after " : "", last.changed(),
                    kind.done, filter, last.actionId());
            return last.cancelled() ? 1 : 0;
        } finally {
            finished.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(ctrlC);
            } catch (IllegalStateException shuttingDown) {
                // Ctrl-C: the hook is running and returns now that the chunk is committed.
            }
        }
    }

    private static WorkFilter filter(List<String> args) {
        return WorkFilter.of(name -> option(args, "--" + name).orElse(null));
    }

    private int status(Database database) throws SQLException {
        try (Connection c = database.dataSource().getConnection()) {
            out.println("work items by kind and state:");
            query(c, "SELECT kind, state, count(*) FROM work_item GROUP BY kind, state ORDER BY kind, state",
                    rs -> out.printf("  %-18s %-8s %d%n", rs.getString(1), rs.getString(2), rs.getLong(3)));
            query(c, "SELECT min(next_attempt_at) FROM work_item WHERE state IN ('pending', 'failed')",
                    rs -> out.printf("oldest due item: %s%n", rs.getTimestamp(1) == null ? "none" : rs.getTimestamp(1).toInstant()));
            out.println("live processes (heartbeats):");
            query(c, """
                    SELECT process_id, host, pid, held_back_since, now() FROM runner_heartbeat
                     WHERE beat_at >= now() - make_interval(secs => ?) ORDER BY process_id""", rs -> {
                String heldBack = StatusView.heldBack(StatusQueries.instant(rs, 4), rs.getTimestamp(5).toInstant());
                out.printf("  %s on %s, pid %d%s%n", rs.getString(1), rs.getString(2), rs.getLong(3), heldBack == null ? "" : ": " + heldBack);
            }, StatusHistory.deadAfter(settings).toMillis() / 1000.0);
            out.println("paused kinds (no item of them is claimed; work resume --kind K):");
            OperatorPause.list(c, OperatorPause.Subject.WORK_KIND).values()
                    .forEach(p -> out.printf("  %s, by %s since %s%n", p.name(), p.by(), p.since()));
            // Normally none: a runner's scheduler makes items of them right after intake commits, every runner's within a second.
            query(c, "SELECT count(*), min(staged_at) FROM work_staged",
                    rs -> out.printf("staged, not yet work items: %d%s%n", rs.getLong(1),
                            rs.getTimestamp(2) == null ? "" : " (oldest staged " + rs.getTimestamp(2).toInstant() + ")"));
            // Normally none: every runner's scheduler derives stored events right after intake commits, or within a second.
            query(c, "SELECT count(*), min(received_at) FROM webhook_event WHERE derived_at IS NULL",
                    rs -> out.printf("webhook events stored, not yet derived (child message, work item): %d%s%n", rs.getLong(1),
                            rs.getTimestamp(2) == null ? "" : " (oldest stored " + rs.getTimestamp(2).toInstant() + ")"));
            out.println("unmapped deliveries (verified, stored whole: no event the mapping knows; webhook_event.parse_error):");
            query(c, "SELECT channel, workspace, count(*), max(received_at) FROM webhook_event WHERE parse_error = 'unmapped'"
                    + " GROUP BY channel, workspace ORDER BY channel, workspace",
                    rs -> out.printf("  %s/%s: %d unmapped, the latest %s%n", rs.getString(1), rs.getString(2), rs.getLong(3),
                            rs.getTimestamp(4).toInstant()));
            out.println("parked items (work retry --id N, or --all-parked):");
            query(c, "SELECT id, kind, source_key, attempts, last_error FROM work_item WHERE state = 'parked' ORDER BY id LIMIT 50",
                    rs -> out.printf("  #%d %s %s after %d attempt(s): %s%n", rs.getLong(1), rs.getString(2), rs.getString(3),
                            rs.getInt(4), rs.getString(5)));
            out.println("undeliverable items (done, refused for good, not retried; latest 20):");
            query(c, "SELECT id, kind, source_key, last_error FROM work_item WHERE outcome = 'undeliverable' ORDER BY done_at DESC LIMIT 20",
                    rs -> out.printf("  #%d %s %s: %s%n", rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4)));
            out.println("effects awaiting reconciliation (started, never recorded done;"
                    + " work resolve-effect KEY --performed|--not-performed):");
            query(c, "SELECT effect_key, work_item_id, started_at, result FROM outbound_effect WHERE state = 'started' ORDER BY started_at LIMIT 50",
                    rs -> out.printf("  %s (work item %s) started %s%s%n", rs.getString(1), rs.getString(2), rs.getTimestamp(3).toInstant(),
                            rs.getString(4) == null ? "" : ": " + rs.getString(4)));
        }
        return 0;
    }

    private interface Row {
        void print(ResultSet rs) throws SQLException;
    }

    private static void query(Connection c, String sql, Row row, Object... parameters) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < parameters.length; i++) {
                ps.setObject(i + 1, parameters[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    row.print(rs);
                }
            }
        }
    }

    private static Optional<String> option(List<String> args, String name) {
        int i = args.indexOf(name);
        return i >= 0 && i + 1 < args.size() ? Optional.of(args.get(i + 1)) : Optional.empty();
    }

    private static Instant instant(String text) {
        try {
            return Instant.parse(text);
        } catch (DateTimeParseException e) {
            throw new ConfigurationException("--since must be an ISO-8601 instant such as 2026-11-30T00:00:00Z, got '" + text + "'");
        }
    }
}
