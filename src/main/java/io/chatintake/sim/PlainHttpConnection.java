package io.chatintake.sim;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;

/**
 * One kept-alive HTTP/1.1 connection, requests written and answers read by hand: a load
 * generator's client. A provider's sender runs on its own machines; on a benchmark's one machine
 * the JDK client's own work per request (a selector thread per client, futures, header
 * validation) would take CPU from the receiver it measures. Not thread-safe: one request at a
 * time.
 */
public final class PlainHttpConnection implements AutoCloseable {
    /** The status and body of an answer. */
    public record Answer(int status, String body) {
    }

    private final String path;
    private final String host;
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    public PlainHttpConnection(URI endpoint, int timeoutMillis) throws IOException {
        int port = endpoint.getPort() < 0 ? 80 : endpoint.getPort();
        this.path = endpoint.getRawPath() + (endpoint.getRawQuery() == null ? "" : "?" + endpoint.getRawQuery());
        this.host = endpoint.getHost() + ":" + port;
        this.socket = new Socket();
        socket.setTcpNoDelay(true);
        socket.connect(new InetSocketAddress(endpoint.getHost(), port), timeoutMillis);
        socket.setSoTimeout(timeoutMillis);
        this.in = new BufferedInputStream(socket.getInputStream(), 8192);
        this.out = new BufferedOutputStream(socket.getOutputStream(), 8192);
    }

    /** POSTs the body with these headers (a null value leaves the header out) and reads the whole answer. */
    public Answer post(String contentType, Map<String, String> headers, byte[] body) throws IOException {
        StringBuilder head = new StringBuilder(256).append("POST ").append(path).append(" HTTP/1.1\r\nHost: ").append(host)
                .append("\r\nContent-Type: ").append(contentType).append("\r\nContent-Length: ").append(body.length).append("\r\n");
        headers.forEach((name, value) -> {
            if (value != null) {
                head.append(name).append(": ").append(value).append("\r\n");
            }
        });
        out.write(head.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
        out.write(body);
        out.flush();
        return readAnswer();
    }

    private Answer readAnswer() throws IOException {
        String statusLine = readLine();
        String[] parts = statusLine.split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
            throw new IOException("not an HTTP/1.x status line: " + statusLine);
        }
        int status = Integer.parseInt(parts[1]);
        long length = -1;
        boolean chunked = false;
        for (String line = readLine(); !line.isEmpty(); line = readLine()) {
            int colon = line.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String name = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = line.substring(colon + 1).trim();
            if (name.equals("content-length")) {
                length = Long.parseLong(value);
            } else if (name.equals("transfer-encoding")) {
                chunked = value.toLowerCase(Locale.ROOT).contains("chunked");
            }
        }
        // platform-http answers a route's String body chunked (/hello) and the webhook routes' with a length.
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if (chunked) {
            for (int size = chunkSize(); size > 0; size = chunkSize()) {
                body.write(readExactly(size));
                readLine();
            }
            for (String trailer = readLine(); !trailer.isEmpty(); trailer = readLine()) {
                // trailers carry nothing this client needs
            }
        } else if (length >= 0) {
            body.write(readExactly((int) length));
        } else {
            throw new IOException("an answer with neither Content-Length nor chunked encoding cannot be kept alive");
        }
        return new Answer(status, body.toString(StandardCharsets.UTF_8));
    }

    private int chunkSize() throws IOException {
        return Integer.parseInt(readLine().split(";", 2)[0].trim(), 16);
    }

    private byte[] readExactly(int length) throws IOException {
        byte[] bytes = in.readNBytes(length);
        if (bytes.length < length) {
            throw new EOFException("the answer ended after " + bytes.length + " of " + length + " bytes");
        }
        return bytes;
    }

    private String readLine() throws IOException {
        StringBuilder line = new StringBuilder();
        for (int b = in.read(); b != '\n'; b = in.read()) {
            if (b < 0) {
                throw new EOFException("the connection closed mid-answer");
            }
            if (b != '\r') {
                line.append((char) b);
            }
        }
        return line.toString();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
