package io.chatintake.app;

import io.chatintake.ops.bench.Benchmarks;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.ops.AlbumCommands;
import io.chatintake.ops.KubernetesConfigMap;
import io.chatintake.ops.TelegramCommands;
import io.chatintake.ops.WorkCommands;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * The jar's entry point: {@code java -jar chat-intake.jar [command]}. Without a command it runs
 * the intake ({@link Runner}); operator commands read the same configuration and database.
 */
public final class Main {
    static final String CONFIG_FILE_ENV = "CHAT_INTAKE_CONFIG";
    private static final int EXIT_CONFIGURATION = 2;

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(List.of(args), System.out, System.err));
    }

    static int run(List<String> args, PrintStream out, PrintStream err) {
        String command = args.isEmpty() ? "run" : args.get(0);
        try {
            switch (command) {
                case "run" -> {
                    Runner.run(loadSettings());
                    return 0;
                }
                case "telegram" -> {
                    return new TelegramCommands(loadSettings(), out).run(args.subList(1, args.size()));
                }
                case "work" -> {
                    return new WorkCommands(loadSettings(), out).run(args.subList(1, args.size()));
                }
                case "albums" -> {
                    if (args.size() > 1 && !args.get(1).equals("status")) {
                        throw new ConfigurationException("unknown albums command '" + args.get(1) + "' (status)");
                    }
                    return new AlbumCommands(loadSettings(), out).status();
                }
                case "bench" -> {
                    return Benchmarks.run(args.subList(1, args.size()), out);
                }
                case "k8s" -> {
                    if (args.size() < 2 || !args.get(1).equals("configmap")) {
                        throw new ConfigurationException("usage: k8s configmap");
                    }
                    out.print(KubernetesConfigMap.render(Path.of("config/application.properties"), Path.of("routes")));
                    return 0;
                }
                case "config" -> {
                    Settings settings = loadSettings();
                    out.println("configuration file: " + settings.source().map(Path::toString).orElse("(none: built-in defaults)"));
                    settings.describe().forEach((k, v) -> out.println(k + "=" + v));
                    return 0;
                }
                case "help", "--help", "-h" -> {
                    usage(out);
                    return 0;
                }
                default -> {
                    err.println("chat-intake: unknown command '" + command + "'");
                    usage(err);
                    return EXIT_CONFIGURATION;
                }
            }
        } catch (ConfigurationException e) {
            // One line an operator can act on; the cause's stack trace would only bury it.
            err.println("chat-intake: " + e.getMessage());
            return EXIT_CONFIGURATION;
        }
    }

    static Settings loadSettings() {
        Path file = Path.of(System.getenv().getOrDefault(CONFIG_FILE_ENV, "config/application.properties"));
        return Settings.load(file, System.getenv());
    }

    private static void usage(PrintStream out) {
        out.println(String.join(System.lineSeparator(), Arrays.asList(
                "usage: java -jar chat-intake.jar [command]",
                "  run       run the intake (the default)",
                "  telegram status                          per bot: next offset, last poll, counts, lease, pending, loss windows",
                "  telegram switch-to-polling --bot NAME    deleteWebhook keeping queued updates, then confirm",
                "  work status                              stored work by kind and state, parked items, effects to reconcile",
                "  work retry --id N | --all-parked         put parked work back to pending",
                "  work replay --kind K --since T           run done work of kind K created since T again (explicit only)",
                "  albums status                            open albums, oldest open age, recent decisions, conflicts",
                "  bench telegram|webhook|memory|start [N]  intake rates as ratios to their contenders, heap, start time (README: Performance)",
                "  k8s configmap                            k8s/configmap.yaml from config/ and routes/ (run in the repository root)",
                "  config    print the effective configuration, secrets redacted",
                "  help      this text",
                "configuration: config/application.properties (or $" + CONFIG_FILE_ENV + "), each key overridable by",
                "an environment variable named after it, e.g. chat-intake.db.url -> CHAT_INTAKE_DB_URL")));
    }
}
