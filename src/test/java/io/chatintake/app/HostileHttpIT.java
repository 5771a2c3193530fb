package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real jar with a 512 MB heap (as {@link RunnerProcess} starts it) under what an attacker who
 * can reach a webhook sends without any secret: slow 8 MB bodies, multipart uploads, bodies that
 * never finish, cleartext HTTP/2. Every one is refused before the body is buffered past the
 * route's cap, and signed deliveries sent meanwhile are stored in time.
 */
class HostileHttpIT {
    private static final String SECRET = "whk_hostile_it_secret_5d1e";
    private static final String WEBHOOK = "/webhooks/unifyport";
    private static final long EIGHT_MB = 8_000_000;
    private static final long MB = 1024 * 1024;

    @TempDir
    Path work;

    @Test
    void slowLargeAndMultipartBodiesAreRefusedWhileSignedDeliveriesAreStored() throws Exception {
        Path tmp = Files.createDirectories(work.resolve("tmp"));
        Map<String, String> env = RunnerProcess.baseEnv(work);
        env.put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        env.put("CHAT_INTAKE_HTTP_REQUEST_TIMEOUT_SECONDS", "10");
        // The runner's temporary directory, where multipart uploads were spooled.
        env.put("JAVA_TOOL_OPTIONS", "-Djava.io.tmpdir=" + tmp);
        DataSource db = RunnerProcess.embeddedDatabase(env);
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            int port = runner.httpPort();
            SignedDeliverySender sender = new SignedDeliverySender(URI.create("http://127.0.0.1:" + port + WEBHOOK), Secret.of(SECRET));
            assertThat(deliver(sender, "evt_warmup")).isLessThan(Duration.ofSeconds(5));
            long idleHeap = liveHeap(runner.pid());
            long idleTmp = size(tmp);

            ExecutorService attackers = Executors.newFixedThreadPool(75);
            List<Future<Outcome>> attacks = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                // Half say their length up front, half stream it chunked: 16 KB every 100 ms each.
                boolean chunked = i % 2 == 0;
                attacks.add(attackers.submit(() -> slowPost(port, "application/json", chunked, EIGHT_MB, "", "")));
            }
            for (int i = 0; i < 20; i++) {
                // A well-formed upload of one file: what a server that takes uploads spools to its temporary directory.
                attacks.add(attackers.submit(() -> slowPost(port, "multipart/form-data; boundary=xyz", false, EIGHT_MB,
                        "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n"
                                + "Content-Type: application/octet-stream\r\n\r\n", "\r\n--xyz--\r\n")));
            }
            List<Future<Outcome>> trickles = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                // A body that starts and never finishes, under every cap: only time ends it.
                trickles.add(attackers.submit(() -> neverFinished(port)));
            }

            List<Duration> latencies = Collections.synchronizedList(new ArrayList<>());
            AtomicLong peakHeap = new AtomicLong();
            AtomicLong peakTmp = new AtomicLong();
            long deadline = System.nanoTime() + Duration.ofSeconds(14).toNanos();
            int sent = 0;
            while (System.nanoTime() < deadline) {
                latencies.add(deliver(sender, "evt_meanwhile_" + sent++));
                if (sent % 8 == 0) {
                    peakHeap.accumulateAndGet(liveHeap(runner.pid()), Math::max);
                    peakTmp.accumulateAndGet(size(tmp), Math::max);
                }
                Thread.sleep(200);
            }
            List<Outcome> outcomes = new ArrayList<>();
            for (Future<Outcome> attack : attacks) {
                outcomes.add(attack.get(60, TimeUnit.SECONDS));
            }
            List<Outcome> timedOut = new ArrayList<>();
            for (Future<Outcome> trickle : trickles) {
                timedOut.add(trickle.get(60, TimeUnit.SECONDS));
            }
            attackers.shutdownNow();
            peakHeap.accumulateAndGet(liveHeap(runner.pid()), Math::max);
            peakTmp.accumulateAndGet(size(tmp), Math::max);

            List<Duration> sorted = latencies.stream().sorted().toList();
            Duration p99 = sorted.get((int) Math.ceil(sorted.size() * 0.99) - 1);
            System.out.printf("hostile input: %d attacks, statuses %s; %d signed deliveries, p99 %d ms; live heap idle %d MB, peak %d MB;"
                            + " tmp idle %d KB, peak %d KB; %s%n", outcomes.size(), outcomes.stream().map(Outcome::status).distinct().sorted().toList(),
                    sorted.size(), p99.toMillis(), idleHeap / MB, peakHeap.get() / MB, idleTmp / 1024, peakTmp.get() / 1024, rss(runner.pid()));

            assertThat(outcomes).as("every slow 8 MB and multipart POST refused (413/415, or closed before its body was sent)")
                    .allMatch(Outcome::refused);
            assertThat(outcomes.subList(0, 50)).as("8 MB refused at the route's 1 MiB cap: at the Content-Length or while streaming")
                    .allMatch(o -> o.status() == 413 || o.status() == -1 && o.bytesSent() < 4 * MB);
            assertThat(outcomes.subList(50, 70)).as("multipart refused before its body is read")
                    .allMatch(o -> o.status() == 415 || o.status() == -1 && o.bytesSent() < EIGHT_MB);
            assertThat(timedOut).as("bodies that never finish: 408 after the request timeout").allMatch(o -> o.status() == 408);
            assertThat(peakHeap.get() - idleHeap).as("live heap above idle").isLessThan(100 * MB);
            assertThat(peakTmp.get() - idleTmp).as("temporary directory above idle").isLessThan(100 * MB);
            assertThat(p99).as("p99 of signed deliveries during the attack").isLessThan(Duration.ofSeconds(1));
            assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id LIKE 'evt_meanwhile_%'"))
                    .as("every signed delivery sent meanwhile stored").isEqualTo(sent);
            assertThat(runner.output()).doesNotContain("OutOfMemoryError", "Unhandled exception in router");
        }
    }

    @Test
    void cleartextHttp2IsNotSpokenByDefault() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            // Prior knowledge, as `curl --http2-prior-knowledge` opens: the preface, then an empty SETTINGS frame.
            try (Socket socket = new Socket("127.0.0.1", runner.httpPort())) {
                socket.setSoTimeout(5000);
                OutputStream out = socket.getOutputStream();
                out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                out.write(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0});
                out.flush();
                byte[] answer = readAtMost(socket.getInputStream(), 9);
                // An HTTP/2 server answers with its own SETTINGS frame: type 4 in the fourth byte.
                assertThat(answer.length >= 4 && answer[3] == 4).as("an HTTP/2 SETTINGS frame in %s", Arrays.toString(answer)).isFalse();
            }
            // The upgrade route to h2c, as Java's client takes it: answered in HTTP/1.1.
            HttpResponse<String> upgraded = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build().send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + runner.httpPort() + "/observe/health")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(upgraded.version()).isEqualTo(HttpClient.Version.HTTP_1_1);
        }
    }

    /** What an attack got: the status read (-1: none, the connection closed) and how much of its body went out. */
    private record Outcome(int status, long bytesSent, long total) {
        boolean refused() {
            return status == 413 || status == 415 || status == 408 || status == -1 && bytesSent < total;
        }
    }

    private static Duration deliver(SignedDeliverySender sender, String eventId) {
        byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(),
                "{\"conversation\":{\"id\":\"c1\",\"type\":\"user\"},\"message\":{\"id\":\"" + eventId + "\",\"type\":\"text\",\"text\":\"hi\"}}");
        long start = System.nanoTime();
        Response response = sender.post(sender.sign(eventId, body, TimestampForm.RFC3339));
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertThat(response.status()).as(eventId + ": " + response.body()).isEqualTo(200);
        return took;
    }

    /**
     * An unsigned POST of {@code total} bytes (opening, filler, closing) that goes out 16 KB every
     * 100 ms, until the server answers or closes.
     */
    private static Outcome slowPost(int port, String contentType, boolean chunked, long total, String opening, String closing)
            throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            out.write(("POST " + WEBHOOK + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + contentType + "\r\n"
                    + (chunked ? "Transfer-Encoding: chunked" : "Content-Length: " + total) + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            byte[] filler = new byte[16 * 1024];
            Arrays.fill(filler, (byte) 'a');
            byte[] first = opening.getBytes(StandardCharsets.US_ASCII);
            byte[] last = closing.getBytes(StandardCharsets.US_ASCII);
            long sent = 0;
            try {
                while (sent < total && in.available() == 0) {
                    byte[] piece = sent < first.length ? first : total - sent <= last.length ? last : filler;
                    int n = piece == filler ? (int) Math.min(filler.length, total - sent - last.length) : piece.length;
                    if (chunked) {
                        out.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.US_ASCII));
                    }
                    out.write(piece, 0, n);
                    if (chunked) {
                        out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
                    }
                    out.flush();
                    sent += n;
                    Thread.sleep(100);
                }
            } catch (IOException e) {
                // closed by the server while the body was going out
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return new Outcome(status(in), sent, total);
        }
    }

    /** 100 bytes of a 1,000-byte body, then silence. */
    private static Outcome neverFinished(int port) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(("POST " + WEBHOOK + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 1000\r\n\r\n" + "a".repeat(100)).getBytes(StandardCharsets.US_ASCII));
            return new Outcome(status(socket.getInputStream()), 100, 1000);
        }
    }

    /** The status of the answer's first line; -1 when the connection closed or was reset first. */
    private static int status(InputStream in) {
        try {
            ByteArrayOutputStream line = new ByteArrayOutputStream();
            for (int b = in.read(); b >= 0 && b != '\n'; b = in.read()) {
                line.write(b);
            }
            Matcher status = Pattern.compile("^HTTP/1\\.1 (\\d{3})").matcher(line.toString(StandardCharsets.US_ASCII));
            return status.find() ? Integer.parseInt(status.group(1)) : -1;
        } catch (IOException e) {
            return -1;
        }
    }

    private static byte[] readAtMost(InputStream in, int bytes) {
        ByteArrayOutputStream read = new ByteArrayOutputStream();
        try {
            for (int b = in.read(); b >= 0 && read.size() < bytes; b = in.read()) {
                read.write(b);
            }
        } catch (IOException e) {
            // closed or reset: what came before is the answer
        }
        return read.toByteArray();
    }

    /** Heap in use right after a full collection: what the runner holds on to, not garbage yet to be collected. */
    private static long liveHeap(long pid) {
        jcmd(pid, "GC.run");
        Matcher used = Pattern.compile("generation\\s+total \\d+K, used (\\d+)K").matcher(jcmd(pid, "GC.heap_info"));
        long kilobytes = 0;
        while (used.find()) {
            kilobytes += Long.parseLong(used.group(1));
        }
        assertThat(kilobytes).as("heap figures from jcmd").isPositive();
        return kilobytes * 1024;
    }

    private static String jcmd(long pid, String command) {
        try {
            Process jcmd = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(), Long.toString(pid), command)
                    .redirectErrorStream(true).start();
            String output = new String(jcmd.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            jcmd.waitFor(30, TimeUnit.SECONDS);
            return output;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String rss(long pid) {
        try {
            return Files.readAllLines(Path.of("/proc/" + pid + "/status")).stream().filter(l -> l.startsWith("VmRSS")).findFirst()
                    .orElse("VmRSS unknown").replaceAll("\\s+", " ");
        } catch (IOException e) {
            return "VmRSS unknown";
        }
    }

    private static long size(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(file -> file.toFile().length()).sum();
        }
    }
}
