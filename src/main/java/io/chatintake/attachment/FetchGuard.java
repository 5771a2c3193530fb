package io.chatintake.attachment;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import org.apache.hc.client5.http.DnsResolver;

/**
 * Where attachment URLs may point. A URL comes from whoever sent the message, so it could name
 * the runner's own network: only {@code https} is fetched, and a host whose addresses include a
 * loopback, private, link-local (cloud metadata) or unspecified one is refused. The check runs
 * as the connection's DNS resolver, so the addresses checked are the ones connected to (no second
 * lookup an attacker's DNS could answer differently), for every redirect too.
 * <p>
 * {@code attachments.allowed-hosts} lets private media hosts (and tests on loopback) through:
 * host names, addresses or CIDR blocks; {@code attachments.allow-http} lets plain {@code http}.
 */
final class FetchGuard implements DnsResolver {
    /** A URL this guard will not fetch; the message never quotes the URL, which may hold a signature. */
    static final class RefusedException extends UnknownHostException {
        RefusedException(String message) {
            super(message);
        }
    }

    private final boolean allowHttp;
    private final Set<String> hosts;
    private final List<AddressRange> ranges;

    FetchGuard(boolean allowHttp, Set<String> hosts, List<AddressRange> ranges) {
        this.allowHttp = allowHttp;
        this.hosts = Set.copyOf(hosts);
        this.ranges = List.copyOf(ranges);
    }

    static FetchGuard from(Settings settings) {
        Set<String> hosts = new TreeSet<>();
        List<AddressRange> ranges = new ArrayList<>();
        for (String entry : Arrays.stream(settings.get("attachments.allowed-hosts").orElse("").split(","))
                .map(String::trim).filter(e -> !e.isEmpty()).toList()) {
            if (AddressRange.looksLikeRange(entry)) {
                try {
                    ranges.add(AddressRange.parse(entry));
                } catch (IllegalArgumentException e) {
                    throw new ConfigurationException("attachments.allowed-hosts: " + e.getMessage(), e);
                }
            } else {
                hosts.add(entry.toLowerCase(Locale.ROOT));
            }
        }
        return new FetchGuard(settings.getBoolean("attachments.allow-http"), hosts, ranges);
    }

    /** The URL to request, if its scheme and host may be fetched at all; its addresses are checked on connecting. */
    URI check(String url) throws RefusedException {
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw new RefusedException("refused: the url is not a valid URI"); // the parser's message quotes it
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("https") && !(allowHttp && scheme.equals("http"))) {
            String shown = scheme.isEmpty() ? "no scheme" : "scheme '" + (scheme.length() > 16 ? scheme.substring(0, 16) : scheme) + "'";
            throw new RefusedException("refused: " + shown + " is not fetched (https only"
                    + (scheme.equals("http") ? "; attachments.allow-http lets http through)" : ")"));
        }
        if (uri.getHost() == null) {
            throw new RefusedException("refused: the url names no host");
        }
        return uri;
    }

    @Override
    public InetAddress[] resolve(String host) throws UnknownHostException {
        InetAddress[] addresses = InetAddress.getAllByName(host);
        if (hosts.contains(host.toLowerCase(Locale.ROOT))) {
            return addresses;
        }
        for (InetAddress address : addresses) {
            if (AddressRange.notPublic(address) && ranges.stream().noneMatch(range -> range.contains(address))) {
                throw new RefusedException("refused: " + host + " has the non-public address " + address.getHostAddress()
                        + " (attachments.allowed-hosts lets private media hosts through)");
            }
        }
        return addresses;
    }

    @Override
    public String resolveCanonicalHostname(String host) {
        return host; // asked only for Kerberos, which attachment downloads never use
    }

    /** The refusal behind a failed request, if a refusal it was. */
    static RefusedException refusal(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof RefusedException refused) {
                return refused;
            }
        }
        return null;
    }
}
