package io.chatintake.app;

import io.chatintake.ops.bench.AlbumBenchmark;
import io.chatintake.ops.bench.DispatchBenchmark;
import io.chatintake.ops.bench.ManyBotsBenchmark;
import io.chatintake.ops.bench.MemoryBenchmark;
import io.chatintake.ops.bench.ReplyBenchmark;
import io.chatintake.ops.bench.SearchBenchmark;
import io.chatintake.ops.bench.SoakBenchmark;
import io.chatintake.ops.bench.StartBenchmark;
import io.chatintake.ops.bench.TelegramIntakeBenchmark;
import io.chatintake.ops.bench.WebhookIntakeBenchmark;
import io.chatintake.channel.webhook.WebhookRouteFile;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.ops.AlbumCommands;
import io.chatintake.ops.MessagesCommand;
import io.chatintake.ops.KubernetesConfigMap;
import io.chatintake.ops.Chaos;
import io.chatintake.ops.ComponentDocs;
import io.chatintake.ops.Demo;
import io.chatintake.ops.EraseCommand;
import io.chatintake.ops.PurgeCommand;
import io.chatintake.ops.SendCommand;
import io.chatintake.ops.TelegramCommands;
import io.chatintake.ops.WorkCommands;
import io.chatintake.support.Redactor;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * The jar's entry point: {@code java -jar chat-intake.jar [command]}. Without a command it runs
 * the intake ({@link Runner}); operator commands read the same configuration and database.
 */
public final class Main {
    static final String CONFIG_FILE_ENV = "CHAT_INTAKE_CONFIG";
    private static final int EXIT_CONFIGURATION = 2;

    private Main() {
    }

    /** The JDK HTTP client's read buffer when {@code -Djdk.httpclient.bufsize} does not say otherwise. */
    private static final String HTTP_READ_BUFFER_BYTES = "4096";

    /** Threads of the common pool at the least, when {@code -Djava.util.concurrent.ForkJoinPool.common.parallelism} does not say. */
    private static final int COMMON_POOL_THREADS = 2;

    public static void main(String[] args) {
        // Both are read once, so they are set before any HTTP client or CompletableFuture exists.
        // Every connection of the JDK's HTTP client keeps its read buffer while it waits, and every
        // bot's long poll is such a connection: a smaller buffer than the default keeps each waiting
        // bot light; a large answer is read in more, smaller reads.
        if (System.getProperty("jdk.httpclient.bufsize") == null) {
            System.setProperty("jdk.httpclient.bufsize", HTTP_READ_BUFFER_BYTES);
        }
        // The HTTP client completes every sendAsync on CompletableFuture's default executor, which
        // with a common pool of one thread (2 cores) starts a new thread per task: a thread started
        // and ended for every getUpdates answer of every bot.
        if (System.getProperty("java.util.concurrent.ForkJoinPool.common.parallelism") == null
                && Runtime.getRuntime().availableProcessors() - 1 < COMMON_POOL_THREADS) {
            System.setProperty("java.util.concurrent.ForkJoinPool.common.parallelism", Integer.toString(COMMON_POOL_THREADS));
        }
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
                case "messages" -> {
                    return new MessagesCommand(loadSettings(), out).run(args.subList(1, args.size()));
                }
                case "albums" -> {
                    String sub = args.size() > 1 ? args.get(1) : "status";
                    if (sub.equals("resolve")) {
                        if (args.size() < 3 || args.get(2).startsWith("--")) {
                            throw new ConfigurationException("albums resolve needs ALBUM_KEY [--by NAME]");
                        }
                        int by = args.indexOf("--by");
                        return new AlbumCommands(loadSettings(), out).resolve(args.get(2),
                                by > 0 && by + 1 < args.size() ? args.get(by + 1) : System.getProperty("user.name", "unknown"));
                    }
                    if (!sub.equals("status")) {
                        throw new ConfigurationException("unknown albums command '" + sub + "' (status, resolve ALBUM_KEY)");
                    }
                    return new AlbumCommands(loadSettings(), out).status();
                }
                case "bench" -> {
                    String which = args.size() < 2 ? "" : args.get(1);
                    boolean cold = args.contains("--cold");
                    List<String> numbers = args.stream().skip(2).filter(a -> !a.startsWith("--")).toList();
                    boolean given = !numbers.isEmpty();
                    int n = given ? Integer.parseInt(numbers.get(0)) : 20_000;
                    try {
                        return switch (which) {
                            case "telegram" -> cold ? new TelegramIntakeBenchmark(out).runCold(n) : new TelegramIntakeBenchmark(out).run(n);
                            case "bots" -> new ManyBotsBenchmark(out).run(given ? n : 100);
                            case "dispatch" -> new DispatchBenchmark(out).run(n);
                            case "albums" -> new AlbumBenchmark(out).run(n);
                            case "webhook" -> new WebhookIntakeBenchmark(out).run(n);
                            case "memory" -> new MemoryBenchmark(out).run(given ? n : 1_000_000);
                            case "start" -> new StartBenchmark(out).run();
                            case "latency" -> new DispatchBenchmark(out).latency(given ? n : 20);
                            case "replies" -> new ReplyBenchmark(out).run(given ? n : 600);
                            case "search" -> new SearchBenchmark(out).run(given ? n : 1_000_000);
                            case "soak" -> new SoakBenchmark(out).run(given ? n : 300, args.subList(2, args.size()));
                            default -> throw new ConfigurationException(
                                    "usage: bench telegram [--cold]|bots|dispatch|albums|webhook|memory|start|latency|replies|search|soak [N]");
                        };
                    } catch (ConfigurationException e) {
                        throw e;
                    } catch (Exception e) {
                        throw new ConfigurationException("benchmark failed: " + e.getMessage(), e);
                    }
                }
                case "k8s" -> {
                    if (args.size() < 2 || !args.get(1).equals("configmap")) {
                        throw new ConfigurationException("usage: k8s configmap");
                    }
                    out.print(KubernetesConfigMap.render(Path.of("config/application.properties"), Path.of("routes")));
                    return 0;
                }
                case "docs" -> {
                    return ComponentDocs.run(args.subList(1, args.size()), out);
                }
                case "send" -> {
                    Settings settings = loadSettings();
                    return new SendCommand(settings, CamelConfiguration.routesDirectory(settings), out).run(args.subList(1, args.size()));
                }
                case "routes" -> {
                    if (args.size() < 2 || !args.get(1).equals("check") || args.size() > 3) {
                        throw new ConfigurationException("usage: routes check [FILE|DIR] (default routes/)");
                    }
                    try {
                        return RoutesCheck.run(Path.of(args.size() > 2 ? args.get(2) : "routes"),
                                Path.of(System.getenv().getOrDefault(CONFIG_FILE_ENV, "config/application.properties")), System.getenv(), out);
                    } catch (IOException e) {
                        throw new ConfigurationException("routes check: cannot read " + e.getMessage(), e);
                    }
                }
                case "chaos" -> {
                    if (args.size() > 1 && !args.get(1).matches("[1-9]\\d{0,4}")) {
                        throw new ConfigurationException("usage: chaos [SECONDS] (a whole number of seconds, default 120)");
                    }
                    return new Chaos(out).run(args.size() > 1 ? Integer.parseInt(args.get(1)) : 120);
                }
                case "demo" -> {
                    return new Demo(out).run(args.subList(1, args.size()));
                }
                case "erase" -> {
                    return new EraseCommand(loadSettings(), out).run(args.subList(1, args.size()));
                }
                case "purge" -> {
                    return new PurgeCommand(loadSettings(), out).run(args.subList(1, args.size()));
                }
                case "config" -> {
                    Settings settings = loadSettings();
                    out.println("configuration file: " + settings.source().map(Path::toString).orElse("(none: built-in defaults)"));
                    // Each value with where it came from: built-in, config file or environment.
                    settings.describe().forEach((k, v) -> out.println(k + "=" + v
                            + settings.sourceOf(k).map(source -> " (" + source.label() + ")").orElse("")));
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
        Settings settings = Settings.load(file, System.getenv());
        // Keys the routes name as secret (a webhook's secretsKey) are secrets whatever their names, for config too.
        WebhookRouteFile.secretKeys(CamelConfiguration.routesDirectory(settings)).forEach(Settings::declareSecretKey);
        // Before anything can log: every secret value is masked in all output from here on.
        int tooShort = Redactor.register(settings.secretValues());
        if (tooShort > 0) {
            LoggerFactory.getLogger(Main.class).warn("{} configured secret value(s) shorter than {} characters cannot be masked"
                    + " in logs; use longer secrets", tooShort, Redactor.MIN_LENGTH);
        }
        return settings;
    }

    private static void usage(PrintStream out) {
        out.println(String.join(System.lineSeparator(), Arrays.asList(
                "usage: java -jar chat-intake.jar [command]",
                "  run       run the intake (the default)",
                "  telegram status                          per bot: next offset, last poll, counts, lease, pending, loss windows",
                "  telegram switch-to-polling --bot NAME    deleteWebhook keeping queued updates, then confirm",
                "  telegram set-webhook --bot NAME --url U  webhook mode: record the bot, setWebhook (secret, every type, queue kept)",
                "  telegram pause --bot NAME [--by NAME]    no getUpdates for the bot within 2 s, after its current batch; offset kept",
                "  telegram resume --bot NAME [--by NAME]   polling again from the saved offset (both recorded in operator_action)",
                "  work status                              stored work by kind and state, parked items, effects to reconcile,",
                "                                           live processes and since when they hold handling back for intake",
                "  work retry --id N | --all-parked         put parked work back to pending",
                "  work retry --kind K --state S --error TEXT --since T --until T [--dry-run] [--chunk N] [--by NAME]",
                "                                           every parked or failed item the filter matches: --dry-run prints the",
                "                                           count; without it runs in chunks of 500, a line each, Ctrl-C stops",
                "                                           after the current chunk; recorded once in operator_action",
                "  work replay --kind K --since T           run done work of kind K created since T again (explicit only)",
                "  work resolve-effect KEY --performed|--not-performed [--by NAME]",
                "                                           settle an effect parked for reconciliation; its item runs again",
                "  work settle --kind K ... --performed|--not-performed [--dry-run]",
                "                                           the same for every item the filter matches (as work retry's filter)",
                "  work pause --kind K [--by NAME]          no item of kind K is claimed within 2 s; new ones are stored, none parked",
                "  work resume --kind K [--by NAME]         kind K is claimed again, in order per chat (both recorded in operator_action)",
                "  messages find [--channel C] [--bot B] [--conversation ID] [--sender ID] [--text T] [--event ID]",
                "                [--since T] [--until T] [--limit N] [--after CURSOR]",
                "                                           stored messages, newest first (T: ISO time or age, 15m, 2h, 3d)",
                "  messages show KEY                        a message's timeline: stored by, album, runs, effects, payload masked",
                "  albums status                            open albums, oldest open age, recent decisions, conflicts",
                "  albums resolve ALBUM_KEY [--by NAME]     a person settled the album: clears needs_person, records who",
                "  demo [--exit]                            a one-minute story on a fresh embedded database with the simulators;",
                "                                           then the status page until Ctrl-C (--exit: end after the story)",
                "  chaos [SECONDS]                          3 runners on one database, one killed (kill -9) every few seconds for",
                "                                           SECONDS (default 120), then checks nothing was lost or done twice",
                "  routes check [FILE|DIR]                  route files checked without running them (default routes/): syntax,",
                "                                           components, endpoint options, placeholders, beans, direct: endpoints;",
                "                                           each problem as file:line: message, exit 1 if any",
                "  send CHANNEL --file BODY [--url URL]     BODY signed as CHANNEL's route verifies it (its scheme and secret), posted",
                "                                           to the route (this configuration's port, or URL); prints status and body",
                "  k8s configmap                            k8s/configmap.yaml from config/ and routes/ (run in the repository root)",
                "  docs components [--check] [ROOT]         src/main/docs/*-component.adoc tables and the README's header list,",
                "                                           from the component metadata (--check: exit 1 when one differs)",
                "  purge [--dry-run]                        one retention pass now (retention.*), or what it would remove",
                "  erase --telegram BOT:CHAT_ID | --conversation CHANNEL:WORKSPACE:ACCOUNT:CONVERSATION",
                "        | --sender CHANNEL:WORKSPACE:ACCOUNT:SENDER [--dry-run] [--by NAME]",
                "                                           remove that chat's or person's content everywhere (database, media",
                "                                           files); their waiting work ends erased; recorded in erasure (counts only)",
                "  bench telegram [N]                       Telegram intake of the runner (handlers on) as a ratio to a hand-written loop",
                "  bench telegram --cold [N]                a fresh runner drains N waiting updates (default 20,000) vs a fresh hand-written loop",
                "  bench bots [B]                           B bots (default 100) at 50 updates/s each with bursts: p99 to stored, threads, heap",
                "  bench webhook [N]                        UnifyPort deliveries at 16 and 1 clients as ratios to the contract's rows by JDBC",
                "  bench memory [N]                         runner heap with N stored updates pending (default 1,000,000) vs 10,000",
                "  bench start                              time to ready on a warm data dir, by phase",
                "  bench latency [SECONDS]                  commit-to-handler wait over 1,000 chats, shipped vs a growing gathering wait (20 s a rate)",
                "  bench albums [N]                         album decision latency with N albums open (default 20,000), heap flat",
                "  bench replies [N]                        echo replies at Telegram's limits (simulator, 429 above them) as ratios to the bot's limit",
                "  bench search [N]                         N stored messages (default 1,000,000): p50/p95 of a page per search filter",
                "  bench dispatch [N]                       ordered work handled as a ratio to the intake rate; claim cost vs backlog",
                "  bench soak [SECONDS] [--FLAG=VALUE ...]   one runner under a steady mixed load for SECONDS (default 300): handling",
                "                                           keeps up, oldest pending, drained in 30 s, no claim lost to itself; flags",
                "                                           --telegram-per-second=150 --chats=500 --webhook-per-second=38",
                "                                           --album-share=0.25 (share of deliveries that are album children) --album-size=3",
                "  config    print the effective configuration, secrets redacted, each value with its source",
                "            (built-in, config file, environment)",
                "  help      this text",
                "configuration: config/application.properties (or $" + CONFIG_FILE_ENV + "), each key overridable by",
                "an environment variable named after it, e.g. chat-intake.db.url -> CHAT_INTAKE_DB_URL")));
    }
}
