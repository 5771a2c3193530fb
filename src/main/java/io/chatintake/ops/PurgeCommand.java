package io.chatintake.ops;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.content.ContentExpiry;
import io.chatintake.store.Database;
import io.chatintake.store.Migrations;
import io.chatintake.work.Retention;
import java.io.IOException;
import java.io.PrintStream;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * {@code purge [--dry-run]}: one retention pass now (old content, then old rows) (the runner runs one every
 * {@code retention.interval-minutes} anyway), or with {@code --dry-run} what it would remove per
 * table, changing nothing. Safe while runners run: it claims the same way they do.
 */
public final class PurgeCommand {
    private final Settings settings;
    private final PrintStream out;

    public PurgeCommand(Settings settings, PrintStream out) {
        this.settings = settings;
        this.out = out;
    }

    public int run(List<String> args) {
        boolean dryRun = args.contains("--dry-run");
        if (args.stream().anyMatch(a -> !a.equals("--dry-run"))) {
            throw new ConfigurationException("usage: purge [--dry-run]");
        }
        try (Database database = Database.openForCommand(settings)) {
            if (dryRun) {
                Migrations.requireCurrent(database.dataSource());
            } else {
                Migrations.apply(database.forMigrations());
            }
            Retention retention = Retention.from(settings, database.dataSource());
            List<Retention.Outcome> outcomes = dryRun ? retention.dryRun() : retention.purge();
            ContentExpiry expiry = ContentExpiry.from(settings, database.dataSource());
            Map<String, Long> content = dryRun ? expiry.dryRun() : expiry.expire();
            out.println(dryRun ? "purge --dry-run: would remove (nothing changed):" : "purge: removed:");
            for (Retention.Outcome o : outcomes) {
                out.printf("  %-16s %s%n", o.table(), o.days() <= 0 ? "kept forever (retention off)"
                        : String.format("%d row(s)%s, finished more than %d day(s) ago", o.rows(),
                        o.workItems() > 0 ? " and their " + o.workItems() + " done work item(s)" : "", o.days()));
            }
            out.printf("  %-16s %s%n", "content", expiry.days() <= 0 ? "kept as long as its row (retention.content-days off)"
                    : "older than " + expiry.days() + " day(s), the rows kept: " + content.entrySet().stream()
                    .map(e -> e.getKey() + " " + e.getValue()).collect(Collectors.joining(", ")));
            return 0;
        } catch (SQLException | IOException e) {
            throw new ConfigurationException("retention pass failed: " + e.getMessage(), e);
        }
    }
}
