package io.chatintake.ops;

import io.chatintake.attachment.MediaStore;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.store.Database;
import io.chatintake.store.Migrations;
import java.io.PrintStream;
import java.sql.SQLException;
import java.util.List;

/**
 * {@code erase --telegram BOT:CHAT_ID | --conversation CHANNEL:WORKSPACE:ACCOUNT:CONVERSATION |
 * --sender CHANNEL:WORKSPACE:ACCOUNT:SENDER [--dry-run] [--by NAME]} ({@link Erasure}): prints
 * one line with the counts; {@code --dry-run} changes nothing.
 */
public final class EraseCommand {
    static final String USAGE = "usage: erase --telegram BOT:CHAT_ID | --conversation CHANNEL:WORKSPACE:ACCOUNT:CONVERSATION"
            + " | --sender CHANNEL:WORKSPACE:ACCOUNT:SENDER [--dry-run] [--by NAME]";
    private static final List<String> SUBJECTS = List.of("telegram", "conversation", "sender");

    private final Settings settings;
    private final PrintStream out;

    public EraseCommand(Settings settings, PrintStream out) {
        this.settings = settings;
        this.out = out;
    }

    public int run(List<String> args) {
        List<String> given = SUBJECTS.stream().filter(s -> args.contains("--" + s)).toList();
        if (given.size() != 1) {
            throw new ConfigurationException(USAGE);
        }
        int at = args.indexOf("--" + given.get(0));
        if (at + 1 >= args.size() || args.get(at + 1).startsWith("--")) {
            throw new ConfigurationException(USAGE);
        }
        Erasure.Target target = Erasure.Target.parse(given.get(0), args.get(at + 1));
        boolean dryRun = args.contains("--dry-run");
        try (Database database = Database.openForCommand(settings)) {
            if (dryRun) {
                Migrations.requireCurrent(database.dataSource());
            } else {
                Migrations.apply(database.dataSource());
            }
            try (MediaStore media = dryRun ? null : MediaStore.configured(settings)) {
                out.println(new Erasure(database.dataSource(), media).erase(target, dryRun, OperatorActions.by(args)).sentence());
            }
            return 0;
        } catch (SQLException e) {
            throw new ConfigurationException("erase failed; nothing changed: " + e.getMessage(), e);
        }
    }
}
