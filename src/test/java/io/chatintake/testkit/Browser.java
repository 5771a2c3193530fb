package io.chatintake.testkit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real headless Chromium driven as a person would: it opens pages, types into fields and clicks
 * buttons, keeping its cookies between pages. Driven over the DevTools protocol (a WebSocket on
 * loopback), with nothing but the JDK and Jackson; one browser per instance, closed with it.
 */
public final class Browser implements AutoCloseable {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Process process;
    private final Path profile;
    private final WebSocket socket;
    private final AtomicInteger ids = new AtomicInteger();
    private final Map<Integer, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
    private volatile CompletableFuture<Void> nextLoad = new CompletableFuture<>();

    private Browser(Process process, Path profile, WebSocket socket) {
        this.process = process;
        this.profile = profile;
        this.socket = socket;
    }

    public static Browser start() {
        assumeTrue(Files.isExecutable(HeadlessChromium.BINARY), "no " + HeadlessChromium.BINARY + ": apt-get install -y chromium (.ci/run does)");
        Path profile = null;
        Process process = null;
        try {
            profile = Files.createTempDirectory("chat-intake-browser");
            process = new ProcessBuilder(HeadlessChromium.BINARY.toString(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=*",
                    "--user-data-dir=" + profile, "--window-size=1280,1800", "about:blank")
                    .redirectErrorStream(true).redirectOutput(profile.resolve("chromium.log").toFile()).start();
            Path portFile = profile.resolve("DevToolsActivePort");
            Await.until("chromium to listen for DevTools", WAIT, () -> lines(portFile).size() >= 2);
            int port = Integer.parseInt(lines(portFile).get(0).trim());
            HttpClient http = HttpClient.newHttpClient();
            String targets = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/json/list")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            String pageSocket = null;
            for (JsonNode target : JSON.readTree(targets)) {
                if (target.path("type").asText().equals("page")) {
                    pageSocket = target.path("webSocketDebuggerUrl").asText();
                }
            }
            if (pageSocket == null) {
                throw new IllegalStateException("chromium shows no page: " + targets);
            }
            Browser[] self = new Browser[1];
            Listener listener = new Listener(self);
            WebSocket socket = http.newWebSocketBuilder().buildAsync(URI.create(pageSocket), listener).get(30, TimeUnit.SECONDS);
            self[0] = new Browser(process, profile, socket);
            self[0].call("Page.enable", Map.of());
            self[0].call("Runtime.enable", Map.of());
            return self[0];
        } catch (Exception e) {
            if (process != null) {
                process.destroyForcibly();
            }
            HeadlessChromium.deleteQuietly(profile);
            throw new IllegalStateException("cannot drive chromium: " + e.getMessage(), e);
        }
    }

    private static List<String> lines(Path file) {
        try {
            return Files.exists(file) ? Files.readAllLines(file) : List.of();
        } catch (IOException e) {
            return List.of();
        }
    }

    /** Opens a URL and waits until the page (after any redirects) has loaded. */
    public void open(String url) {
        whileLoading(() -> call("Page.navigate", Map.of("url", url)));
    }

    /** Clicks the element with this id and waits for the page that follows (a form's answer, after its redirect). */
    public void clickAndWait(String elementId) {
        whileLoading(() -> evaluate("document.getElementById(" + quote(elementId) + ").click(); true"));
    }

    /** Types into a field as a keyboard would: focus, select what is there, insert the text. */
    public void type(String elementId, String text) {
        evaluate("(() => { const e = document.getElementById(" + quote(elementId) + "); e.focus(); e.select(); return true; })()");
        call("Input.insertText", Map.of("text", text));
    }

    public boolean has(String elementId) {
        return evaluate("document.getElementById(" + quote(elementId) + ") !== null").asBoolean();
    }

    /** The page as the browser holds it now. */
    public String html() {
        return evaluate("document.documentElement.outerHTML").asText();
    }

    public String url() {
        return evaluate("location.href").asText();
    }

    /** The text of the page as shown (what a person reads, not what is hidden in the markup). */
    public String text() {
        return evaluate("document.body.innerText").asText();
    }

    /** A PNG of the whole page, however long. */
    public void screenshot(Path png) throws IOException {
        JsonNode size = call("Page.getLayoutMetrics", Map.of()).path("cssContentSize");
        JsonNode shot = call("Page.captureScreenshot", Map.of("format", "png", "captureBeyondViewport", true, "clip",
                Map.of("x", 0, "y", 0, "width", size.path("width").asDouble(), "height", size.path("height").asDouble(), "scale", 1)));
        Files.createDirectories(png.toAbsolutePath().getParent());
        Files.write(png, Base64.getDecoder().decode(shot.path("data").asText()));
    }

    public JsonNode evaluate(String expression) {
        JsonNode result = call("Runtime.evaluate", Map.of("expression", expression, "returnByValue", true, "awaitPromise", true));
        if (result.has("exceptionDetails")) {
            throw new IllegalStateException("script failed: " + expression + ": " + result.path("exceptionDetails"));
        }
        return result.path("result").path("value");
    }

    /**
     * Runs the action and waits for the new document it loads. The page reloads itself now and
     * then, so a load counts only once the document that was there before is gone.
     */
    private void whileLoading(Runnable action) {
        evaluate("window.chatIntakeBefore = true");
        CompletableFuture<Void> load = new CompletableFuture<>();
        nextLoad = load;
        action.run();
        long deadline = System.nanoTime() + WAIT.toNanos();
        try {
            while (true) {
                load.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (evaluate("window.chatIntakeBefore === undefined && document.readyState === 'complete'").asBoolean()) {
                    return;
                }
                load = new CompletableFuture<>();
                nextLoad = load;
            }
        } catch (Exception e) {
            throw new IllegalStateException("the page did not load within " + WAIT.toSeconds() + " s", e);
        }
    }

    private JsonNode call(String method, Map<String, Object> params) {
        int id = ids.incrementAndGet();
        CompletableFuture<JsonNode> answer = new CompletableFuture<>();
        pending.put(id, answer);
        ObjectNode message = JSON.createObjectNode().put("id", id).put("method", method);
        message.set("params", JSON.valueToTree(params));
        socket.sendText(message.toString(), true).join();
        try {
            JsonNode reply = answer.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            if (reply.has("error")) {
                throw new IllegalStateException(method + " failed: " + reply.path("error"));
            }
            return reply.path("result");
        } catch (IllegalStateException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(method + " got no answer within " + WAIT.toSeconds() + " s", e);
        } finally {
            pending.remove(id);
        }
    }

    private void received(String text) {
        try {
            JsonNode message = JSON.readTree(text);
            if (message.has("id")) {
                CompletableFuture<JsonNode> answer = pending.get(message.path("id").asInt());
                if (answer != null) {
                    answer.complete(message);
                }
            } else if (message.path("method").asText().equals("Page.loadEventFired")) {
                nextLoad.complete(null);
            }
        } catch (IOException e) {
            throw new IllegalStateException("DevTools sent what is not JSON", e);
        }
    }

    private static String quote(String text) {
        try {
            return JSON.writeValueAsString(text);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        socket.abort();
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        HeadlessChromium.deleteQuietly(profile);
    }

    /** Whole text messages, however the socket splits them. */
    private static final class Listener implements WebSocket.Listener {
        private final Browser[] browser;
        private final List<CharSequence> parts = new ArrayList<>();

        Listener(Browser[] browser) {
            this.browser = browser;
        }

        @Override
        public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
            parts.add(data.toString());
            if (last) {
                String whole = String.join("", parts);
                parts.clear();
                if (browser[0] != null) {
                    browser[0].received(whole);
                }
            }
            webSocket.request(1);
            return null;
        }
    }
}
