package io.chatintake.ops;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.store.Database;
import io.chatintake.store.Migrations;
import io.chatintake.store.OperatorPause;
import java.io.PrintStream;
import java.sql.SQLException;
import java.util.List;

/**
 * {@code telegram pause|resume --bot NAME} and {@code work pause|resume --kind K}, each with
 * {@code [--by NAME]} (else the OS user): {@link OperatorActions#pause} or {@link OperatorActions#resume},
 * its sentence printed; exit 0 when it changed something, 1 when it was so already.
 */
final class PauseCommand {
    private PauseCommand() {
    }

    /** @param args the verb ({@code pause} or {@code resume}) first, then its options */
    static int run(Settings settings, PrintStream out, OperatorPause.Subject subject, List<String> args) {
        String option = "--" + subject.word;
        int at = args.indexOf(option);
        if (at < 0 || at + 1 >= args.size() || args.get(at + 1).startsWith("--")) {
            throw new ConfigurationException(args.get(0) + " needs " + option + " " + subject.word.toUpperCase() + " [--by NAME]");
        }
        String name = args.get(at + 1);
        String by = OperatorActions.by(args);
        try (Database database = Database.openForCommand(settings)) {
            Migrations.apply(database.dataSource());
            OperatorActions actions = new OperatorActions(database.dataSource());
            OperatorActions.ActionResult outcome = args.get(0).equals("pause") ? actions.pause(subject, name, by) : actions.resume(subject, name, by);
            out.println(outcome.sentence());
            return outcome.changed() ? 0 : 1;
        } catch (SQLException e) {
            throw new ConfigurationException("cannot " + args.get(0) + " " + subject.label + " " + name + " (nothing changed): "
                    + e.getMessage(), e);
        }
    }
}
