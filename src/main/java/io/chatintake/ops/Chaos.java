package io.chatintake.ops;

import io.chatintake.channel.telegram.TelegramChannel;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.BotApiSimulator.Fault;
import io.chatintake.sim.InboxAudit;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.store.Database;
import io.chatintake.store.DatabaseSchema;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.store.Migrations;
import io.chatintake.support.DirectoryTree;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;

/**
 * {@code chaos [seconds]}: three runners (this jar, as child processes) on one PostgreSQL, fed by
 * the Bot API simulator (getUpdates answering some 500s, 429s and slow; some sendMessage 429s) and
 * the signed-delivery sender (UnifyPort texts and albums), while a random runner is killed with
 * kill -9 every few seconds and restarted. After a quiet settle with all three running it checks
 * what must hold whatever the kills: one poller per bot at every instant, every update and event
 * stored once, every reply sent once (or parked for reconciliation when a kill landed between send
 * and record), every album decided once per version with all its children, nothing else parked.
 * Exit 0 only when every check holds.
 */
public final class Chaos {
    private static final int REPLICAS = 3;
    private static final long BOT_ID = 7_100_001;
    private static final int ALBUM_SIZE = 3;
    private static final Duration READY_WAIT = Duration.ofSeconds(120);
    /**
     * Shorter than work.claim-seconds (two minutes, left as shipped): a killed runner's claims must be
     * released through its missing heartbeats, not by their expiry.
     */
    private static final Duration SETTLE_WAIT = Duration.ofSeconds(90);
    private static final String WORKSPACE = "default";
    /** EffectGuard's words for an effect a kill interrupted between the action and its record. */
    private static final String STARTED_NEVER_RECORDED = "started but never recorded";
    /** Longest a guarded sendMessage takes from its begin to its record here (one slow or refused send, no retry in between). */
    private static final Duration KILL_WINDOW = Duration.ofSeconds(5);

    private final PrintStream out;
    private final List<Replica> replicas = new ArrayList<>();
    private final AtomicBoolean feeding = new AtomicBoolean(true);
    private final List<String> problems = Collections.synchronizedList(new ArrayList<>());
    private Path workDir;
    private DataSource db;
    private BotApiSimulator simulator;
    private String token;
    private int step;

    // What was sent, to compare with what was stored.
    private final AtomicInteger texts = new AtomicInteger();
    private final AtomicInteger updates = new AtomicInteger();
    private final AtomicInteger telegramAlbums = new AtomicInteger();
    private final Set<String> acceptedEvents = ConcurrentHashMap.newKeySet();
    private final AtomicInteger unifyportAlbums = new AtomicInteger();
    private final AtomicInteger redeliveries = new AtomicInteger();
    private final AtomicInteger faultsInjected = new AtomicInteger();
    private final List<Instant> killedAt = Collections.synchronizedList(new ArrayList<>());

    public Chaos(PrintStream out) {
        this.out = out;
    }

    public int run(int seconds) {
        Path routes = Path.of("routes").toAbsolutePath();
        if (!Files.isDirectory(routes)) {
            throw new ConfigurationException("chaos: run it from the project directory (it uses ./routes)");
        }
        try {
            workDir = Files.createTempDirectory("chat-intake-chaos-");
        } catch (IOException e) {
            throw new ConfigurationException("chaos: cannot create a temp directory: " + e.getMessage());
        }
        out.println("chat-intake chaos: " + REPLICAS + " runners on one PostgreSQL, a random one killed with kill -9 every few"
                + " seconds for " + seconds + " s, then checks");
        EmbeddedDatabase embedded = EmbeddedDatabase.start(workDir.resolve("pg"), 0, false);
        // Ctrl-C: the runners and PostgreSQL are processes of their own and would outlive this one.
        Thread interrupted = new Thread(() -> {
            stopReplicas();
            embedded.close();
            deleteWorkDir();
        }, "chaos-cleanup");
        Runtime.getRuntime().addShutdownHook(interrupted);
        try (Database database = Database.embedded(embedded, 4); BotApiSimulator sim = BotApiSimulator.start()) {
            db = database.dataSource();
            simulator = sim;
            Migrations.apply(db);
            try {
                return chaos(seconds, routes, embedded);
            } finally {
                Runtime.getRuntime().removeShutdownHook(interrupted);
                // Before the database goes: a runner without it would take long to stop.
                stopReplicas();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            out.println("chaos: interrupted");
            return 1;
        } finally {
            deleteWorkDir();
        }
    }

    private int chaos(int seconds, Path routes, EmbeddedDatabase embedded) throws InterruptedException {
        token = simulator.addBot(BOT_ID, "CHAOS" + Long.toHexString(ThreadLocalRandom.current().nextLong()), "chaos_bot");
        simulator.setAudit(new InboxAudit(db));
        simulator.setClientResolver(new SocketOwners(URI.create(simulator.url()).getPort(), this::runningProcesses)::owner);
        simulator.rateLimitSends(token, 0.1, 1);
        String signingSecret = "chaos-signing-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
        Map<String, String> env = new HashMap<>();
        env.put("CHAT_INTAKE_DB_URL", embedded.jdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", embedded.user());
        env.put("CHAT_INTAKE_DB_PASSWORD", embedded.password().reveal());
        env.put("CHAT_INTAKE_DB_SCHEMA", DatabaseSchema.DEFAULT);
        env.put("CHAT_INTAKE_DB_POOL_SIZE", "6");
        env.put("CHAT_INTAKE_HTTP_HOST", "127.0.0.1");
        env.put("CHAT_INTAKE_ROUTES_DIR", routes.toString());
        env.put("CHAT_INTAKE_ROUTES_RELOAD", "false");
        env.put("TELEGRAM_BOT_TOKEN", token);
        env.put("TELEGRAM_API_URL", simulator.url());
        env.put("TELEGRAM_POLL_TIMEOUT_SECONDS", "1");
        // A killed poller's lease passes on after this; its last long poll (1 s, a slow answer 1.5 s more) ended long before.
        env.put("TELEGRAM_LEASE_SECONDS", "8");
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        env.put("TELEGRAM_BACKOFF_CAP_MILLIS", "2000");
        env.put("UNIFYPORT_SIGNING_SECRETS", signingSecret);
        env.put("ALBUMS_TELEGRAM_QUIET_PERIOD_SECONDS", "2");
        env.put("ALBUMS_QUIET_PERIOD_SECONDS", "10");
        env.put("WORK_POLL_INTERVAL_MILLIS", "200");
        env.put("WORK_CONCURRENCY", "2");
        for (int i = 1; i <= REPLICAS; i++) {
            replicas.add(new Replica(i, workDir, env));
        }
        long started = System.nanoTime();
        replicas.get(0).start();
        if (!replicas.get(0).awaitReady()) {
            return fail(replicas.get(0), "did not become ready");
        }
        replicas.subList(1, REPLICAS).forEach(Replica::start);
        for (Replica replica : replicas) {
            if (!replica.awaitReady()) {
                return fail(replica, "did not become ready");
            }
        }
        say("Started PostgreSQL in " + workDir + ", the Bot API simulator with @chaos_bot and " + REPLICAS + " runners on HTTP ports "
                + replicas.stream().map(r -> Integer.toString(r.port)).toList() + " (ready after "
                + Duration.ofNanos(System.nanoTime() - started).toSeconds() + " s).");

        List<SignedDeliverySender> senders = replicas.stream().map(r -> new SignedDeliverySender(
                URI.create("http://127.0.0.1:" + r.port + "/webhooks/unifyport"), Secret.of(signingSecret),
                java.time.Clock.systemUTC(), Duration.ofSeconds(10))).toList();
        List<Thread> feeders = List.of(
                thread("chaos-telegram", this::feedTelegram),
                thread("chaos-faults", this::injectFaults),
                thread("chaos-unifyport", () -> feedUnifyPort(senders)));
        say("Feeding: Telegram texts (each answered by the shipped echo handler), channel posts and albums of " + ALBUM_SIZE
                + " photos; UnifyPort texts and albums of " + ALBUM_SIZE + " (children out of order) to a random runner, redelivered"
                + " to another while one is down. Faults: getUpdates answers 500, 429 and slow at random, 10% of sendMessage 429.");

        long end = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
        int kills = 0;
        int pollerKills = 0;
        while (System.nanoTime() < end) {
            Thread.sleep(ThreadLocalRandom.current().nextLong(3_000, 6_000));
            // Every third kill hits the poller, so each run sees the poll lease pass on after a kill -9.
            Replica poller = kills % 3 == 2 ? pollLeaseHolder() : null;
            Replica victim = poller != null ? poller : replicas.get(ThreadLocalRandom.current().nextInt(REPLICAS));
            if (victim == pollLeaseHolder()) {
                pollerKills++;
            }
            killedAt.add(Instant.now());
            victim.kill9();
            victim.start();
            kills++;
        }
        feeding.set(false);
        for (Thread feeder : feeders) {
            feeder.join();
        }
        simulator.clearFaults(token);
        simulator.rateLimitSends(token, 0, 1);
        say("Chaos over after " + seconds + " s: " + kills + " kills (" + replicas.stream().map(r -> "runner " + r.index + ": "
                + r.kills).toList() + "), " + pollerKills + " of them of the runner holding the poll lease. Sent " + texts.get() + " texts and " + updates.get() + " updates in all (" + telegramAlbums.get()
                + " Telegram albums), " + acceptedEvents.size() + " UnifyPort events (" + unifyportAlbums.get() + " albums, "
                + redeliveries.get() + " redeliveries); " + faultsInjected.get() + " getUpdates faults injected.");

        for (Replica replica : replicas) {
            if (!replica.process.isAlive()) {
                replica.start();
            }
            if (!replica.awaitReady()) {
                return fail(replica, "did not become ready after the chaos");
            }
        }
        long settleStart = System.nanoTime();
        boolean settled = await(SETTLE_WAIT, this::settled);
        say((settled ? "Settled" : "NOT settled") + " after " + Duration.ofNanos(System.nanoTime() - settleStart).toSeconds()
                + " s with all " + REPLICAS + " runners up: " + count("SELECT count(*) FROM work_item WHERE state NOT IN ('done', 'parked')")
                + " work items unfinished, " + simulator.queued(token) + " updates still queued at the simulator; "
                + count("SELECT count(*) FROM runner_heartbeat") + " processes beat in runner_heartbeat during the run.");
        if (!settled) {
            problems.add("the run did not settle within " + SETTLE_WAIT.toSeconds() + " s");
        }
        checks();
        if (!problems.isEmpty()) {
            out.println("problems:");
            problems.forEach(p -> out.println("  - " + p));
        }
        boolean passed = problems.isEmpty();
        out.println("chaos verdict: " + (passed ? "PASSED" : "FAILED") + " (" + kills + " kills in " + seconds + " s, "
                + problems.size() + " problem(s))");
        return passed ? 0 : 1;
    }

    /** pid to name of the runner processes alive now. */
    private Map<Long, String> runningProcesses() {
        Map<Long, String> running = new HashMap<>();
        for (Replica replica : replicas) {
            Process process = replica.process;
            if (process != null && process.isAlive()) {
                running.put(process.pid(), "runner " + replica.index + " (pid " + process.pid() + ")");
            }
        }
        return running;
    }

    /** Polls of two processes in flight at one instant (a poll lasts from its arrival to its answer). */
    static List<String> overlappingPolls(List<BotApiSimulator.Poll> polls) {
        List<BotApiSimulator.Poll> byStart = polls.stream().sorted(Comparator.comparing(BotApiSimulator.Poll::start)).toList();
        List<String> overlaps = new ArrayList<>();
        for (int i = 0; i < byStart.size(); i++) {
            BotApiSimulator.Poll a = byStart.get(i);
            for (int j = i + 1; j < byStart.size() && byStart.get(j).start().isBefore(a.end()); j++) {
                BotApiSimulator.Poll b = byStart.get(j);
                if (!a.client().equals(b.client())) {
                    overlaps.add(a.client() + " " + a.start() + ".." + a.end() + " and " + b.client() + " " + b.start() + ".." + b.end());
                }
            }
        }
        return overlaps;
    }

    /** The replica whose process holds the bot's poll lease now (its holder name carries the pid), or null. */
    private Replica pollLeaseHolder() {
        List<String> holder = texts("SELECT holder FROM telegram_poll_lease WHERE bot_id = " + BOT_ID + " AND expires_at > now()");
        String[] parts = holder.isEmpty() ? new String[0] : holder.get(0).split(":");
        return parts.length < 2 ? null : replicas.stream().filter(r -> Long.toString(r.process.pid()).equals(parts[1])).findFirst().orElse(null);
    }

    private boolean settled() {
        return simulator.queued(token) == 0
                && count("SELECT count(*) FROM telegram_update WHERE bot_id = " + BOT_ID) == updates.get()
                && count("SELECT count(*) FROM work_item WHERE state NOT IN ('done', 'parked')") == 0
                && count("SELECT count(*) FROM work_staged") == 0
                && count("SELECT count(*) FROM webhook_event WHERE derived_at IS NULL") == 0
                // open albums include decided ones with a late child waiting out its quiet period
                && count("SELECT count(*) FROM album WHERE decide_after IS NOT NULL") == 0
                && count("SELECT count(*) FROM album_decision") == count("SELECT count(*) FROM work_item WHERE kind = 'album-decision'");
    }

    // ---- the checks ----

    private void checks() {
        int maxPolls = simulator.maxConcurrentPolls(token);
        List<Instant> waitingTogether = simulator.concurrentPolls(token);
        List<BotApiSimulator.Poll> polls = simulator.polls(token);
        List<String> overlaps = overlappingPolls(polls);
        long pollers = polls.stream().map(BotApiSimulator.Poll::client).filter(c -> c.startsWith("runner ")).distinct().count();
        long unnamed = polls.stream().filter(p -> !p.client().startsWith("runner ")).count();
        check(overlaps.isEmpty() && maxPolls <= 1 && waitingTogether.isEmpty() && simulator.conflicts(token) == 0,
                "One poller per bot at every instant: " + polls.size() + " getUpdates (besides the faulted ones) from " + pollers + " processes (each named"
                        + " by the connection's owner; " + unnamed + " unnamed: their process was gone before it could be looked up, killed as it asked; each counts as a"
                        + " process of its own), no two processes'"
                        + " polls in flight at once, at most " + maxPolls + " waiting at once, " + simulator.conflicts(token)
                        + " polls displaced (409); the poll lease changed hands "
                        + (count("SELECT fencing_token FROM telegram_poll_lease WHERE bot_id = " + BOT_ID) - 1) + " times.",
                "two pollers of the bot at once: " + limit(overlaps) + (waitingTogether.isEmpty() ? "" : ", waiting together at "
                        + limit(waitingTogether.stream().map(Instant::toString).toList())));

        long stored = count("SELECT count(*) FROM telegram_update WHERE bot_id = " + BOT_ID);
        long distinct = count("SELECT count(DISTINCT update_id) FROM telegram_update WHERE bot_id = " + BOT_ID);
        check(stored == updates.get() && distinct == stored && simulator.violations().isEmpty() && simulator.queued(token) == 0,
                "Every Telegram update stored exactly once: " + updates.get() + " sent, " + stored + " stored (" + distinct
                        + " distinct); none confirmed before it was stored (" + simulator.violations().size() + " violations).",
                "updates: " + simulator.violations());

        long events = count("SELECT count(*) FROM webhook_event WHERE event_id LIKE 'evt_chaos_%'");
        long distinctEvents = count("SELECT count(DISTINCT event_id) FROM webhook_event WHERE event_id LIKE 'evt_chaos_%'");
        long deliveries = count("SELECT coalesce(sum(delivery_count), 0) FROM webhook_event WHERE event_id LIKE 'evt_chaos_%'");
        check(events == acceptedEvents.size() && distinctEvents == events,
                "Every UnifyPort event stored exactly once: " + acceptedEvents.size() + " accepted, " + events + " stored ("
                        + distinctEvents + " distinct), " + deliveries + " deliveries recorded.",
                "webhook events: stored " + events + " of " + acceptedEvents.size());

        checkReplies();
        checkAlbums();

        List<String> parkedOther = texts("SELECT kind || ' ' || source_key || ': ' || coalesce(last_error, '') FROM work_item"
                + " WHERE state = 'parked' AND coalesce(last_error, '') NOT LIKE '%" + STARTED_NEVER_RECORDED + "%'");
        // With its lane, so that a stall can be read from the report: due when, from which head, held by whom.
        List<String> unfinished = texts("""
                SELECT w.kind || ' ' || w.source_key || ' ' || w.state || ' (item ' || w.id || ', attempts ' || w.attempts
                       || coalesce(', lane due ' || l.due_at::text, ', lane idle') || ', head ' || coalesce(l.head_id::text, '-')
                       || coalesce(', held by ' || l.claimed_by, '') || ')'
                  FROM work_item w LEFT JOIN work_lane l ON l.kind = w.kind AND l.chat_key = w.chat_key
                 WHERE w.state NOT IN ('done', 'parked')""");
        List<String> duplicates = texts("SELECT kind || ' ' || source_key FROM work_item GROUP BY kind, source_key HAVING count(*) > 1");
        check(parkedOther.isEmpty() && unfinished.isEmpty() && duplicates.isEmpty(),
                "Every work item done once: " + count("SELECT count(*) FROM work_item WHERE state = 'done'") + " done, "
                        + count("SELECT count(*) FROM work_item WHERE state = 'parked'") + " parked, all with \""
                        + STARTED_NEVER_RECORDED + "\"; none unfinished, none twice. By kind: "
                        + texts("SELECT kind || ' ' || count(*) FROM work_item GROUP BY kind ORDER BY kind") + ".",
                "work: parked without being injected to fail " + limit(parkedOther) + ", unfinished " + limit(unfinished)
                        + ", scheduled twice " + limit(duplicates));
    }

    /** Each text answered exactly once, except those parked because a kill fell between sendMessage and its record. */
    private void checkReplies() {
        Map<String, Integer> answers = new HashMap<>();
        simulator.sentMessages(token).forEach(m -> answers.merge(m.path("text").asText(), 1, Integer::sum));
        Set<String> parked = Set.copyOf(texts("SELECT 'Received: ' || (t.payload -> 'message' ->> 'text') FROM work_item w"
                + " JOIN telegram_update t ON t.id = w.source_id WHERE w.kind = 'telegram-update' AND w.state = 'parked'"));
        List<String> wrong = new ArrayList<>();
        int parkedAnswered = 0;
        for (int n = 1; n <= texts.get(); n++) {
            String reply = "Received: " + text(n);
            int times = answers.getOrDefault(reply, 0);
            if (parked.contains(reply)) {
                parkedAnswered += times;
                if (times > 1) {
                    wrong.add(reply + " (parked) x" + times);
                }
            } else if (times != 1) {
                wrong.add(reply + " x" + times);
            }
            answers.remove(reply);
        }
        wrong.addAll(answers.keySet().stream().map(r -> r + " (never asked for)").toList());
        // Started but never recorded is a kill's doing only: one fell within seconds after the effect began.
        List<Instant> started = texts("SELECT to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
                + " FROM outbound_effect WHERE state = 'started'").stream().map(Instant::parse).toList();
        List<Instant> unexplained = started.stream().filter(at -> killedAt.stream().noneMatch(k -> !k.isBefore(at)
                && k.isBefore(at.plus(KILL_WINDOW)))).toList();
        wrong.addAll(unexplained.stream().map(at -> "effect started at " + at + " left unrecorded with no kill within "
                + KILL_WINDOW.toSeconds() + " s").toList());
        long effectsDone = count("SELECT count(*) FROM outbound_effect WHERE state = 'done'");
        long effectsStarted = count("SELECT count(*) FROM outbound_effect WHERE state = 'started'");
        check(wrong.isEmpty() && effectsDone == texts.get() - parked.size() && effectsStarted == parked.size(),
                "Every text answered exactly once: " + texts.get() + " texts, " + simulator.sentMessages(token).size() + " replies, "
                        + simulator.sendAttempts(token).size() + " sendMessage calls (429s retried); the ledger has " + effectsDone
                        + " effects done and " + effectsStarted + " started but never recorded, which are exactly the "
                        + parked.size() + " items parked for reconciliation (" + parkedAnswered + " of them did reach the chat), each"
                        + " begun less than " + KILL_WINDOW.toSeconds() + " s before a kill.",
                "replies: " + limit(wrong) + "; ledger " + effectsDone + " done, " + effectsStarted + " started, " + parked.size()
                        + " parked");
    }

    /** Every album decided once per version (no version twice, none skipped), its latest version with all its children. */
    private void checkAlbums() {
        List<String> wrong = texts("SELECT a.album_id || ': versions ' || count(d.id) || ' of ' || a.decided_version || ', latest with '"
                + " || coalesce(max(jsonb_array_length(d.child_ids)) FILTER (WHERE d.version = a.decided_version), 0) || ' children'"
                + " FROM album a LEFT JOIN album_decision d USING (album_key) GROUP BY a.album_key, a.album_id, a.decided_version"
                + " HAVING count(d.id) <> a.decided_version OR count(DISTINCT d.version) <> count(d.id)"
                + " OR coalesce(max(jsonb_array_length(d.child_ids)) FILTER (WHERE d.version = a.decided_version), 0) <> " + ALBUM_SIZE);
        List<String> unhandled = texts("SELECT d.album_key || ':' || d.version || ' handled ' || count(w.id) || ' times'"
                + " FROM album_decision d LEFT JOIN work_item w ON w.kind = 'album-decision' AND w.source_id = d.id AND w.state = 'done'"
                + " GROUP BY d.id HAVING count(w.id) <> 1");
        List<String> unifyportTwice = texts("SELECT album_id || ': ' || decided_version || ' versions' FROM album"
                + " WHERE provider <> '" + TelegramChannel.PROVIDER + "' AND decided_version <> 1");
        long albums = count("SELECT count(*) FROM album");
        long expected = telegramAlbums.get() + unifyportAlbums.get();
        check(wrong.isEmpty() && unhandled.isEmpty() && unifyportTwice.isEmpty() && albums == expected,
                "Every album decided once per version with all its children: " + albums + " albums (" + expected + " sent), "
                        + count("SELECT count(*) FROM album_decision") + " decisions, each handled once; decisions by kind "
                        + texts("SELECT kind || ' ' || count(*) FROM album_decision GROUP BY kind ORDER BY kind")
                        + " (a Telegram album split by a kill longer than its quiet period gets a late version).",
                "albums: " + limit(wrong) + "; decisions not handled once " + limit(unhandled) + "; UnifyPort albums not decided once "
                        + limit(unifyportTwice) + "; " + albums + " albums of " + expected);
    }

    private void check(boolean holds, String report, String otherwise) {
        say((holds ? "[ok] " : "[FAILED] ") + report);
        if (!holds) {
            problems.add(otherwise);
        }
    }

    // ---- the outside world ----

    private static String text(int n) {
        return "chaos text " + n;
    }

    private void feedTelegram() {
        int round = 0;
        while (feeding.get()) {
            round++;
            int n = texts.incrementAndGet();
            // A chat of its own per text: the per-chat send limit (1/s) does not slow the replies down.
            enqueued(simulator.enqueueText(token, 10_000 + n, text(n)));
            if (round % 5 == 0) {
                enqueued(simulator.enqueueChannelPost(token, 300, "chaos post " + round));
            }
            if (round % 25 == 0) {
                int album = telegramAlbums.incrementAndGet();
                for (int part = 1; part <= ALBUM_SIZE; part++) {
                    String fileId = "chaos-photo-" + album + "-" + part;
                    simulator.addFile(token, fileId, ("photo " + fileId + " ").repeat(200).getBytes(StandardCharsets.UTF_8));
                    enqueued(simulator.enqueueMediaGroupPart(token, 20_000 + album, "chaos-album-" + album, fileId, null));
                }
            }
            pause(150);
        }
    }

    private void enqueued(long updateId) {
        if (updateId < 0) {
            problems.add("the simulator withheld an update (allowed_updates)");
        } else {
            updates.incrementAndGet();
        }
    }

    private void injectFaults() {
        while (feeding.get()) {
            Fault fault = switch (ThreadLocalRandom.current().nextInt(3)) {
                case 0 -> Fault.serverError();
                case 1 -> Fault.rateLimit(1);
                default -> Fault.slow(Duration.ofMillis(1_500));
            };
            simulator.injectFault(token, fault);
            faultsInjected.incrementAndGet();
            // Queued faults meet the next polls: a few per second would keep the poller in backoff all the time.
            pause(ThreadLocalRandom.current().nextLong(1_500, 4_000));
        }
    }

    private void feedUnifyPort(List<SignedDeliverySender> senders) {
        int round = 0;
        while (feeding.get()) {
            round++;
            if (round % 8 == 0) {
                int album = unifyportAlbums.incrementAndGet();
                List<Integer> order = new ArrayList<>(List.of(1, 2, 3));
                Collections.shuffle(order);
                for (int index : order) {
                    deliver(senders, "evt_chaos_album_" + album + "_" + index, "{\"conversation\":{\"id\":\"c-album-" + album
                            + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u" + album + "\",\"type\":\"user\"},\"message\":{\"id\":\"m-album-"
                            + album + "-" + index + "\",\"type\":\"image\",\"direction\":\"in\",\"sent_at\":\"2026-07-01T09:15:00Z\","
                            + "\"album\":{\"id\":\"chaos-unifyport-album-" + album + "\",\"index\":" + index + ",\"total\":" + ALBUM_SIZE + "}}}");
                }
            } else {
                deliver(senders, "evt_chaos_text_" + round, "{\"conversation\":{\"id\":\"c-" + round % 20 + "\",\"type\":\"user\"},"
                        + "\"sender\":{\"id\":\"u1\",\"type\":\"user\"},\"message\":{\"id\":\"m-" + round + "\",\"type\":\"text\","
                        + "\"direction\":\"in\",\"text\":\"chaos webhook " + round + "\",\"sent_at\":\"2026-07-01T09:15:00Z\"}}");
            }
            pause(200);
        }
    }

    /** As the provider does: the same event id until a 200, here to whichever runner is up. */
    private void deliver(List<SignedDeliverySender> senders, String eventId, String data) {
        byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_chaos", Instant.now(), data);
        int first = ThreadLocalRandom.current().nextInt(senders.size());
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        for (int attempt = 0; System.nanoTime() < deadline; attempt++) {
            SignedDeliverySender sender = senders.get((first + attempt) % senders.size());
            SignedDeliverySender.Response response = sender.post(sender.sign(eventId, body, TimestampForm.UNIX_SECONDS));
            if (response.status() == 200) {
                acceptedEvents.add(eventId);
                redeliveries.addAndGet(attempt);
                return;
            }
            if (!response.retryable()) {
                problems.add("event " + eventId + " refused: " + response.status() + " " + response.body());
                return;
            }
            pause(100);
        }
        problems.add("event " + eventId + " not accepted by any runner within 60 s");
    }

    // ---- plumbing ----

    private int fail(Replica replica, String what) {
        ChildRunner.printTail(replica.log, out);
        out.println("chaos verdict: FAILED (runner " + replica.index + " " + what + ")");
        return 1;
    }

    private void say(String line) {
        out.printf("%2d. %s%n", ++step, line);
        out.flush();
    }

    private static Thread thread(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.start();
        return thread;
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static boolean await(Duration wait, BooleanSupplier condition) {
        long deadline = System.nanoTime() + wait.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline || Thread.currentThread().isInterrupted()) {
                return false;
            }
            pause(500);
        }
        return true;
    }

    private long count(String sql) {
        List<String> values = texts(sql);
        return values.isEmpty() || values.get(0) == null ? -1 : Long.parseLong(values.get(0));
    }

    private List<String> texts(String sql) {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            List<String> values = new ArrayList<>();
            while (rs.next()) {
                values.add(rs.getString(1));
            }
            return values;
        } catch (SQLException e) {
            throw new IllegalStateException("chaos: query failed: " + e.getMessage(), e);
        }
    }

    private static String limit(List<String> values) {
        return values.size() <= 10 ? values.toString() : values.subList(0, 10) + " and " + (values.size() - 10) + " more";
    }

    private synchronized void stopReplicas() {
        replicas.stream().filter(r -> r.process != null).forEach(r -> r.process.destroy());
        replicas.stream().filter(r -> r.process != null).forEach(r -> ChildRunner.waitFor(r.process));
    }

    private void deleteWorkDir() {
        try {
            DirectoryTree.delete(workDir);
        } catch (IOException e) {
            out.println("chaos: could not remove " + workDir + ": " + e.getMessage());
        }
    }

    /** One runner: this jar as a child process with its own HTTP port and data directory; killed and restarted in place. */
    private static final class Replica {
        final int index;
        final int port = ChildRunner.freePort();
        final Path log;
        final Map<String, String> env;
        volatile Process process;
        int kills;

        Replica(int index, Path workDir, Map<String, String> shared) {
            this.index = index;
            this.log = workDir.resolve("runner-" + index + ".log");
            this.env = new LinkedHashMap<>(shared);
            env.put("CHAT_INTAKE_HTTP_PORT", Integer.toString(port));
            env.put("CHAT_INTAKE_DATA_DIR", workDir.resolve("runner-" + index).toString());
        }

        void start() {
            process = ChildRunner.start(env, log, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");
        }

        boolean awaitReady() {
            return await(READY_WAIT, () -> !process.isAlive() || ChildRunner.ready(port)) && process.isAlive();
        }

        void kill9() {
            process.destroyForcibly();
            ChildRunner.waitFor(process);
            kills++;
        }


    }
}
