package io.chatintake.ops.bench;

import io.chatintake.channel.telegram.BotApiClient;
import io.chatintake.channel.telegram.OffsetCheckpoint;
import io.chatintake.channel.telegram.PollLease;
import io.chatintake.channel.telegram.ScheduleCheckpoint;
import io.chatintake.channel.telegram.TelegramUpdateStore;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.sim.BotApiSimulator;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code bench memory [N]}: the runner's heap after a full GC while it works through a backlog
 * of N stored updates whose work is pending (default 1,000,000), against the same with 10,000;
 * in both, Telegram (the simulator) holds 10,000 more, so polling and handling run while the
 * heap is read. The poller holds one batch and the dispatcher claims items, never the backlog,
 * so the target is: large <= 1.2x small.
 */
public final class MemoryBenchmark {
    private static final int SMALL = 10_000;
    private static final double TARGET = 1.2;
    private static final long BACKLOG_BOT = 7001;
    private static final long POLLED_BOT = 7002;
    private static final int FILL_BATCH = 1_000;
    private static final int SAMPLES = 4;
    private static final Duration SAMPLE_EVERY = Duration.ofSeconds(5);
    private static final String TEXT = "z".repeat(900);

    private final PrintStream out;

    public MemoryBenchmark(PrintStream out) {
        this.out = out;
    }

    public int run(int backlog) throws Exception {
        long small = heapWithBacklog(SMALL);
        long large = heapWithBacklog(backlog);
        double ratio = (double) large / small;
        out.printf("runner heap after GC (max of %d samples, %d s apart, while polling and handling):%n", SAMPLES, SAMPLE_EVERY.toSeconds());
        out.printf("  backlog %,9d: %6.1f MB%n", SMALL, small / 1e6);
        out.printf("  backlog %,9d: %6.1f MB%n", backlog, large / 1e6);
        out.printf("ratio %.2f (target <= %.2f): %s%n", ratio, TARGET, ratio <= TARGET ? "met" : "NOT met");
        return ratio <= TARGET ? 0 : 1;
    }

    private long heapWithBacklog(int backlog) throws Exception {
        try (BenchDatabase database = BenchDatabase.start("memory", 2); BotApiSimulator simulator = BotApiSimulator.start()) {
            long start = System.nanoTime();
            fill(database, backlog);
            out.printf("backlog of %,d stored updates with pending work written in %.0f s%n", backlog, (System.nanoTime() - start) / 1e9);
            String token = simulator.addBot(POLLED_BOT, "BENCH-memory-not-a-real-token", "memory_bot");
            for (int i = 0; i < SMALL; i++) {
                simulator.enqueueText(token, 1 + i % 50, TEXT);
            }
            Map<String, String> env = new HashMap<>(database.runnerEnv());
            env.put("TELEGRAM_BOT_TOKEN", token);
            env.put("TELEGRAM_API_URL", simulator.url());
            env.put("TELEGRAM_POLL_TIMEOUT_SECONDS", "1");
            try (BenchRunner runner = BenchRunner.start(database.dir().resolve("runner"), env)) {
                long max = 0;
                for (int i = 0; i < SAMPLES; i++) {
                    Thread.sleep(SAMPLE_EVERY.toMillis());
                    max = Math.max(max, runner.heapAfterGc());
                }
                out.printf("  (backlog %,d: meanwhile %,d polled updates stored, %,d work items done)%n", backlog,
                        database.queryLong("SELECT count(*) FROM chat_intake.telegram_update WHERE bot_id = " + POLLED_BOT),
                        database.queryLong("SELECT count(*) FROM chat_intake.work_item WHERE state = 'done'"));
                return max;
            }
        }
    }

    /** Stores the backlog the way intake does (TelegramUpdateStore, then ScheduleCheckpoint: updates, then their work items), in big batches. */
    private static void fill(BenchDatabase database, int backlog) throws Exception {
        PollLease leases = new PollLease(database.dataSource());
        new OffsetCheckpoint(database.dataSource()).load(BACKLOG_BOT, "backlog");
        Duration leaseDuration = Duration.ofHours(1);
        PollLease.Held lease = leases.tryAcquire(BACKLOG_BOT, "bench", leaseDuration).orElseThrow();
        TelegramUpdateStore inbox = new TelegramUpdateStore(database.dataSource(), ChildMessageListener.all(List.of()));
        ScheduleCheckpoint schedule = new ScheduleCheckpoint(database.dataSource());
        for (int from = 1; from <= backlog; from += FILL_BATCH) {
            List<BotApiClient.RawUpdate> batch = new ArrayList<>(FILL_BATCH);
            for (int id = from; id < from + FILL_BATCH && id <= backlog; id++) {
                batch.add(new BotApiClient.RawUpdate(id, "message", "{\"update_id\":" + id + ",\"message\":{\"message_id\":" + id
                        + ",\"chat\":{\"id\":" + (1 + id % 50) + ",\"type\":\"private\"},\"date\":1,\"text\":\"" + TEXT + "\"}}"));
            }
            schedule.scheduleThrough(BACKLOG_BOT, inbox.store(lease, leaseDuration, batch).lastRowId());
        }
        leases.release(lease);
    }
}
