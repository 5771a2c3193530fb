package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.ops.SocketOwners;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.InboxAudit;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three runners (the real jar) on one database share 12 bots listed in configuration: each polls 4
 * once settled, no bot is ever polled by two processes at once (the simulator names the process
 * behind every getUpdates, from /proc), a killed runner's bots are polled by the other two within
 * the lease time, and a runner that comes back gets its share again.
 */
class FairPollLeasesIT {
    private static final Duration WAIT = Duration.ofSeconds(120);
    /** {@link RunnerProcess#pollingEnv}'s lease. */
    private static final Duration LEASE = Duration.ofSeconds(8);
    private static final int BOTS = 12;

    @TempDir
    Path work;
    private final Map<Long, String> runners = new ConcurrentHashMap<>();

    @Test
    void twelveBotsSpreadFourEachOverThreeRunnersAndAgainAfterOneDiesAndReturns() throws Exception {
        EmbeddedDatabase database = EmbeddedDatabase.start(work.resolve("shared-pg"), RunnerProcess.freePort(), false);
        try (BotApiSimulator simulator = BotApiSimulator.start()) {
            DataSource db = Sql.dataSource(database);
            simulator.setAudit(new InboxAudit(db));
            simulator.setClientResolver(new SocketOwners(URI.create(simulator.url()).getPort(), () -> Map.copyOf(runners))::owner);
            Map<String, String> tokens = new LinkedHashMap<>();
            for (int i = 1; i <= BOTS; i++) {
                String bot = String.format("b%02d", i);
                tokens.put(bot, simulator.addBot(9300 + i, "FAKE-" + bot + "-secret", bot + "_bot"));
            }
            List<RunnerProcess> started = new ArrayList<>();
            try {
                for (String name : List.of("r1", "r2", "r3")) {
                    started.add(start(name, simulator, database, tokens));
                }
                started.forEach(RunnerProcess::awaitReady);
                Await.until("4 leases each", WAIT, () -> leasesByRunner(db).values().stream().allMatch(n -> n == 4)
                        && leasesByRunner(db).size() == 3);
                Instant settled = Instant.now();
                Await.until("every bot polled after settling", WAIT, () -> tokens.values().stream()
                        .allMatch(t -> simulator.polls(t).stream().anyMatch(p -> p.start().isAfter(settled))));
                Map<String, Long> botsPolledByRunner = tokens.values().stream()
                        .map(t -> simulator.polls(t).stream().filter(p -> p.start().isAfter(settled)).map(BotApiSimulator.Poll::client)
                                .distinct().toList())
                        .peek(clients -> assertThat(clients).as("one poller per bot once settled").hasSize(1))
                        .collect(Collectors.groupingBy(clients -> clients.get(0), Collectors.counting()));
                assertThat(botsPolledByRunner.values()).containsExactly(4L, 4L, 4L);

                RunnerProcess killed = started.get(0);
                String killedName = runners.get(killed.pid());
                killed.kill9();
                Instant killedAt = Instant.now();
                Await.until("the killed runner's bots polled by the others", WAIT, () -> tokens.values().stream()
                        .allMatch(t -> simulator.polls(t).stream().anyMatch(p -> p.start().isAfter(killedAt)
                                && !killedName.equals(p.client()))));
                Duration takenOver = Duration.between(killedAt, Instant.now());
                // The lease runs out at most LEASE after the kill; a survivor's next look (every 2 s) takes it.
                assertThat(takenOver).as("every bot polled again within the lease time (+ a look)").isLessThan(LEASE.plusSeconds(6));
                // A lease can be moving (±1) at the moment the last bot is polled again.
                Await.until("6 leases each on the survivors", WAIT, () -> leasesByRunner(db).size() == 2
                        && leasesByRunner(db).values().stream().allMatch(n -> n == 6));

                Instant back = Instant.now();
                started.add(start("r1-again", simulator, database, tokens).awaitReady());
                Await.until("4 leases each again", WAIT, () -> leasesByRunner(db).size() == 3
                        && leasesByRunner(db).values().stream().allMatch(n -> n == 4));
                System.out.printf("fair leases: settled, killed runner's bots taken over in %d ms, returned runner evened out in %d ms%n",
                        takenOver.toMillis(), Duration.between(back, Instant.now()).toMillis());
            } finally {
                started.forEach(RunnerProcess::close);
            }
            for (String token : tokens.values()) {
                assertThat(simulator.maxConcurrentPolls(token)).as("never one bot polled by two processes").isEqualTo(1);
                assertThat(simulator.conflicts(token)).isZero();
            }
            assertThat(simulator.violations()).isEmpty();
        } finally {
            database.close();
        }
    }

    private RunnerProcess start(String name, BotApiSimulator simulator, EmbeddedDatabase database, Map<String, String> tokens) {
        Path dir = work.resolve(name);
        Map<String, String> env = RunnerProcess.pollingEnv(dir, simulator.url(), "unused");
        env.remove("TELEGRAM_BOT_TOKEN");
        env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", database.user());
        env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
        env.put("CHAT_INTAKE_DB_POOL_SIZE", "6");
        env.put("TELEGRAM_BOTS", String.join(",", tokens.keySet()));
        tokens.forEach((bot, token) -> env.put("TELEGRAM_BOTS_" + bot.toUpperCase() + "_TOKEN", token));
        RunnerProcess runner = RunnerProcess.start(dir, new HashMap<>(env));
        runners.put(runner.pid(), name);
        return runner;
    }

    /** Live leases per holding process. */
    private static Map<String, Integer> leasesByRunner(DataSource db) {
        Map<String, Integer> held = new HashMap<>();
        for (List<Object> row : Sql.rows(db, "SELECT holder, count(*) FROM telegram_poll_lease WHERE expires_at > now() GROUP BY holder")) {
            held.put(row.get(0).toString(), ((Number) row.get(1)).intValue());
        }
        return held;
    }
}
