package io.chatintake.ops.bench;

import io.chatintake.ops.MessageSearch;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.IntFunction;

/**
 * {@code bench search [N]}: N stored messages (default 1,000,000; half Telegram updates of 20 bots,
 * half UnifyPort events with their child messages, over 30 days) in a database of its own, then
 * {@value #QUERIES} searches per filter, a page of 50 each, as {@code GET /status/messages} runs
 * them. Prints p50/p95 per filter; the target is p95 under {@value #TARGET_MILLIS} ms for each.
 */
public final class SearchBenchmark {
    private static final int QUERIES = 100;
    private static final int TARGET_MILLIS = 300;
    private static final int CHUNK = 50_000;
    private static final int BOTS = 20;
    private static final int CHATS = 20_000;
    private static final int SENDERS = 5_000;
    private static final Duration SPAN = Duration.ofDays(30);
    private static final int PAGE = 50;

    private final PrintStream out;

    public SearchBenchmark(PrintStream out) {
        this.out = out;
    }

    public int run(int messages) throws Exception {
        try (BenchDatabase database = BenchDatabase.start("search", 2)) {
            int telegram = messages / 2;
            int webhook = messages - telegram;
            long start = System.nanoTime();
            fill(database, telegram, webhook);
            out.printf("%,d messages stored (%,d Telegram updates, %,d UnifyPort events) with the V35 indexes in %.0f s%n",
                    messages, telegram, webhook, (System.nanoTime() - start) / 1e9);
            Instant newest = Instant.now();
            Random random = new Random(42);
            Map<String, IntFunction<MessageSearch.Filter>> filters = new LinkedHashMap<>();
            filters.put("newest (no filter)", i -> filter(null, null, null, null, null, null, null, null, null));
            filters.put("channel unifyport", i -> filter("unifyport", null, null, null, null, null, null, null, null));
            filters.put("bot", i -> filter(null, "bot_" + random.nextInt(BOTS), null, null, null, null, null, null, null));
            filters.put("conversation (Telegram chat)", i -> filter(null, null, Integer.toString(random.nextInt(CHATS)), null, null,
                    null, null, null, null));
            filters.put("conversation (UnifyPort)", i -> filter(null, null, "conv_" + random.nextInt(CHATS), null, null, null, null,
                    null, null));
            filters.put("sender", i -> filter(null, null, null, Integer.toString(1000 + random.nextInt(SENDERS)), null, null, null,
                    null, null));
            filters.put("text contains (rare)", i -> filter(null, null, null, null, "tag" + random.nextInt(messages) + "x", null,
                    null, null, null));
            filters.put("text contains (common)", i -> filter(null, null, null, null, "order " + random.nextInt(100), null, null,
                    null, null));
            filters.put("event id", i -> filter(null, null, null, null, null, "evt_" + (telegram + random.nextInt(webhook)), null,
                    null, null));
            filters.put("update id + bot", i -> {
                int update = random.nextInt(telegram);
                return filter(null, "bot_" + update % BOTS, null, null, null, Integer.toString(update), null, null, null);
            });
            filters.put("time range (1 h)", i -> {
                Instant until = newest.minusSeconds(random.nextInt((int) SPAN.toSeconds()));
                return filter(null, null, null, null, null, null, until.minus(Duration.ofHours(1)), until, null);
            });
            filters.put("chat + text + 7 days", i -> filter(null, null, Integer.toString(random.nextInt(CHATS)), null, "order", null,
                    newest.minus(Duration.ofDays(7)), null, null));
            boolean met = true;
            out.printf("%-30s %9s %9s  (%d searches each, a page of %d)%n", "filter", "p50 ms", "p95 ms", QUERIES, PAGE);
            try (Connection c = database.dataSource().getConnection()) {
                c.setReadOnly(true);
                for (Map.Entry<String, IntFunction<MessageSearch.Filter>> f : filters.entrySet()) {
                    met &= report(f.getKey(), time(c, f.getValue()));
                }
                met &= report("page 20 (cursor)", deepPages(c));
            }
            out.printf("target p95 < %d ms for every filter: %s%n", TARGET_MILLIS, met ? "met" : "NOT met");
            return met ? 0 : 1;
        }
    }

    private static MessageSearch.Filter filter(String channel, String bot, String conversation, String sender, String text, String event,
                                               Instant since, Instant until, String after) {
        return new MessageSearch.Filter(channel, bot, conversation, sender, text, event, since, until, PAGE, after);
    }

    private static List<Long> time(Connection c, IntFunction<MessageSearch.Filter> filters) throws SQLException {
        for (int i = 0; i < 5; i++) {
            MessageSearch.find(c, filters.apply(i));
        }
        List<Long> nanos = new ArrayList<>();
        for (int i = 0; i < QUERIES; i++) {
            MessageSearch.Filter filter = filters.apply(i);
            long start = System.nanoTime();
            MessageSearch.find(c, filter);
            nanos.add(System.nanoTime() - start);
        }
        return nanos;
    }

    /** The 20th page of the newest messages, each page opened from the one before's cursor; the 20th is timed. */
    private static List<Long> deepPages(Connection c) throws SQLException {
        List<Long> nanos = new ArrayList<>();
        for (int i = 0; i < QUERIES / 5; i++) {
            String after = null;
            for (int page = 1; page <= 20; page++) {
                MessageSearch.Filter filter = filter(i % 2 == 0 ? null : "unifyport", null, null, null, null, null, null, null, after);
                long start = System.nanoTime();
                after = MessageSearch.find(c, filter).next();
                if (page == 20) {
                    nanos.add(System.nanoTime() - start);
                }
            }
        }
        return nanos;
    }

    private boolean report(String name, List<Long> nanos) {
        List<Long> sorted = nanos.stream().sorted().toList();
        double p50 = sorted.get(sorted.size() / 2) / 1e6;
        double p95 = sorted.get((int) Math.ceil(sorted.size() * 0.95) - 1) / 1e6;
        out.printf("%-30s %9.1f %9.1f%s%n", name, p50, p95, p95 < TARGET_MILLIS ? "" : "  over target");
        return p95 < TARGET_MILLIS;
    }

    /** Rows as intake writes them, in chunks of one statement each; texts carry a unique tag and one of 1,000 common words. */
    private static void fill(BenchDatabase database, int telegram, int webhook) throws SQLException {
        long spanSeconds = SPAN.toSeconds();
        int total = telegram + webhook;
        for (int b = 0; b < BOTS; b++) {
            database.execute("INSERT INTO telegram_checkpoint (bot_id, bot_name) VALUES (" + (9000 + b) + ", 'bot_" + b + "')");
        }
        for (int from = 0; from < telegram; from += CHUNK) {
            int to = Math.min(telegram, from + CHUNK) - 1;
            database.execute("""
                    INSERT INTO telegram_update (bot_id, update_id, update_type, payload, received_at)
                    SELECT 9000 + i %% %1$d, i, 'message',
                           jsonb_build_object('update_id', i, 'message', jsonb_build_object('message_id', i, 'date', 1,
                               'from', jsonb_build_object('id', 1000 + i %% %2$d), 'chat', jsonb_build_object('id', i %% %3$d, 'type', 'private'),
                               'text', 'order ' || (i %% 1000) || ' tag' || i || 'x ' || md5(i::text))),
                           now() - make_interval(secs => %4$d::double precision * (%5$d - i) / %5$d)
                      FROM generate_series(%6$d, %7$d) i""".formatted(BOTS, SENDERS, CHATS, spanSeconds, total, from, to));
        }
        for (int from = telegram; from < total; from += CHUNK) {
            int to = Math.min(total, from + CHUNK) - 1;
            database.execute("""
                    WITH e AS (
                        SELECT i, jsonb_build_object('id', 'evt_' || i, 'type', 'message.received', 'provider', 'whatsapp',
                                   'account_id', 'acc_' || i %% 10, 'data', jsonb_build_object(
                                       'conversation', jsonb_build_object('id', 'conv_' || i %% %1$d),
                                       'sender', jsonb_build_object('id', (1000 + i %% %2$d)::text),
                                       'message', jsonb_build_object('id', 'm_' || i, 'type', 'text',
                                           'text', 'order ' || (i %% 1000) || ' tag' || i || 'x ' || md5(i::text)))) AS p,
                               now() - make_interval(secs => %3$d::double precision * (%4$d - i) / %4$d) AS at
                          FROM generate_series(%5$d, %6$d) i),
                         stored AS (
                        INSERT INTO webhook_event (workspace, channel, event_id, event_type, provider, account_id, body, payload,
                                                   received_at, last_received_at)
                        SELECT 'default', 'unifyport', p ->> 'id', 'message.received', 'whatsapp', p ->> 'account_id',
                               convert_to(p::text, 'UTF8'), p, at, at FROM e)
                    INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id, message_type, text,
                                                 first_event_id, last_event_at, created_at, updated_at)
                    SELECT 'default', 'whatsapp', p ->> 'account_id', p #>> '{data,conversation,id}', p #>> '{data,message,id}', 'text',
                           p #>> '{data,message,text}', p ->> 'id', at, at, at FROM e""".formatted(CHATS, SENDERS, spanSeconds, total, from, to));
        }
        // What scheduling their work copies after intake commits.
        database.execute("INSERT INTO telegram_update_text (update_row_id, text) SELECT id, telegram_text(payload) FROM telegram_update");
        database.execute("VACUUM ANALYZE telegram_update");
        database.execute("VACUUM ANALYZE telegram_update_text");
        database.execute("VACUUM ANALYZE webhook_event");
        database.execute("VACUUM ANALYZE channel_message");
    }
}
