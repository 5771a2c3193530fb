package io.chatintake.ops.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.function.LongSupplier;

/**
 * The contender of the Telegram benchmarks: the shortest correct poller, in the bench process, on
 * one connection: getUpdates -> one JDBC batch insert into {@code public.bench_update} + the
 * checkpoint in {@code public.bench_checkpoint}, one commit -> next poll.
 */
final class HandWrittenLoop {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final BenchDatabase database;
    private final HttpClient http = HttpClient.newHttpClient();
    private final URI getUpdates;
    private final long botId;
    private final int batch;
    private long offset;

    HandWrittenLoop(BenchDatabase database, String apiUrl, String token, long botId, int batch) {
        this.database = database;
        this.getUpdates = URI.create(apiUrl + "/bot" + token + "/getUpdates");
        this.botId = botId;
        this.batch = batch;
    }

    /** Polls and confirms without storing: what the Bot API simulator and HTTP alone allow. */
    void poll(int updates) throws Exception {
        for (int seen = 0; seen < updates; ) {
            JsonNode result = getUpdates();
            for (JsonNode update : result) {
                offset = Math.max(offset, update.path("update_id").asLong() + 1);
                update.toString();
            }
            seen += result.size();
        }
    }

    private JsonNode getUpdates() throws Exception {
        HttpRequest request = HttpRequest.newBuilder(getUpdates).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"offset\":" + offset + ",\"limit\":" + batch + ",\"timeout\":1}"))
                .build();
        return JSON.readTree(http.send(request, HttpResponse.BodyHandlers.ofString()).body()).path("result");
    }

    /** Polls, stores and confirms until {@code updates} more are stored. */
    void take(int updates) throws Exception {
        take(() -> updates);
    }

    /** Polls, stores and confirms until as many more are stored as {@code target} says (asked after each batch). */
    void take(LongSupplier target) throws Exception {
        long stored = 0;
        try (Connection c = database.dataSource().getConnection();
             PreparedStatement insert = c.prepareStatement(
                     "INSERT INTO public.bench_update (bot_id, update_id, payload) VALUES (?, ?, ?::jsonb) ON CONFLICT DO NOTHING");
             PreparedStatement checkpoint = c.prepareStatement("UPDATE public.bench_checkpoint SET next_offset = ? WHERE bot_id = ?")) {
            c.setAutoCommit(false);
            while (stored < target.getAsLong()) {
                JsonNode result = getUpdates();
                if (result.isEmpty()) {
                    continue;
                }
                long max = offset - 1;
                for (JsonNode update : result) {
                    long id = update.path("update_id").asLong();
                    insert.setLong(1, botId);
                    insert.setLong(2, id);
                    insert.setString(3, update.toString());
                    insert.addBatch();
                    max = Math.max(max, id);
                }
                insert.executeBatch();
                checkpoint.setLong(1, max + 1);
                checkpoint.setLong(2, botId);
                checkpoint.executeUpdate();
                c.commit();
                offset = max + 1;
                stored += result.size();
            }
        }
    }
}
