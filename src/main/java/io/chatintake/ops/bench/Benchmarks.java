package io.chatintake.ops.bench;

import io.chatintake.config.ConfigurationException;
import java.io.PrintStream;
import java.util.List;

/**
 * {@code bench <name> [N]}: each benchmark runs its contender and the product in the same run on
 * a fresh durable embedded database, prints what it measured and exits 0 only when its target is
 * met. The README's Performance section lists them with the figures they printed.
 */
public final class Benchmarks {
    private static final String USAGE = "usage: bench telegram|webhook|memory|start [N]";

    private Benchmarks() {
    }

    public static int run(List<String> args, PrintStream out) {
        if (args.isEmpty()) {
            throw new ConfigurationException(USAGE);
        }
        Integer n = args.size() > 1 ? parse(args.get(1)) : null;
        try {
            return switch (args.get(0)) {
                case "telegram" -> new TelegramIntakeBenchmark(out).run(n == null ? 20_000 : n);
                case "webhook" -> new WebhookIntakeBenchmark(out).run(n == null ? 20_000 : n);
                case "memory" -> new MemoryBenchmark(out).run(n == null ? 1_000_000 : n);
                case "start" -> new StartBenchmark(out).run();
                default -> throw new ConfigurationException(USAGE);
            };
        } catch (ConfigurationException e) {
            throw e;
        } catch (Exception e) {
            throw new ConfigurationException("benchmark failed: " + e, e);
        }
    }

    private static int parse(String n) {
        try {
            return Integer.parseInt(n);
        } catch (NumberFormatException e) {
            throw new ConfigurationException(USAGE + " (N is a number, got '" + n + "')");
        }
    }
}
