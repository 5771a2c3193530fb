package io.chatintake.channel.telegram;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.chatintake.config.Secret;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The few Bot API methods intake needs, over plain HTTP with raw JSON: updates are kept as the
 * JSON Telegram sent, whatever their type, so nothing a newer Bot API adds is dropped.
 * The token only ever goes into the request path; it is scrubbed from every error message, and
 * no URI is built in a way whose error would quote it.
 */
public final class BotApiClient {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Time on top of the long-poll timeout before a getUpdates answer counts as lost. */
    private static final Duration ANSWER_GRACE = Duration.ofSeconds(15);

    private final HttpClient http;
    private final String apiUrl;
    private final Secret token;

    public BotApiClient(String apiUrl, Secret token) {
        this(apiUrl, token, newHttpClient());
    }

    /** @param http shared by many bots' clients: one selector thread serves all their long polls */
    public BotApiClient(String apiUrl, Secret token, HttpClient http) {
        String base = apiUrl.endsWith("/") ? apiUrl.substring(0, apiUrl.length() - 1) : apiUrl;
        try {
            URI.create(base);
        } catch (IllegalArgumentException e) {
            // Checked alone, so that an error can name it: the base URL is not a secret.
            throw new IllegalArgumentException(TelegramBots.API_URL_KEY + " is not a valid URL: " + e.getMessage());
        }
        this.apiUrl = base;
        this.token = token;
        this.http = http;
    }

    public static HttpClient newHttpClient() {
        return builder().connectTimeout(Duration.ofSeconds(10)).build();
    }

    /**
     * The client every bot's long polls share. It has no connect timeout: the JDK's client keeps a
     * connection's connect timer, and through it the connection's first exchange with its 16 KB read
     * buffer, for as long as the connection lives, and a long-poll connection lives for days. Each
     * request's own timeout (at most the long poll plus {@link #ANSWER_GRACE}) bounds the connect instead.
     */
    public static HttpClient newPollingHttpClient() {
        return builder().build();
    }

    private static HttpClient.Builder builder() {
        // Answers go from the client's selector thread straight to the waiting caller, without a
        // pool thread in between: one thread hand-over less per poll, which a busy machine makes slow.
        // Every body handler used here only buffers, so nothing blocks the selector thread.
        return HttpClient.newBuilder().executor(Runnable::run);
    }

    public record BotIdentity(long id, String username) {
    }

    /** One update as Telegram sent it; {@code type} is its one optional field ("message", "callback_query", ...). */
    public record RawUpdate(long updateId, String type, String json) {
    }

    public record WebhookInfo(String url, long pendingUpdateCount, String lastErrorMessage) {
        public boolean webhookSet() {
            return url != null && !url.isEmpty();
        }
    }

    public BotIdentity getMe() throws BotApiException {
        JsonNode result = call("getMe", JSON.createObjectNode(), Duration.ofSeconds(30));
        return new BotIdentity(result.path("id").asLong(), result.path("username").asText(""));
    }

    public List<RawUpdate> getUpdates(long offset, int limit, int timeoutSeconds, List<String> allowedUpdates)
            throws BotApiException {
        return updatesOf(post("getUpdates", updatesParams(offset, limit, timeoutSeconds, allowedUpdates),
                Duration.ofSeconds(timeoutSeconds).plus(ANSWER_GRACE)));
    }

    /**
     * getUpdates without holding a thread while Telegram holds the request: the answer is read on
     * the HTTP client's selector thread, and the future completes there (with a
     * {@link BotApiException} when the call failed), so whatever follows must move to a thread
     * of its own. Cancelling the future abandons the request.
     */
    public CompletableFuture<List<RawUpdate>> getUpdatesAsync(long offset, int limit, int timeoutSeconds, List<String> allowedUpdates) {
        CompletableFuture<HttpResponse<String>> sent;
        try {
            sent = http.sendAsync(postRequest("getUpdates", updatesParams(offset, limit, timeoutSeconds, allowedUpdates),
                    Duration.ofSeconds(timeoutSeconds).plus(ANSWER_GRACE)), HttpResponse.BodyHandlers.ofString());
        } catch (BotApiException e) {
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<List<RawUpdate>> updates = new CompletableFuture<>() {
            @Override
            public boolean cancel(boolean mayInterruptIfRunning) {
                sent.cancel(true);
                return super.cancel(mayInterruptIfRunning);
            }
        };
        sent.whenComplete((response, failure) -> {
            try {
                if (failure != null) {
                    throw failed(failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure);
                }
                updates.complete(updatesOf(response));
            } catch (BotApiException e) {
                updates.completeExceptionally(e);
            }
        });
        return updates;
    }

    private static ObjectNode updatesParams(long offset, int limit, int timeoutSeconds, List<String> allowedUpdates) {
        ObjectNode params = JSON.createObjectNode().put("offset", offset).put("limit", limit).put("timeout", timeoutSeconds);
        if (allowedUpdates != null && !allowedUpdates.isEmpty()) {
            allowedUpdates.forEach(params.putArray("allowed_updates")::add);
        }
        return params;
    }

    private List<RawUpdate> updatesOf(HttpResponse<String> response) throws BotApiException {
        List<RawUpdate> updates = new ArrayList<>();
        JsonNode answer;
        try {
            answer = readUpdates(response.body(), updates);
        } catch (IOException e) {
            throw BotApiException.fromAnswer(response.statusCode(), "answer is not JSON", 0);
        }
        result(answer, response.statusCode());
        return updates;
    }

    /**
     * Reads a getUpdates answer in one pass, keeping each update's JSON text exactly as Telegram
     * sent it: that is what is stored and confirmed, and what is kept raw when jsonb refuses it
     * (a re-serialised tree would differ, and could not even be encoded with a lone surrogate).
     *
     * @return the answer without its updates (ok, error_code, ...), or null when it is not an object
     */
    private static JsonNode readUpdates(String body, List<RawUpdate> updates) throws IOException {
        ObjectNode answer = JSON.createObjectNode();
        try (JsonParser parser = JSON.createParser(body)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String field = parser.currentName();
                if (parser.nextToken() == JsonToken.START_ARRAY && field.equals("result")) {
                    while (parser.nextToken() == JsonToken.START_OBJECT) {
                        updates.add(readUpdate(parser, body));
                    }
                } else {
                    answer.set(field, parser.readValueAsTree());
                }
            }
        }
        return answer;
    }

    /** One update of the result array, the parser at its start; its text is kept exactly as sent. */
    private static RawUpdate readUpdate(JsonParser parser, String body) throws IOException {
        int start = (int) parser.currentTokenLocation().getCharOffset();
        IdAndType read = readIdAndType(parser);
        int end = (int) parser.currentTokenLocation().getCharOffset() + 1;
        return new RawUpdate(read.updateId(), read.type(), body.substring(start, end));
    }

    private record IdAndType(long updateId, String type) {
    }

    /**
     * An update's id and its type, the one field besides update_id ("unknown" when there is none),
     * read from its start to its end with the rest skipped: no tree is built for a 1 KB update
     * that nothing else reads.
     */
    private static IdAndType readIdAndType(JsonParser parser) throws IOException {
        long updateId = 0;
        String type = null;
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String field = parser.currentName();
            parser.nextToken();
            if (field.equals("update_id")) {
                updateId = parser.getValueAsLong();
            } else {
                type = type == null ? field : type;
                parser.skipChildren();
            }
        }
        return new IdAndType(updateId, type == null ? "unknown" : type);
    }

    public WebhookInfo getWebhookInfo() throws BotApiException {
        JsonNode result = call("getWebhookInfo", JSON.createObjectNode(), Duration.ofSeconds(30));
        return new WebhookInfo(result.path("url").asText(""), result.path("pending_update_count").asLong(0),
                result.path("last_error_message").asText(""));
    }

    /**
     * Webhook mode: every update type, each request carrying {@code secretToken} in
     * X-Telegram-Bot-Api-Secret-Token; the queued updates are kept (drop_pending_updates=false)
     * and delivered to the webhook.
     */
    public void setWebhookKeepingUpdates(String url, Secret secretToken) throws BotApiException {
        ObjectNode params = JSON.createObjectNode().put("url", url).put("secret_token", secretToken.reveal())
                .put("drop_pending_updates", false);
        AllowedUpdates.ALL.forEach(params.putArray("allowed_updates")::add);
        call("setWebhook", params, Duration.ofSeconds(30));
    }

    /** Always keeps the queued updates: dropping them is never what a switch to polling means. */
    public void deleteWebhookKeepingUpdates() throws BotApiException {
        call("deleteWebhook", JSON.createObjectNode().put("drop_pending_updates", false), Duration.ofSeconds(30));
    }

    /** Where a file can be downloaded for the next hour, and its size when Telegram knows it (else -1). */
    public record TelegramFile(String filePath, long fileSize) {
    }

    public TelegramFile getFile(String fileId) throws BotApiException {
        JsonNode result = call("getFile", JSON.createObjectNode().put("file_id", fileId), Duration.ofSeconds(30));
        return new TelegramFile(result.path("file_path").asText(""), result.path("file_size").asLong(-1));
    }

    /**
     * Opens the bytes of a {@link #getFile} path. The download URL holds the token, so no error
     * names it; the caller closes the stream.
     */
    public InputStream downloadFile(String filePath, Duration answerTimeout) throws BotApiException {
        HttpRequest request = HttpRequest.newBuilder(uri("/file/bot", filePath))
                .timeout(answerTimeout)
                .GET()
                .build();
        // Only a 200's body is kept; any other answer's body is discarded.
        HttpResponse<InputStream> response = send(request, info -> info.statusCode() == 200
                ? HttpResponse.BodySubscribers.ofInputStream() : HttpResponse.BodySubscribers.replacing(InputStream.nullInputStream()));
        if (response.statusCode() != 200) {
            throw BotApiException.fromAnswer(response.statusCode(), "file download answered " + response.statusCode(), 0);
        }
        return response.body();
    }

    /** The type of an update given as JSON text; "unknown" when it names none (or is not an object). */
    static String typeOf(String update) throws IOException {
        try (JsonParser parser = JSON.createParser(update)) {
            return parser.nextToken() == JsonToken.START_OBJECT ? readIdAndType(parser).type() : "unknown";
        }
    }

    /**
     * Any Bot API method with JSON parameters; returns its {@code result}. Thread-safe: nothing
     * of one call is shared with another but the HTTP client.
     */
    public JsonNode call(String method, ObjectNode params, Duration answerTimeout) throws BotApiException {
        HttpResponse<String> response = post(method, params, answerTimeout);
        JsonNode body;
        try {
            body = JSON.readTree(response.body());
        } catch (IOException e) {
            throw BotApiException.fromAnswer(response.statusCode(), "answer is not JSON", 0);
        }
        return result(body, response.statusCode());
    }

    private HttpResponse<String> post(String method, ObjectNode params, Duration answerTimeout) throws BotApiException {
        return send(postRequest(method, params, answerTimeout), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest postRequest(String method, ObjectNode params, Duration answerTimeout) throws BotApiException {
        return HttpRequest.newBuilder(uri("/bot", method))
                .timeout(answerTimeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(params.toString()))
                .build();
    }

    private JsonNode result(JsonNode body, int statusCode) throws BotApiException {
        if (body == null || !body.path("ok").asBoolean(false)) {
            int code = body == null ? statusCode : body.path("error_code").asInt(statusCode);
            String description = body == null ? "" : body.path("description").asText("");
            int retryAfter = body == null ? 0 : body.path("parameters").path("retry_after").asInt(0);
            throw BotApiException.fromAnswer(code, scrub(description), retryAfter);
        }
        return body.path("result");
    }

    /**
     * {@code <api url><prefix><token>/<path>}, the token percent-encoded as a path segment: a
     * token holding a space or a quote still makes a valid URI, and no error message ever quotes
     * the URL (URI.create would, token included).
     */
    private URI uri(String prefix, String path) throws BotApiException {
        try {
            return new URI(apiUrl + prefix + pathSegment(token.reveal()) + "/" + pathSegment(path).replace("%2F", "/"));
        } catch (URISyntaxException | IllegalArgumentException e) {
            throw BotApiException.notSent("the request URL cannot be built (check " + TelegramBots.API_URL_KEY + ")");
        }
    }

    /** Percent-encodes all but RFC 3986 unreserved characters and ':' (which Telegram tokens hold). */
    static String pathSegment(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || "-._~:".indexOf(c) >= 0) {
                out.append(c);
            } else {
                out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            }
        }
        return out.toString();
    }

    private <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler) throws BotApiException {
        try {
            return http.send(request, handler);
        } catch (IOException e) {
            throw failed(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw BotApiException.network("interrupted");
        }
    }

    /** A call that got no answer, as the poller must see it: never sent, or sent and lost. */
    private BotApiException failed(Throwable e) {
        if (e instanceof BotApiException known) {
            return known;
        }
        String detail = scrub(e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()));
        if (e instanceof ConnectException || e instanceof HttpConnectTimeoutException) {
            // No connection, so the request was never written: definitely not performed.
            return BotApiException.notSent(detail);
        }
        return BotApiException.network(e instanceof CancellationException ? "abandoned" : detail);
    }

    private String scrub(String text) {
        return text.replace(token.reveal(), "[redacted]");
    }
}
