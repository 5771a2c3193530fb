package io.chatintake.sim;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A media server on loopback handing out temporary signed URLs, as UnifyPort's attachments carry:
 * {@code /media/<id>?expires=<epoch s>&sig=<random>}. A wrong signature or a passed expiry is
 * answered 403, as signed storage URLs are; an unknown id 404. Tests can make the next requests
 * of a file fail with 500 or stall halfway, and count the requests each file got.
 */
public final class MediaHost implements AutoCloseable {
    private static final SecureRandom RANDOM = new SecureRandom();

    private record Media(byte[] content, String contentType, String signature, Instant expiresAt,
                         AtomicInteger failuresLeft, AtomicInteger stallsLeft, AtomicInteger requests) {
    }

    /** The settings that let attachments be fetched from a media host: it serves plain http on loopback. */
    public static final Map<String, String> ALLOWED = Map.of("attachments.allowed-hosts", "127.0.0.1", "attachments.allow-http", "true");

    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "media-host");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, Media> media = new ConcurrentHashMap<>();

    private MediaHost(HttpServer server) {
        this.server = server;
    }

    public static MediaHost start() {
        try {
            HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
            MediaHost host = new MediaHost(server);
            server.createContext("/media/", host::handle);
            server.setExecutor(host.executor);
            server.start();
            return host;
        } catch (IOException e) {
            throw new IllegalStateException("the media host cannot listen: " + e.getMessage(), e);
        }
    }

    /** Serves {@code content} at a new signed URL valid for {@code validFor} (negative: expired already). */
    public String publish(byte[] content, String contentType, Duration validFor) {
        String id = random(8);
        Media m = new Media(content.clone(), contentType, random(16), Instant.now().plus(validFor),
                new AtomicInteger(), new AtomicInteger(), new AtomicInteger());
        media.put(id, m);
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/media/" + id
                + "?expires=" + m.expiresAt().getEpochSecond() + "&sig=" + m.signature();
    }

    /** The next {@code times} requests for this URL's file are answered 500. */
    public void failNext(String url, int times) {
        byId(url).failuresLeft().set(times);
    }

    /** The next {@code times} requests for this URL's file get the headers and half the bytes, then nothing more. */
    public void stallNext(String url, int times) {
        byId(url).stallsLeft().set(times);
    }

    public int requests(String url) {
        return byId(url).requests().get();
    }

    /** Every signature handed out: none may ever appear in a log line. */
    public List<String> signatures() {
        return media.values().stream().map(Media::signature).toList();
    }

    private Media byId(String url) {
        String id = url.substring(url.indexOf("/media/") + "/media/".length(), url.indexOf('?'));
        return media.get(id);
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String id = exchange.getRequestURI().getPath().substring("/media/".length());
            Map<String, String> query = query(exchange.getRequestURI().getRawQuery());
            Media m = media.get(id);
            if (m == null) {
                exchange.sendResponseHeaders(404, -1);
                return;
            }
            m.requests().incrementAndGet();
            if (!m.signature().equals(query.get("sig")) || !Instant.now().isBefore(m.expiresAt())) {
                exchange.sendResponseHeaders(403, -1);
                return;
            }
            if (m.failuresLeft().getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                exchange.sendResponseHeaders(500, -1);
                return;
            }
            exchange.getResponseHeaders().set("Content-Type", m.contentType());
            exchange.sendResponseHeaders(200, m.content().length);
            try (OutputStream out = exchange.getResponseBody()) {
                if (m.stallsLeft().getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    out.write(m.content(), 0, m.content().length / 2);
                    out.flush();
                    stall();
                    return;
                }
                out.write(m.content());
            }
        }
    }

    /** Until the client gives up and closes the connection (or the host stops). */
    private static void stall() {
        try {
            Thread.sleep(Duration.ofMinutes(1).toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> values = new HashMap<>();
        if (raw != null) {
            for (String pair : raw.split("&")) {
                int eq = pair.indexOf('=');
                if (eq > 0) {
                    values.put(pair.substring(0, eq), pair.substring(eq + 1));
                }
            }
        }
        return values;
    }

    private static String random(int bytes) {
        byte[] value = new byte[bytes];
        RANDOM.nextBytes(value);
        return HexFormat.of().formatHex(value);
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
