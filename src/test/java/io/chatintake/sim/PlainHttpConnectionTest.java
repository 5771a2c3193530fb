package io.chatintake.sim;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The benchmarks' hand-written client against the JDK's HTTP server on loopback: both answer framings, one connection. */
class PlainHttpConnectionTest {
    @Test
    void readsAnswersWithALengthAndChunkedOnOneKeptAliveConnection() throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        Set<Integer> clientPorts = ConcurrentHashMap.newKeySet();
        List<String> received = new CopyOnWriteArrayList<>();
        server.createContext("/", exchange -> {
            clientPorts.add(exchange.getRemoteAddress().getPort());
            String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            received.add(exchange.getRequestMethod() + " " + exchange.getRequestURI() + " " + exchange.getRequestHeaders().getFirst("X-Probe")
                    + " " + exchange.getRequestHeaders().getFirst("X-Left-Out") + " " + body);
            byte[] answer = ("echo " + body).getBytes(StandardCharsets.UTF_8);
            boolean chunked = exchange.getRequestURI().getPath().equals("/chunked");
            exchange.sendResponseHeaders(chunked ? 201 : 200, chunked ? 0 : answer.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(answer, 0, 3);
                out.flush();
                out.write(answer, 3, answer.length - 3);
            }
        });
        server.start();
        try {
            String base = "http://127.0.0.1:" + server.getAddress().getPort();
            Map<String, String> headers = new LinkedHashMap<>();
            headers.put("X-Probe", "p");
            headers.put("X-Left-Out", null);
            try (PlainHttpConnection fixed = new PlainHttpConnection(URI.create(base + "/fixed?a=1"), 5_000);
                 PlainHttpConnection chunked = new PlainHttpConnection(URI.create(base + "/chunked"), 5_000)) {
                for (int i = 0; i < 3; i++) {
                    assertThat(fixed.post("text/plain", headers, ("one " + i).getBytes(StandardCharsets.UTF_8)))
                            .isEqualTo(new PlainHttpConnection.Answer(200, "echo one " + i));
                    assertThat(chunked.post("text/plain", headers, ("two " + i).getBytes(StandardCharsets.UTF_8)))
                            .isEqualTo(new PlainHttpConnection.Answer(201, "echo two " + i));
                }
            }
            assertThat(received).contains("POST /fixed?a=1 p null one 0", "POST /chunked p null two 2").hasSize(6);
            assertThat(clientPorts).as("each client kept its one connection").hasSize(2);
        } finally {
            server.stop(0);
        }
    }
}
