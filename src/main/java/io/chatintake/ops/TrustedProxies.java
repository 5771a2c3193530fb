package io.chatintake.ops;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.net.SocketAddress;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;

/**
 * The proxies whose {@code X-Forwarded-For} and {@code X-Forwarded-Proto} the status page believes
 * ({@code chat-intake.status.trusted-proxies}: addresses or CIDR ranges). From anyone else those
 * headers are what a client chose to write, so they are ignored: the client is the connection's
 * peer, and the request came over TLS only if this server's own connection did.
 */
final class TrustedProxies {
    static final String KEY = "chat-intake.status.trusted-proxies";

    private final List<Range> ranges;

    private TrustedProxies(List<Range> ranges) {
        this.ranges = ranges;
    }

    static TrustedProxies from(Settings settings) {
        List<Range> ranges = new ArrayList<>();
        for (String entry : settings.get(KEY).orElse("").split(",")) {
            if (!entry.isBlank()) {
                ranges.add(Range.parse(entry.trim()));
            }
        }
        return new TrustedProxies(List.copyOf(ranges));
    }

    /** The client's address: the connection's peer, or the nearest hop a trusted proxy names. */
    String client(HttpServerRequest request) {
        String peer = peer(request);
        String forwarded = request.getHeader("X-Forwarded-For");
        if (forwarded == null || !trusts(peer)) {
            return peer;
        }
        // The proxy appends the address it saw last; whatever stands before it, the client wrote.
        String[] hops = forwarded.split(",");
        String nearest = hops[hops.length - 1].trim();
        return nearest.isEmpty() || nearest.length() > 64 ? peer : nearest;
    }

    /** Whether the browser's request came over TLS: to this server, or to a trusted proxy that says so. */
    boolean overTls(HttpServerRequest request) {
        return request.isSSL() || ("https".equalsIgnoreCase(request.getHeader("X-Forwarded-Proto")) && trusts(peer(request)));
    }

    private static String peer(HttpServerRequest request) {
        SocketAddress address = request.remoteAddress();
        return address == null || address.host() == null ? "unknown" : address.host();
    }

    boolean trusts(String address) {
        if (ranges.isEmpty()) {
            return false;
        }
        try {
            // A literal address only: never a name to resolve.
            if (!address.matches("[0-9a-fA-F:.]+")) {
                return false;
            }
            byte[] bytes = InetAddress.getByName(address).getAddress();
            return ranges.stream().anyMatch(r -> r.contains(bytes));
        } catch (UnknownHostException e) {
            return false;
        }
    }

    private record Range(byte[] network, int prefix) {
        static Range parse(String text) {
            String[] parts = text.split("/", 2);
            try {
                if (!parts[0].matches("[0-9a-fA-F:.]+")) {
                    throw new UnknownHostException(parts[0]);
                }
                byte[] network = InetAddress.getByName(parts[0]).getAddress();
                int prefix = parts.length == 2 ? Integer.parseInt(parts[1]) : network.length * 8;
                if (prefix < 0 || prefix > network.length * 8) {
                    throw new NumberFormatException(parts[1]);
                }
                return new Range(network, prefix);
            } catch (UnknownHostException | NumberFormatException e) {
                throw new ConfigurationException(Settings.envName(KEY) + " (" + KEY + "): '" + text
                        + "' is not an IP address or CIDR range (e.g. 10.0.0.0/8, 127.0.0.1)");
            }
        }

        boolean contains(byte[] address) {
            if (address.length != network.length) {
                return false;
            }
            int drop = network.length * 8 - prefix;
            return new BigInteger(1, address).shiftRight(drop).equals(new BigInteger(1, network).shiftRight(drop));
        }
    }
}
