package io.chatintake.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongFunction;

/**
 * A Telegram Bot API server on loopback that behaves as {@code contracts/telegram-bot-api.md}
 * describes, for tests, the demo and benchmarks: getMe, getUpdates (offset confirmation, limit
 * clamp, long poll, negative offset, the 409 displacement rule, 24 h expiry by an adjustable
 * clock, offsets outside the queue treated as its head), getWebhookInfo, setWebhook, deleteWebhook,
 * getFile and file downloads ({@code /file/bot<token>/<file_path>}) of files a test registered,
 * sendMessage (recording every call; 403 for blocked chats and a share of 429s when asked).
 * <p>
 * It records every request, lets a test inject faults, and at every getUpdates that confirms
 * updates asks a {@link ConfirmationAudit} whether those updates are already stored: a
 * confirmed-but-unstored update is the loss chat-intake exists to prevent.
 */
public final class BotApiSimulator implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    public static final Duration RETENTION = Duration.ofHours(24);

    /** Checks updates about to be confirmed; returns the ids of those not stored. */
    public interface ConfirmationAudit {
        List<Long> missing(long botId, List<QueuedUpdate> confirmed);
    }

    public record QueuedUpdate(long updateId, String json, Instant enqueuedAt) {
    }

    /** @param allowedUpdates the getUpdates {@code allowed_updates} parameter; null when it was left out */
    /** A sendMessage the simulator accepted: to which chat, what, and when it arrived ({@code nanos}: System.nanoTime()). */
    public record Send(long chatId, String text, Instant at, long nanos) {
    }

    private static final long SECOND = 1_000_000_000L;

    public record Request(String method, long botId, Long offset, List<String> allowedUpdates, Instant at) {
    }

    /** Names the process behind a request's connection; the simulator itself only sees its address. */
    public interface ClientResolver {
        /** @return a name for the client process, or null when it cannot tell */
        String client(InetSocketAddress remote);
    }

    /** One getUpdates from the moment it arrived to its answer (or its 409, or its dropped connection). */
    public record Poll(String client, Instant start, Instant end) {
    }

    /** Sent only when asked for: Telegram's default {@code allowed_updates} leaves these out. */
    public static final List<String> OPT_IN_TYPES = List.of("chat_member", "message_reaction", "message_reaction_count");

    public enum FaultKind { HTTP_500, RATE_LIMIT, DROP_AFTER_APPLY, SLOW }

    public record Fault(FaultKind kind, int retryAfterSeconds, Duration delay) {
        public static Fault serverError() {
            return new Fault(FaultKind.HTTP_500, 0, Duration.ZERO);
        }

        public static Fault rateLimit(int retryAfterSeconds) {
            return new Fault(FaultKind.RATE_LIMIT, retryAfterSeconds, Duration.ZERO);
        }

        /** The offset is applied (updates confirmed), then the connection closes with no answer. */
        public static Fault dropAfterApply() {
            return new Fault(FaultKind.DROP_AFTER_APPLY, 0, Duration.ZERO);
        }

        public static Fault slow(Duration delay) {
            return new Fault(FaultKind.SLOW, 0, delay);
        }
    }

    private final class Bot {
        final long id;
        final String token;
        final String username;
        final Deque<QueuedUpdate> queue = new ArrayDeque<>();
        final Deque<Fault> faults = new ArrayDeque<>();
        long nextId = 1;
        String webhookUrl = "";
        int waitingPolls;
        int pollGeneration;
        int maxConcurrentPolls;
        /** When a getUpdates began waiting while another was still waiting: two pollers at one instant. */
        final List<Instant> concurrentPolls = new ArrayList<>();
        final List<Poll> polls = new ArrayList<>();
        int conflicts;
        /** The last allowed_updates a getUpdates sent; null: never set, Telegram's default. */
        List<String> allowedUpdates;
        int withheld;
        final List<JsonNode> sent = new ArrayList<>();
        final List<JsonNode> sendAttempts = new ArrayList<>();
        final Set<Long> blockedChats = ConcurrentHashMap.newKeySet();
        double rateLimitedShare;
        /** sendMessage calls that reached the rate-limited share's check since it was set. */
        long rateLimitChecks;
        int rateLimitRetryAfter;
        /** Telegram's send limits, when enforced (0: not): accepted sends per second per bot, and the gap per chat. */
        int perBotPerSecond;
        long chatGapNanos;
        final Deque<Long> lastSecondSends = new ArrayDeque<>();
        final Map<Long, Long> lastSendToChat = new HashMap<>();
        final List<Send> sendLog = new ArrayList<>();
        int refusedByLimits;
        /** sendMessage calls wait before they are applied while this is set ({@link #holdSends}); guarded by the bot. */
        boolean sendsHeld;
        int heldSends;

        /** The retry_after this call of the rate-limited share is answered with, or 0: not refused. */
        int rateLimitedSend() {
            long checked = rateLimitChecks++;
            boolean refused = Math.floor((checked + 1) * rateLimitedShare) > Math.floor(checked * rateLimitedShare);
            return refused ? Math.max(1, rateLimitRetryAfter) : 0;
        }

        /** Null when a send to this chat may be accepted now, else the seconds to wait (retry_after). */
        Integer limitRefusal(long chatId, long now) {
            while (!lastSecondSends.isEmpty() && now - lastSecondSends.peekFirst() >= SECOND) {
                lastSecondSends.pollFirst();
            }
            long wait = 0;
            if (perBotPerSecond > 0 && lastSecondSends.size() >= perBotPerSecond) {
                wait = SECOND - (now - lastSecondSends.peekFirst());
            }
            Long last = lastSendToChat.get(chatId);
            if (chatGapNanos > 0 && last != null && now - last < chatGapNanos) {
                wait = Math.max(wait, chatGapNanos - (now - last));
            }
            return wait == 0 ? null : (int) Math.max(1, (wait + SECOND - 1) / SECOND);
        }
        final Map<String, byte[]> files = new ConcurrentHashMap<>();
        // File links: each getFile issues a new path; links a test expired answer 404 as Telegram's do after about an hour.
        final Map<String, Integer> linksToExpire = new HashMap<>();
        final Set<String> expiredLinks = ConcurrentHashMap.newKeySet();
        int linksIssued;

        Bot(long id, String token, String username) {
            this.id = id;
            this.token = token;
            this.username = username;
        }
    }

    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "bot-api-simulator");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, Bot> botsByToken = new ConcurrentHashMap<>();
    /** Appended on every request: a copy-on-write list would copy the whole log each time, quadratic over a long run. */
    private final Queue<Request> requests = new ConcurrentLinkedQueue<>();
    private final List<String> violations = new CopyOnWriteArrayList<>();
    private final AtomicInteger messageIds = new AtomicInteger(1);
    private volatile Clock clock = Clock.systemUTC();
    private volatile ConfirmationAudit audit;
    private volatile ClientResolver clientResolver;
    /** Methods this server does not have, with the status it answers them (as Bot API emulators do). */
    private final Map<String, Integer> droppedMethods = new ConcurrentHashMap<>();

    private BotApiSimulator(HttpServer server) {
        this.server = server;
    }

    public static BotApiSimulator start() {
        return start(0);
    }

    public static BotApiSimulator start(int port) {
        // Without TCP_NODELAY each answer waits for the client's delayed ACK, which would cap how fast a worker's
        // replies go. The JDK server reads this once, when its first server starts.
        if (System.getProperty("sun.net.httpserver.nodelay") == null) {
            System.setProperty("sun.net.httpserver.nodelay", "true");
        }
        try {
            HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 100);
            BotApiSimulator simulator = new BotApiSimulator(server);
            server.createContext("/", simulator::handle);
            server.setExecutor(simulator.executor);
            server.start();
            return simulator;
        } catch (IOException e) {
            throw new IllegalStateException("the Bot API simulator cannot listen: " + e.getMessage(), e);
        }
    }

    /** The base URL to configure as {@code telegram.api-url}. */
    public String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    public void setClock(Clock clock) {
        this.clock = clock;
    }

    public void setAudit(ConfirmationAudit audit) {
        this.audit = audit;
    }

    /** From now on every getUpdates is recorded as a {@link Poll} of the client this names ({@link #polls}). */
    public void setClientResolver(ClientResolver resolver) {
        this.clientResolver = resolver;
    }

    /** Registers a bot; its token is {@code <id>:<secret>} as Telegram's are. */
    public synchronized String addBot(long id, String secret, String username) {
        String token = id + ":" + secret;
        botsByToken.put(token, new Bot(id, token, username));
        return token;
    }

    // ---- what a test does to the queue ----

    /**
     * Enqueues an update built from its id; returns the id, or -1 when the bot's allowed_updates
     * leaves its type out: Telegram then never creates it (see {@link #withheld}).
     */
    public long enqueue(String token, LongFunction<ObjectNode> updateForId) {
        Bot bot = bot(token);
        synchronized (bot) {
            ObjectNode update = updateForId.apply(bot.nextId).put("update_id", bot.nextId);
            return add(bot, update.toString(), update);
        }
    }

    /**
     * Enqueues an update written as JSON text, sent exactly so: for text a tree cannot produce, such
     * as a lone surrogate escape (backslash-ud83d). The text must carry the id it is given.
     */
    public long enqueueJson(String token, LongFunction<String> jsonForId) {
        Bot bot = bot(token);
        synchronized (bot) {
            String json = jsonForId.apply(bot.nextId);
            try {
                return add(bot, json, JSON.readTree(json));
            } catch (IOException e) {
                throw new IllegalArgumentException("an update must be JSON: " + e.getMessage(), e);
            }
        }
    }

    private long add(Bot bot, String json, JsonNode update) {
        // An update holds update_id and one field named after its type.
        if (bot.allowedUpdates == null ? OPT_IN_TYPES.stream().anyMatch(update::has) : bot.allowedUpdates.stream().noneMatch(update::has)) {
            bot.withheld++;
            return -1;
        }
        long id = bot.nextId++;
        bot.queue.addLast(new QueuedUpdate(id, json, clock.instant()));
        bot.notifyAll();
        return id;
    }

    public long enqueueText(String token, long chatId, String text) {
        return enqueue(token, id -> update(id, "message", message(chatId, text)));
    }

    /** A post in a channel the bot administers: stored and handled like any update, never answered. */
    public long enqueueChannelPost(String token, long chatId, String text) {
        return enqueue(token, id -> update(id, "channel_post", message(-Math.abs(chatId), text)));
    }

    /** One part of an album: Telegram sends each as its own update with a shared media_group_id. */
    public long enqueueMediaGroupPart(String token, long chatId, String mediaGroupId, String fileId, String caption) {
        return enqueue(token, id -> {
            ObjectNode message = message(chatId, null);
            message.put("media_group_id", mediaGroupId);
            message.putArray("photo").addObject().put("file_id", fileId).put("file_unique_id", fileId + "-u")
                    .put("width", 1280).put("height", 960);
            if (caption != null) {
                message.put("caption", caption);
            }
            return update(id, "message", message);
        });
    }

    /** An update of a type no Bot API release has yet: intake must still store it. */
    public long enqueueUnknownType(String token, String type) {
        return enqueue(token, id -> update(id, type, JSON.createObjectNode().put("novelty", true).put("date", clock.instant().getEpochSecond())));
    }

    /** Telegram restarts ids at a random value after a week without updates; only possible with an empty queue. */
    public void jumpIds(String token, long nextId) {
        Bot bot = bot(token);
        synchronized (bot) {
            if (!bot.queue.isEmpty()) {
                throw new IllegalStateException("ids only restart while the queue is empty");
            }
            bot.nextId = nextId;
        }
    }

    public void setWebhook(String token, String url) {
        Bot bot = bot(token);
        synchronized (bot) {
            bot.webhookUrl = url;
            bot.notifyAll();
        }
    }

    /** Registers a file the bot can fetch: each getFile answers with a new {@code file_path} "files/<fileId>/<n>". */
    public void addFile(String token, String fileId, byte[] content) {
        bot(token).files.put(fileId, content.clone());
    }

    /**
     * The next {@code links} file paths getFile issues for this file have expired by the time they
     * are used (a download answers 404), as a Telegram link does about an hour after getFile.
     */
    public void expireNextFileLinks(String token, String fileId, int links) {
        Bot bot = bot(token);
        synchronized (bot) {
            bot.linksToExpire.merge(fileId, links, Integer::sum);
        }
    }

    public void injectFault(String token, Fault fault) {
        Bot bot = bot(token);
        synchronized (bot) {
            bot.faults.addLast(fault);
        }
    }

    /** Drops the faults not used yet: the server answers normally again. */
    /**
     * From now on this server lacks {@code method} and answers it {@code status} (404, or 500 as
     * telegram-test-api answers getWebhookInfo), for every bot.
     */
    public void dropMethod(String method, int status) {
        droppedMethods.put(method, status);
    }

    public void clearFaults(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            bot.faults.clear();
        }
    }

    public ObjectNode message(long chatId, String text) {
        ObjectNode message = JSON.createObjectNode();
        message.put("message_id", messageIds.getAndIncrement());
        message.put("date", clock.instant().getEpochSecond());
        message.putObject("chat").put("id", chatId).put("type", chatId < 0 ? "group" : "private");
        message.putObject("from").put("id", Math.abs(chatId)).put("is_bot", false).put("first_name", "Tester");
        if (text != null) {
            message.put("text", text);
        }
        return message;
    }

    private static ObjectNode update(long id, String type, ObjectNode content) {
        ObjectNode update = JSON.createObjectNode();
        update.put("update_id", id);
        update.set(type, content);
        return update;
    }

    // ---- what a test reads ----

    /** Every request so far, oldest first, as of this call. */
    public List<Request> requests() {
        return List.copyOf(requests);
    }

    public List<String> violations() {
        return Collections.unmodifiableList(violations);
    }

    public int queued(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return bot.queue.size();
        }
    }

    /** Updates not created because the bot's allowed_updates left their type out. */
    public int withheld(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return bot.withheld;
        }
    }

    public int maxConcurrentPolls(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return bot.maxConcurrentPolls;
        }
    }

    /** getUpdates calls of this bot waiting for updates right now. */
    public int waitingPolls(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return bot.waitingPolls;
        }
    }

    /** Every getUpdates of this bot since a client resolver was set, in the order they ended. */
    public List<Poll> polls(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return List.copyOf(bot.polls);
        }
    }

    /** The instants at which a getUpdates for this bot began while another was still waiting. */
    public List<Instant> concurrentPolls(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return List.copyOf(bot.concurrentPolls);
        }
    }

    /** What the bot sent with sendMessage (chat_id, text, ...), in order. */
    public List<JsonNode> sentMessages(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return List.copyOf(bot.sent);
        }
    }

    /** Every sendMessage request (chat_id, text, ...), refused ones included, in arrival order. */
    public List<JsonNode> sendAttempts(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return List.copyOf(bot.sendAttempts);
        }
    }

    /** sendMessage to this chat is answered 403 "bot was blocked by the user", as Telegram does. */
    public void blockChat(String token, long chatId) {
        bot(token).blockedChats.add(chatId);
    }

    /**
     * This share (0..1) of sendMessage calls is answered 429 with retry_after, spread evenly (at
     * 0.3, the 4th, 7th, 10th ... call), so a test sending a few messages sees its 429s every time.
     */
    public void rateLimitSends(String token, double share, int retryAfterSeconds) {
        Bot bot = bot(token);
        synchronized (bot) {
            bot.rateLimitRetryAfter = retryAfterSeconds;
            bot.rateLimitedShare = share;
            bot.rateLimitChecks = 0;
        }
    }

    /**
     * From now on sendMessage is answered 429 with retry_after above Telegram's limits: more than
     * {@code perBotPerSecond} accepted sends of the bot in any second, or a send to a chat less than
     * 1/{@code perChatPerSecond} s after the last one accepted for it.
     */
    public void enforceSendLimits(String token, int perBotPerSecond, double perChatPerSecond) {
        Bot bot = bot(token);
        synchronized (bot) {
            bot.perBotPerSecond = perBotPerSecond;
            bot.chatGapNanos = (long) (SECOND / perChatPerSecond);
        }
    }

    /**
     * From now on sendMessage calls wait, not yet applied, until {@link #releaseSends}: sends in
     * flight at a moment a test chooses (e.g. while it crashes the runner's database).
     */
    public void holdSends(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            bot.sendsHeld = true;
        }
    }

    /** sendMessage calls waiting in {@link #holdSends} right now. */
    public int heldSends(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return bot.heldSends;
        }
    }

    /** The held sendMessage calls are applied and answered now, and the next ones at once. */
    public void releaseSends(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            bot.sendsHeld = false;
            bot.notifyAll();
        }
    }

    /** Called holding the bot's monitor; closing the simulator ends the wait. */
    private static void awaitSendsReleased(Bot bot) {
        bot.heldSends++;
        try {
            while (bot.sendsHeld) {
                bot.wait();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            bot.heldSends--;
        }
    }

    /** Every sendMessage accepted, with its arrival time, in arrival order. */
    public List<Send> sends(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return List.copyOf(bot.sendLog);
        }
    }

    /** sendMessage calls answered 429 because they were above the limits of {@link #enforceSendLimits}. */
    public int refusedByLimits(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return bot.refusedByLimits;
        }
    }

    /** The most sends accepted within any one second (a sliding window over their arrival times). */
    public static int mostSendsInOneSecond(List<Send> sends) {
        long[] times = sends.stream().mapToLong(Send::nanos).sorted().toArray();
        int most = 0;
        for (int first = 0, last = 0; last < times.length; last++) {
            while (times[last] - times[first] >= SECOND) {
                first++;
            }
            most = Math.max(most, last - first + 1);
        }
        return most;
    }

    public int conflicts(String token) {
        Bot bot = bot(token);
        synchronized (bot) {
            return bot.conflicts;
        }
    }

    // ---- the HTTP side ----

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String path = exchange.getRequestURI().getPath();
            if (path.startsWith("/file/bot")) {
                serveFile(exchange, path.substring("/file/bot".length()));
                return;
            }
            int slash = path.indexOf('/', 1);
            if (!path.startsWith("/bot") || slash < 0) {
                answer(exchange, 404, error(404, "Not Found"));
                return;
            }
            String token = path.substring(4, slash);
            String method = path.substring(slash + 1);
            Bot bot = botsByToken.get(token);
            if (bot == null) {
                requests.add(new Request(method, -1, null, null, clock.instant()));
                answer(exchange, 401, error(401, "Unauthorized"));
                return;
            }
            JsonNode params = params(exchange);
            Long offset = params.has("offset") ? params.get("offset").asLong() : null;
            List<String> allowedUpdates = allowedUpdates(params);
            Instant arrived = clock.instant();
            requests.add(new Request(method, bot.id, offset, allowedUpdates, arrived));
            if (method.equals("getUpdates") && allowedUpdates != null) {
                synchronized (bot) {
                    bot.allowedUpdates = allowedUpdates; // sticky, as Telegram's
                }
            }
            Integer dropped = droppedMethods.get(method);
            if (dropped != null) {
                answer(exchange, dropped, error(dropped, dropped == 404 ? "Not Found" : "Internal Server Error"));
                return;
            }
            Fault fault = nextFault(bot, method);
            if (fault != null && fault.kind() == FaultKind.SLOW) {
                sleep(fault.delay());
            } else if (fault != null && fault.kind() == FaultKind.HTTP_500) {
                answer(exchange, 500, error(500, "Internal Server Error"));
                return;
            } else if (fault != null && fault.kind() == FaultKind.RATE_LIMIT) {
                ObjectNode body = error(429, "Too Many Requests: retry after " + fault.retryAfterSeconds());
                body.putObject("parameters").put("retry_after", fault.retryAfterSeconds());
                answer(exchange, 429, body);
                return;
            }
            switch (method) {
                case "getMe" -> answer(exchange, 200, ok(JSON.createObjectNode().put("id", bot.id).put("is_bot", true)
                        .put("first_name", bot.username).put("username", bot.username)));
                case "getUpdates" -> {
                    ClientResolver resolver = clientResolver;
                    if (resolver == null) {
                        getUpdates(exchange, bot, params, fault);
                    } else {
                        pollRecorded(exchange, bot, params, fault, resolver, arrived);
                    }
                }
                case "getWebhookInfo" -> {
                    ObjectNode info = JSON.createObjectNode();
                    synchronized (bot) {
                        expire(bot);
                        info.put("url", bot.webhookUrl).put("has_custom_certificate", false).put("pending_update_count", bot.queue.size());
                    }
                    answer(exchange, 200, ok(info));
                }
                case "setWebhook" -> {
                    setWebhook(bot.token, params.path("url").asText(""));
                    answer(exchange, 200, ok(JSON.getNodeFactory().booleanNode(true)));
                }
                case "deleteWebhook" -> {
                    synchronized (bot) {
                        bot.webhookUrl = "";
                        if (params.path("drop_pending_updates").asBoolean(false)) {
                            bot.queue.clear();
                        }
                    }
                    answer(exchange, 200, ok(JSON.getNodeFactory().booleanNode(true)));
                }
                case "sendMessage" -> {
                    long chatId = params.path("chat_id").asLong();
                    synchronized (bot) {
                        bot.sendAttempts.add(params);
                        awaitSendsReleased(bot);
                    }
                    if (bot.blockedChats.contains(chatId)) {
                        answer(exchange, 403, error(403, "Forbidden: bot was blocked by the user"));
                        return;
                    }
                    int rateLimited;
                    synchronized (bot) {
                        rateLimited = bot.rateLimitedSend();
                    }
                    if (rateLimited > 0) {
                        ObjectNode body = error(429, "Too Many Requests: retry after " + rateLimited);
                        body.putObject("parameters").put("retry_after", rateLimited);
                        answer(exchange, 429, body);
                        return;
                    }
                    Integer retryAfter;
                    synchronized (bot) {
                        long now = System.nanoTime();
                        retryAfter = bot.limitRefusal(chatId, now);
                        if (retryAfter == null) {
                            bot.lastSecondSends.addLast(now);
                            bot.lastSendToChat.put(chatId, now);
                            bot.sendLog.add(new Send(chatId, params.path("text").asText(""), clock.instant(), now));
                            bot.sent.add(params);
                        } else {
                            bot.refusedByLimits++;
                        }
                    }
                    if (retryAfter != null) {
                        ObjectNode body = error(429, "Too Many Requests: retry after " + retryAfter);
                        body.putObject("parameters").put("retry_after", retryAfter);
                        answer(exchange, 429, body);
                        return;
                    }
                    ObjectNode sent = message(params.path("chat_id").asLong(), params.path("text").asText(""));
                    sent.putObject("from").put("id", bot.id).put("is_bot", true).put("first_name", bot.username);
                    answer(exchange, 200, ok(sent));
                }
                case "getFile" -> {
                    String fileId = params.path("file_id").asText("");
                    byte[] content = bot.files.get(fileId);
                    if (content == null) {
                        answer(exchange, 400, error(400, "Bad Request: invalid file_id"));
                    } else {
                        String link;
                        synchronized (bot) {
                            link = "files/" + fileId + "/" + ++bot.linksIssued;
                            int toExpire = bot.linksToExpire.getOrDefault(fileId, 0);
                            if (toExpire > 0) {
                                bot.linksToExpire.put(fileId, toExpire - 1);
                                bot.expiredLinks.add(link);
                            }
                        }
                        answer(exchange, 200, ok(JSON.createObjectNode().put("file_id", fileId).put("file_unique_id", fileId + "-u")
                                .put("file_size", content.length).put("file_path", link)));
                    }
                }
                default -> answer(exchange, 404, error(404, "Not Found: method not found"));
            }
        } catch (RuntimeException e) {
            violations.add("simulator failure: " + e);
        }
    }

    /** @param arrived before a slow fault's delay: that delay counts as polling */
    private void pollRecorded(HttpExchange exchange, Bot bot, JsonNode params, Fault fault, ClientResolver resolver, Instant arrived)
            throws IOException {
        InetSocketAddress remote = exchange.getRemoteAddress();
        String client = resolver.client(remote);
        try {
            getUpdates(exchange, bot, params, fault);
        } finally {
            synchronized (bot) {
                bot.polls.add(new Poll(client != null ? client : "port " + remote.getPort(), arrived, clock.instant()));
            }
        }
    }

    private void getUpdates(HttpExchange exchange, Bot bot, JsonNode params, Fault fault) throws IOException {
        int limit = Math.max(1, Math.min(100, params.path("limit").asInt(100)));
        int timeout = Math.max(0, Math.min(50, params.path("timeout").asInt(0)));
        long offset = params.path("offset").asLong(0);
        List<QueuedUpdate> result;
        synchronized (bot) {
            if (!bot.webhookUrl.isEmpty()) {
                answer(exchange, 409, error(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"));
                return;
            }
            expire(bot);
            confirm(bot, offset);
            if (fault != null && fault.kind() == FaultKind.DROP_AFTER_APPLY) {
                exchange.getResponseBody().close();
                return;
            }
            // A newer request displaces the one already waiting, which gets the 409.
            int generation = ++bot.pollGeneration;
            bot.waitingPolls++;
            bot.maxConcurrentPolls = Math.max(bot.maxConcurrentPolls, bot.waitingPolls);
            if (bot.waitingPolls > 1) {
                bot.concurrentPolls.add(clock.instant());
            }
            bot.notifyAll();
            long deadline = System.nanoTime() + Duration.ofSeconds(timeout).toNanos();
            try {
                while (bot.queue.isEmpty() && bot.pollGeneration == generation && bot.webhookUrl.isEmpty()
                        && System.nanoTime() < deadline) {
                    try {
                        bot.wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    expire(bot);
                }
            } finally {
                bot.waitingPolls--;
            }
            if (bot.pollGeneration != generation) {
                bot.conflicts++;
                answer(exchange, 409, error(409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"));
                return;
            }
            result = new ArrayList<>();
            for (QueuedUpdate update : bot.queue) {
                if (result.size() == limit) {
                    break;
                }
                result.add(update);
            }
        }
        // The stored JSON goes out as it is: no parsing on the simulator's side of a benchmark.
        StringBuilder body = new StringBuilder(64 + result.stream().mapToInt(u -> u.json().length() + 1).sum());
        body.append("{\"ok\":true,\"result\":[");
        for (int i = 0; i < result.size(); i++) {
            body.append(i == 0 ? "" : ",").append(result.get(i).json());
        }
        answer(exchange, 200, body.append("]}").toString().getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Applies an offset as the real server does: negative keeps only the last |offset| updates;
     * an offset inside the queue confirms every update before it; one outside (below the head or
     * beyond the next id, e.g. after ids restarted) counts as the head and confirms nothing.
     */
    private void confirm(Bot bot, long offset) {
        if (offset < 0) {
            while (bot.queue.size() > -offset) {
                bot.queue.removeFirst();
            }
            return;
        }
        if (bot.queue.isEmpty() || offset < bot.queue.peekFirst().updateId() || offset > bot.nextId) {
            return;
        }
        List<QueuedUpdate> confirmed = new ArrayList<>();
        while (!bot.queue.isEmpty() && bot.queue.peekFirst().updateId() < offset) {
            confirmed.add(bot.queue.removeFirst());
        }
        ConfirmationAudit current = audit;
        if (current != null && !confirmed.isEmpty()) {
            List<Long> missing = current.missing(bot.id, confirmed);
            if (!missing.isEmpty()) {
                violations.add("getUpdates(offset=" + offset + ") confirmed updates not stored: " + missing);
            }
        }
    }

    private void expire(Bot bot) {
        Instant oldest = clock.instant().minus(RETENTION);
        while (!bot.queue.isEmpty() && bot.queue.peekFirst().enqueuedAt().isBefore(oldest)) {
            bot.queue.removeFirst();
        }
    }

    private Fault nextFault(Bot bot, String method) {
        synchronized (bot) {
            if (!method.equals("getUpdates") || bot.faults.isEmpty()) {
                return null;
            }
            return bot.faults.removeFirst();
        }
    }

    /** {@code <token>/files/<fileId>/<n>}: the bytes as Telegram's file server sends them, 404 for anything else or an expired link. */
    private void serveFile(HttpExchange exchange, String tokenAndPath) throws IOException {
        int slash = tokenAndPath.indexOf('/');
        Bot bot = slash < 0 ? null : botsByToken.get(tokenAndPath.substring(0, slash));
        String filePath = slash < 0 ? "" : tokenAndPath.substring(slash + 1);
        int link = filePath.lastIndexOf('/');
        byte[] content = bot == null || !filePath.startsWith("files/") || link <= "files/".length() || bot.expiredLinks.contains(filePath)
                ? null : bot.files.get(filePath.substring("files/".length(), link));
        requests.add(new Request("file", bot == null ? -1 : bot.id, null, null, clock.instant()));
        if (content == null) {
            answer(exchange, 404, error(404, "Not Found"));
            return;
        }
        exchange.getResponseHeaders().set("Content-Type", "application/octet-stream");
        exchange.sendResponseHeaders(200, content.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(content);
        }
    }

    private Bot bot(String token) {
        Bot bot = botsByToken.get(token);
        if (bot == null) {
            throw new IllegalArgumentException("no such bot in the simulator");
        }
        return bot;
    }

    /** As JSON array, or a JSON-serialised array in a query parameter, as the Bot API takes it. */
    private static List<String> allowedUpdates(JsonNode params) throws IOException {
        JsonNode value = params.get("allowed_updates");
        if (value != null && value.isTextual()) {
            value = JSON.readTree(value.asText());
        }
        if (value == null || !value.isArray()) {
            return null;
        }
        List<String> types = new ArrayList<>();
        value.forEach(type -> types.add(type.asText()));
        return List.copyOf(types);
    }

    private static JsonNode params(HttpExchange exchange) throws IOException {
        ObjectNode params = JSON.createObjectNode();
        String query = exchange.getRequestURI().getRawQuery();
        if (query != null) {
            for (String pair : query.split("&")) {
                int eq = pair.indexOf('=');
                if (eq > 0) {
                    params.put(URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
                            URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
                }
            }
        }
        byte[] body = exchange.getRequestBody().readAllBytes();
        if (body.length > 0) {
            JsonNode json = JSON.readTree(body);
            if (json != null && json.isObject()) {
                params.setAll((ObjectNode) json);
            }
        }
        return params;
    }

    private static ObjectNode ok(JsonNode result) {
        ObjectNode body = JSON.createObjectNode().put("ok", true);
        body.set("result", result);
        return body;
    }

    private static ObjectNode error(int code, String description) {
        return JSON.createObjectNode().put("ok", false).put("error_code", code).put("description", description);
    }

    private static void answer(HttpExchange exchange, int status, JsonNode body) throws IOException {
        answer(exchange, status, JSON.writeValueAsBytes(body));
    }

    private static void answer(HttpExchange exchange, int status, byte[] bytes) throws IOException {
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
